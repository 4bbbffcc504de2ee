"""The nemesis seam (Jepsen's small protocol): setup, invoke(fault op) → completion, heal,
teardown. ``NemesisRunner`` owns the guarantees: every op is an event before and after, a
fault command that fails is recorded as ``info`` and the run goes on, heal runs at setup, at the
end of every schedule and in ``finally``, and nothing outside the inventory is ever targeted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness.cluster import Cluster
    from history import EventWriter


@dataclass(slots=True)
class FaultOp:
    f: str  # fault name: "isolate", "partition", "kill", ...
    phase: str  # "start" | "stop"
    targets: list[str] = field(default_factory=list)  # node names (resolved from a target spec)
    params: dict[str, Any] = field(default_factory=dict)


class Nemesis(Protocol):
    fs: frozenset[str]  # the fault names this nemesis handles

    def setup(self, cluster: Cluster) -> None: ...

    def invoke(self, op: FaultOp) -> dict[str, Any]: ...

    def heal(self) -> dict[str, Any]: ...

    def teardown(self) -> None: ...


class TargetError(ValueError):
    pass


class NemesisRunner:
    def __init__(self, cluster: Cluster, events: EventWriter, nemeses: list[Nemesis]) -> None:
        self.cluster = cluster
        self.events = events
        self.nemeses = nemeses
        self.by_f: dict[str, Nemesis] = {}
        for n in nemeses:
            for f in n.fs:
                self.by_f[f] = n
        self.active: list[FaultOp] = []
        self._pools: Any = None  # nemesis.targets.Pools over the cluster, made on first use

    def resolve(self, op: FaultOp) -> FaultOp:
        """Ops that carry a target spec (``params['spec']``) and no targets get their targets now."""
        if op.targets or "spec" not in op.params:
            return op
        from nemesis.targets import cluster_pools, resolve_op

        if self._pools is None:
            self._pools = cluster_pools(self.cluster)
        roles = {f: r for n in self.nemeses for f, r in getattr(n, "default_roles", {}).items()}
        return resolve_op(op, self._pools, roles)

    def setup(self) -> None:
        for n in self.nemeses:
            n.setup(self.cluster)
        self.heal("setup")

    def invoke(self, op: FaultOp) -> bool:
        if op.phase == "start":
            try:
                op = self.resolve(op)
            except TargetError as e:  # e.g. no controller right now: recorded, the run goes on
                self.events.emit(op.f, type="info", process="nemesis", stage="error", phase=op.phase,
                                 targets=[], error=str(e), **op.params)
                return False
        known = {node.name for node in self.cluster.inv.nodes}
        outside = [t for t in op.targets if t not in known]
        if outside:
            raise TargetError(f"{op.f}: targets {outside} are not in the inventory")
        nemesis = self.by_f.get(op.f)
        if nemesis is None:
            raise TargetError(f"no nemesis handles fault {op.f!r} (known: {', '.join(sorted(self.by_f))})")
        base = {"phase": op.phase, "targets": op.targets, **op.params}
        self.events.emit(op.f, type="info", process="nemesis", stage="invoke", **base)
        try:
            detail = nemesis.invoke(op)
        except Exception as e:  # noqa: BLE001 - a failed fault is recorded, the run goes on
            self.events.emit(op.f, type="info", process="nemesis", stage="error", error=repr(e), **base)
            return False
        self.events.emit(op.f, type="info", process="nemesis", stage="complete", **{**base, **(detail or {})})
        if op.phase == "start":
            if not (detail or {}).get("instant"):
                self.active.append(op)
        else:
            self.active = [a for a in self.active
                           if not (a.f == op.f and (a.targets == op.targets or not op.targets))]
        return True

    def heal(self, reason: str) -> None:
        """Undo every fault; errors are recorded and the other nemeses still heal."""
        self.events.emit("heal", type="info", process="nemesis", stage="invoke", phase="stop", reason=reason)
        details: dict[str, Any] = {}
        for n in self.nemeses:
            try:
                details.update(n.heal() or {})
            except Exception as e:  # noqa: BLE001
                details[f"error_{type(n).__name__}"] = repr(e)
        self.active.clear()
        self.events.emit("heal", type="info", process="nemesis", stage="complete", phase="stop", reason=reason,
                         **details)

    def teardown(self) -> None:
        try:
            self.heal("teardown")
        finally:
            for n in self.nemeses:
                try:
                    n.teardown()
                except Exception:  # noqa: BLE001, S110 - teardown never raises
                    pass
