"""Link faults through Toxiproxy: cut chosen links (black-hole both directions, connections kept
open like a real partition) and heal by removing every toxic."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nemesis.base import FaultOp

if TYPE_CHECKING:
    from harness.cluster import Cluster


class LinkNemesis:
    fs = frozenset({"isolate"})

    def __init__(self) -> None:
        self.cluster: Cluster | None = None

    def setup(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        assert self.cluster is not None and self.cluster.links is not None
        links = self.cluster.links
        if op.f == "isolate":
            # A broker loses every ZooKeeper link (its own proxies); the rest of the cluster is untouched.
            names = [n for t in op.targets for n in links.links_between(src=t, kind="agent-zk")]
            if op.phase == "start":
                links.cut(names, stream=op.params.get("stream", "both"))
            else:
                links.heal()
            return {"links": names}
        raise ValueError(f"LinkNemesis cannot do {op.f}")

    def heal(self) -> dict[str, Any]:
        if self.cluster is None or self.cluster.links is None:
            return {}
        return {"toxics_removed": self.cluster.links.heal()}

    def teardown(self) -> None:
        pass
