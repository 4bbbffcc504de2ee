"""Process faults over the Component protocol, for ZooKeeper servers (``zk<N>``) and broker
agents (``b<N>``).

* ``kill``: SIGKILL (``start``); ``stop`` starts them again.
* ``pause``: SIGSTOP the process group (``start``); ``stop`` sends SIGCONT.
* ``shutdown``: SIGTERM with a grace period, a clean stop (``start``); ``stop`` starts them again.
* ``bounce``: SIGTERM then start at once (instant: ``start`` only).
* ``fast_bounce``: SIGKILL then start at once (instant).
* ``wipe``: SIGKILL, delete the component's data (an agent's replica logs, a server's snapshots
  and transaction logs), start (instant). A component that keeps no data refuses it.

``stop`` with no targets undoes the fault everywhere it is active. ``heal()`` sends SIGCONT to every
component and restarts what this nemesis took down — as long as it is still part of the cluster
(``cluster.components()``): agents the run engine has retired stay stopped.
"""

from __future__ import annotations

from typing import Any

from base.components import Component, ProcState
from base.remote import on_nodes
from nemesis.ops import FaultOp
from nemesis.registry import faults_of, instant_faults

PROCESS_FAULTS = faults_of("process")
INSTANT = PROCESS_FAULTS & instant_faults()


class ProcessNemesis:
    fs = PROCESS_FAULTS

    def __init__(self) -> None:
        self.cluster: Any = None
        self.down: set[str] = set()  # killed or shut down by us: heal restarts them
        self.paused: set[str] = set()

    def setup(self, cluster: Any) -> None:
        self.cluster = cluster

    def _components(self) -> dict[str, Component]:
        return self.cluster.components() if self.cluster is not None else {}

    def _component(self, name: str) -> Component:
        c = self._components().get(name)
        if c is None:
            raise ValueError(f"{name}: no ZooKeeper server or started agent by that name")
        return c

    def _start(self, name: str) -> str:
        c = self._component(name)
        self.down.discard(name)
        if c.state() is not ProcState.STOPPED:
            return "running"
        c.start()
        return "started"

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if not op.targets and op.phase == "start":
            raise ValueError(f"{op.f}: no targets")
        comps = {t: self._component(t) for t in op.targets}  # every name checked before anything is done
        out: dict[str, Any] = {}
        if op.phase == "stop":
            if op.f in INSTANT:
                return {"instant": True}
            if op.f == "pause":
                for t in op.targets or sorted(self.paused):
                    out[t] = bool(self._component(t).resume())
                    self.paused.discard(t)
            else:  # kill, shutdown
                for t in op.targets or sorted(self.down):
                    out[t] = self._start(t)
            return {"result": out}
        for t, c in comps.items():
            if op.f == "kill":
                self.down.add(t)
                out[t] = bool(c.kill())
            elif op.f == "shutdown":
                self.down.add(t)
                out[t] = bool(c.stop())
            elif op.f == "pause":
                self.paused.add(t)
                out[t] = bool(c.pause())
            else:  # bounce, fast_bounce, wipe: down and up again
                self.down.add(t)
                c.kill() if op.f in ("fast_bounce", "wipe") else c.stop()
                if op.f == "wipe":
                    c.wipe()  # Unsupported leaves it down: heal restarts it
                c.start()
                self.down.discard(t)
                out[t] = "wiped" if op.f == "wipe" else "restarted"
        return {"result": out, **({"instant": True} if op.f in INSTANT else {})}

    def heal(self) -> dict[str, Any]:
        comps = self._components()
        names = list(comps)
        sent = on_nodes([comps[n] for n in names], lambda c: _quietly(c.resume))
        resumed = [n for n, ok in zip(names, sent, strict=True) if ok]
        self.paused.clear()
        restarted, errors = [], {}
        for name in sorted(self.down):
            if name not in comps:  # retired from the cluster (the run's agents after it ended)
                self.down.discard(name)
                continue
            try:
                if self._start(name) == "started":
                    restarted.append(name)
            except Exception as e:  # noqa: BLE001 - keep healing the others
                errors[name] = repr(e)
        out: dict[str, Any] = {"sigcont": resumed, "restarted": restarted}
        if errors:
            out["restart_errors"] = errors
        return out

    def teardown(self) -> None:
        pass


def _quietly(fn: Any) -> bool:
    try:
        return bool(fn())
    except Exception:  # noqa: BLE001 - a component that cannot be reached is healed by its restart
        return False
