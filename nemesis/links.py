"""Link faults through Toxiproxy, over the link graph (``b1->zk2`` agent→ZooKeeper, ``b1->b2``
agent→agent).

Faults (``FaultOp.f``), each ``start`` adds toxics and ``stop`` removes the toxics that fault added
(``stop`` with no targets undoes it everywhere):

* ``isolate``: a broker loses every ZooKeeper link (black hole, connections stay open).
* ``cut``: the links named in param ``links`` (``["b2->zk1", "b2->zk3"]``) lose their traffic,
  ``stream`` both (default), upstream or downstream; ``stop`` heals them (all cut links when
  ``links`` is not given). A ``stop`` of ``isolate`` leaves them cut, so "cut the links that stay
  cut, then stop the isolation" is a partial heal.
* ``partition``: a grudge (``nemesis.grudges``) cut onto the links. params: ``grudge``
  (isolate | halves | bridge | majorities-ring), ``direction`` (both | one-way); targets as
  ``grudges.build`` reads them. The workload clients (node ``client``: their links ``client->zk<M>``
  and ``client->b<N>``) stand with the nodes that are not targeted, as a control node outside the
  cut-off side would: an isolated or minority half loses its clients too; a bridge or a ring
  leaves them every link (they are no node of it).
* ``latency``: params ``latency_ms`` (default 200), ``jitter_ms`` (default 50).
* ``bandwidth``: params ``rate_kb`` (KB/s, default 1).
* ``reset_peer``: connections are reset (TCP RST) after ``timeout_ms`` (default 0: at once).
* ``slow_close``: closing is delayed by ``delay_ms`` (default 1000).

The shaping faults hit every link touching a target (both directions); param ``kind`` limits
them to ``agent-zk`` or ``agent-agent`` links. ``heal()`` re-enables every proxy and removes every
toxic (Toxiproxy's ``/reset``).
"""

from __future__ import annotations

from typing import Any

from base.components.toxiproxy import LinkNet
from nemesis.grudges import COMPONENT_GRUDGES, LinkRef, build, grudge_cuts
from nemesis.ops import FaultOp
from nemesis.registry import faults_of
from nemesis.targets import CLIENT_NODE

# fault → (toxic type, default attributes from params)
SHAPING: dict[str, tuple[str, dict[str, tuple[str, int]]]] = {
    "latency": ("latency", {"latency": ("latency_ms", 200), "jitter": ("jitter_ms", 50)}),
    "bandwidth": ("bandwidth", {"rate": ("rate_kb", 1)}),
    "reset_peer": ("reset_peer", {"timeout": ("timeout_ms", 0)}),
    "slow_close": ("slow_close", {"delay": ("delay_ms", 1000)}),
}
LINK_FAULTS = faults_of("link")
STREAMS = {"both": ("upstream", "downstream"), "upstream": ("upstream",), "downstream": ("downstream",)}


class LinkNemesis:
    fs = LINK_FAULTS

    def __init__(self) -> None:
        self.cluster: Any = None

    def setup(self, cluster: Any) -> None:
        self.cluster = cluster

    @property
    def links(self) -> LinkNet:
        assert self.cluster is not None and self.cluster.links is not None, "LinkNemesis: no Toxiproxy links"
        return self.cluster.links

    def _add(self, names: list[str], prefix: str, type_: str, attributes: dict[str, Any],
             stream: str = "both") -> None:
        if stream not in STREAMS:
            raise ValueError(f"stream must be one of {', '.join(STREAMS)}, not {stream!r}")
        for name in names:
            for st in STREAMS[stream]:
                self.links.add_toxic(name, f"{prefix}_{st}", type_, st, attributes)

    def _refs(self) -> list[LinkRef]:
        return [LinkRef(ln.name, ln.src, ln.dst) for ln in self.links.links.values()]

    def _touching(self, targets: list[str], kind: str | None) -> list[str]:
        return [ln.name for ln in self.links.links.values()
                if (ln.src in targets or ln.dst in targets) and (kind is None or ln.kind == kind)]

    # -- the protocol -----------------------------------------------------------------------
    def invoke(self, op: FaultOp) -> dict[str, Any]:
        remove = self.links.remove_toxics
        if op.f == "isolate":
            names = [n for t in op.targets for n in self.links.links_between(src=t, kind="agent-zk")]
            if op.phase == "start":
                self._add(names, "cut", "timeout", {"timeout": 0}, op.params.get("stream", "both"))
                return {"links": names}
            return {"links": names, "toxics_removed": remove("cut_", names or None)}
        if op.f == "cut":
            names = list(op.params.get("links") or [])
            unknown = [n for n in names if n not in self.links.links]
            if unknown or (op.phase == "start" and not names):
                raise ValueError(f"cut: params.links must name links of this cluster, not {unknown or names}")
            if op.phase == "start":
                self._add(names, "linkcut", "timeout", {"timeout": 0}, op.params.get("stream", "both"))
                return {"links": names}
            return {"links": names, "toxics_removed": remove("linkcut_", names or None)}
        if op.f == "partition":
            if op.phase == "stop":
                return {"toxics_removed": remove("partition_")}
            kind = op.params.get("grudge", "isolate")
            nodes = [n.name for n in self.cluster.inv.nodes] + ([CLIENT_NODE] if kind in COMPONENT_GRUDGES else [])
            grudge = build(kind, op.targets, nodes, op.params.get("direction", "both"))
            cuts = grudge_cuts(grudge, self._refs())
            for link, streams in cuts.items():
                for st in sorted(streams):
                    self._add([link], "partition", "timeout", {"timeout": 0}, st)
            return {"grudge_map": {k: sorted(v) for k, v in sorted(grudge.items()) if v},
                    "cuts": {k: sorted(v) for k, v in cuts.items()}}
        if op.f in SHAPING:
            type_, attrs = SHAPING[op.f]
            kind = op.params.get("kind")
            names = self._touching(op.targets, kind) if op.targets else None
            if op.phase == "stop":
                return {"toxics_removed": remove(f"{op.f}_", names)}
            attributes = {a: int(op.params.get(p, d)) for a, (p, d) in attrs.items()}
            self._add(names or [], op.f, type_, attributes)
            return {"links": names or [], **attributes}
        raise ValueError(f"LinkNemesis cannot do {op.f}")

    def heal(self) -> dict[str, Any]:
        if self.cluster is None or self.cluster.links is None:
            return {}
        return {"toxics_removed": self.cluster.links.heal()}

    def teardown(self) -> None:
        pass
