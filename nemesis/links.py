"""Link faults through Toxiproxy, over the link graph (``b1->zk2`` agent→ZooKeeper, ``b1->b2``
agent→agent).

Faults (``FaultOp.f``), each ``start`` adds toxics and ``stop`` removes the toxics that fault added
(``stop`` with no targets undoes it everywhere):

* ``isolate``: a broker loses every ZooKeeper link (black hole, connections stay open).
* ``partition``: a grudge (``nemesis.grudges``) cut onto the links. params: ``grudge``
  (isolate | halves | bridge | majorities-ring), ``direction`` (both | one-way); targets as
  ``grudges.build`` reads them.
* ``latency``: params ``latency_ms`` (default 200), ``jitter_ms`` (default 50).
* ``bandwidth``: params ``rate_kb`` (KB/s, default 1).
* ``reset_peer``: connections are reset (TCP RST) after ``timeout_ms`` (default 0: at once).
* ``slow_close``: closing is delayed by ``delay_ms`` (default 1000).

The shaping faults hit every link touching a target (both directions); param ``kind`` limits
them to ``agent-zk`` or ``agent-agent`` links. ``heal()`` re-enables every proxy and removes every
toxic (Toxiproxy's ``/reset``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import requests

from nemesis.base import FaultOp
from nemesis.grudges import LinkRef, build, grudge_cuts

if TYPE_CHECKING:
    from harness.cluster import Cluster
    from harness.toxiproxy import LinkNet

# fault → (toxic type, default attributes from params)
SHAPING: dict[str, tuple[str, dict[str, tuple[str, int]]]] = {
    "latency": ("latency", {"latency": ("latency_ms", 200), "jitter": ("jitter_ms", 50)}),
    "bandwidth": ("bandwidth", {"rate": ("rate_kb", 1)}),
    "reset_peer": ("reset_peer", {"timeout": ("timeout_ms", 0)}),
    "slow_close": ("slow_close", {"delay": ("delay_ms", 1000)}),
}
LINK_FAULTS = frozenset({"isolate", "partition", *SHAPING})


class LinkNemesis:
    fs = LINK_FAULTS

    def __init__(self) -> None:
        self.cluster: Cluster | None = None

    def setup(self, cluster: Cluster) -> None:
        self.cluster = cluster

    @property
    def links(self) -> LinkNet:
        assert self.cluster is not None and self.cluster.links is not None, "LinkNemesis: no Toxiproxy links"
        return self.cluster.links

    # -- toxiproxy HTTP (no shared class state) ------------------------------------------
    def _url(self, path: str) -> str:
        server = self.links.server
        return f"http://{server.host}:{server.port}{path}"

    def _toxics(self, link: str) -> list[str]:
        r = requests.get(self._url(f"/proxies/{link}/toxics"), timeout=5)
        if r.status_code == 404:
            return []
        r.raise_for_status()
        return [t["name"] for t in r.json()]

    def _add(self, link: str, toxic: str, type_: str, stream: str, attributes: dict[str, Any]) -> None:
        if toxic in self._toxics(link):
            return
        r = requests.post(self._url(f"/proxies/{link}/toxics"), timeout=5, json={
            "name": toxic, "type": type_, "stream": stream, "toxicity": 1.0, "attributes": attributes})
        r.raise_for_status()

    def _remove(self, prefix: str, links: list[str] | None = None) -> int:
        removed = 0
        for link in links if links is not None else list(self.links.links):
            for toxic in self._toxics(link):
                if toxic.startswith(prefix):
                    requests.delete(self._url(f"/proxies/{link}/toxics/{toxic}"), timeout=5).raise_for_status()
                    removed += 1
        return removed

    def _refs(self) -> list[LinkRef]:
        return [LinkRef(ln.name, ln.src, ln.dst) for ln in self.links.links.values()]

    def _touching(self, targets: list[str], kind: str | None) -> list[str]:
        return [ln.name for ln in self.links.links.values()
                if (ln.src in targets or ln.dst in targets) and (kind is None or ln.kind == kind)]

    # -- the protocol -----------------------------------------------------------------------
    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if op.f == "isolate":
            names = [n for t in op.targets for n in self.links.links_between(src=t, kind="agent-zk")]
            if op.phase == "start":
                stream = op.params.get("stream", "both")
                for st in ("upstream", "downstream") if stream == "both" else (stream,):
                    for name in names:
                        self._add(name, f"cut_{st}", "timeout", st, {"timeout": 0})
                return {"links": names}
            return {"links": names, "toxics_removed": self._remove("cut_", names or None)}
        if op.f == "partition":
            if op.phase == "stop":
                return {"toxics_removed": self._remove("partition_")}
            nodes = [n.name for n in self.cluster.inv.nodes]  # type: ignore[union-attr]
            grudge = build(op.params.get("grudge", "isolate"), op.targets, nodes,
                           op.params.get("direction", "both"))
            cuts = grudge_cuts(grudge, self._refs())
            for link, streams in cuts.items():
                for st in sorted(streams):
                    self._add(link, f"partition_{st}", "timeout", st, {"timeout": 0})
            return {"grudge_map": {k: sorted(v) for k, v in sorted(grudge.items()) if v},
                    "cuts": {k: sorted(v) for k, v in cuts.items()}}
        if op.f in SHAPING:
            type_, attrs = SHAPING[op.f]
            kind = op.params.get("kind")
            names = self._touching(op.targets, kind) if op.targets else None
            if op.phase == "stop":
                return {"toxics_removed": self._remove(f"{op.f}_", names)}
            attributes = {a: int(op.params.get(p, d)) for a, (p, d) in attrs.items()}
            for name in names or []:
                for st in ("upstream", "downstream"):
                    self._add(name, f"{op.f}_{st}", type_, st, attributes)
            return {"links": names or [], **attributes}
        raise ValueError(f"LinkNemesis cannot do {op.f}")

    def heal(self) -> dict[str, Any]:
        if self.cluster is None or self.cluster.links is None:
            return {}
        return {"toxics_removed": self.cluster.links.heal()}

    def teardown(self) -> None:
        pass
