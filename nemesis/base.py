"""The nemesis seam (Jepsen's small protocol): setup, invoke(fault op) → completion, heal,
teardown. ``NemesisRunner`` owns the guarantees: every op is an event before and after, a
fault command that fails is recorded as ``info`` and the run goes on, heal runs at setup, at the
end of every schedule and in ``finally``, and nothing outside the inventory is ever targeted.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from history import EventWriter
from nemesis.ops import Completion, FaultOp, TargetError
from nemesis.registry import roles
from nemesis.targets import Pools, cluster_pools, needs_links, resolve_op

__all__ = ["Completion", "FaultOp", "Nemesis", "NemesisRunner", "TargetError"]


class Nemesis(Protocol):
    fs: frozenset[str]  # the fault names this nemesis handles

    def setup(self, cluster: Any) -> None: ...

    def invoke(self, op: FaultOp) -> dict[str, Any]: ...

    def heal(self) -> dict[str, Any]: ...

    def teardown(self) -> None: ...


# A heal's report entries that are precautions, not undoing: the process nemesis sends SIGCONT to
# every component whether or not one was paused (a pause is an active fault until its stop).
PRECAUTIONS = frozenset({"sigcont"})


def undid_something(details: dict[str, Any]) -> bool:
    """Whether the nemeses' heal reports show anything undone: a count above zero, a non-empty list
    (toxics, firewall tables, zkproxy rules, released hooks, restarted processes) or an error (which
    may have left something half-undone, so it counts)."""
    return any(v for k, v in details.items() if k not in PRECAUTIONS)


class NemesisRunner:
    """Runs fault ops against ``cluster`` (anything with ``inv.nodes``; nemeses get it at setup).
    ``pools`` resolves target specs; by default it is made over the live cluster on first use."""

    def __init__(self, cluster: Any, events: EventWriter, nemeses: list[Nemesis], pools: Pools | None = None) -> None:
        self.cluster = cluster
        self.events = events
        self.nemeses = nemeses
        self.by_f: dict[str, Nemesis] = {}
        for n in nemeses:
            for f in n.fs:
                self.by_f[f] = n
        self.active: list[FaultOp] = []
        self._pools = pools
        # Wall time the last fault ended (a completed stop, an instant fault, a heal that undid
        # something); None before any. The run engine's recovery wait counts from it.
        self.fault_ended_at: float | None = None
        self._instant_since_stop = False  # an instant fault ends nothing the checkers can time from

    def resolve(self, op: FaultOp) -> FaultOp:
        """Ops that carry a target spec (``params['spec']``) and no targets get their targets now, and
        ``cut`` links a dynamic far end (``b2->zk-followers``, ``nemesis.targets.resolve_links``)."""
        if (op.targets or "spec" not in op.params) and not needs_links(op):
            return op
        if self._pools is None:
            self._pools = cluster_pools(self.cluster)
        return resolve_op(op, self._pools, roles())

    def setup(self) -> None:
        for n in self.nemeses:
            n.setup(self.cluster)
        self.heal("setup")

    def invoke(self, op: FaultOp) -> Completion:
        if op.phase == "start":
            try:
                op = self.resolve(op)
            except TargetError as e:  # e.g. no controller right now: recorded, the run goes on
                self.events.emit(op.f, type="info", process="nemesis", stage="error", phase=op.phase,
                                 targets=[], error=str(e), **op.params)
                return Completion(op, False, {"error": str(e)})
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
            detail = nemesis.invoke(op) or {}
        except Exception as e:  # noqa: BLE001 - a failed fault is recorded, the run goes on
            self.events.emit(op.f, type="info", process="nemesis", stage="error", error=repr(e), **base)
            return Completion(op, False, {"error": repr(e)})
        self.events.emit(op.f, type="info", process="nemesis", stage="complete", **{**base, **detail})
        if op.phase == "start":
            if not (detail or {}).get("instant"):
                self.active.append(op)
            else:  # done at once, but its effects (a restarted process's sessions) settle from now
                self.fault_ended_at = time.time()
                self._instant_since_stop = True
        else:
            self.fault_ended_at = time.time()
            self._instant_since_stop = False
            self.active = [a for a in self.active
                           if not (a.f == op.f and (a.targets == op.targets or not op.targets))]
        return Completion(op, True, detail)

    def heal(self, reason: str) -> bool:
        """Undo every fault; errors are recorded and the other nemeses still heal. Returns whether it
        ended anything (a fault was active, an instant fault came after the last stop, or a nemesis
        reports undoing something); one that did not is recorded with ``noop: true``
        (docs/events.md): the liveness window then counts from the fault that did end last. The
        faults still active are recorded as ``ended``, so that the heal counts as their end."""
        self.events.emit("heal", type="info", process="nemesis", stage="invoke", phase="stop", reason=reason)
        was_active = bool(self.active) or self._instant_since_stop
        ended = sorted({a.f for a in self.active})
        details: dict[str, Any] = {}
        for n in self.nemeses:
            try:
                details.update(n.heal() or {})
            except Exception as e:  # noqa: BLE001
                details[f"error_{type(n).__name__}"] = repr(e)
        self.active.clear()
        self._instant_since_stop = False
        undid = was_active or undid_something(details)
        self.events.emit("heal", type="info", process="nemesis", stage="complete", phase="stop", reason=reason,
                         **details, **({"ended": ended} if ended else {}), **({} if undid else {"noop": True}))
        if undid:
            self.fault_ended_at = time.time()
        return undid

    def teardown(self) -> None:
        try:
            self.heal("teardown")
        finally:
            for n in self.nemeses:
                try:
                    n.teardown()
                except Exception:  # noqa: BLE001, S110 - teardown never raises
                    pass
