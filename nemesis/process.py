"""Process faults over SSH, for ZooKeeper servers (``zk<N>``) and broker agents (``b<N>``).

* ``kill``: SIGKILL (``start``); ``stop`` starts them again.
* ``pause``: SIGSTOP the process group (``start``); ``stop`` sends SIGCONT.
* ``shutdown``: SIGTERM with a grace period, a clean stop (``start``); ``stop`` starts them again.
* ``bounce``: SIGTERM then start at once (instant: ``start`` only).
* ``fast_bounce``: SIGKILL then start at once (instant).
* ``wipe``: brokers only: SIGKILL, empty the agent's data dir, start (instant).

``stop`` with no targets undoes the fault everywhere it is active. ``heal()`` sends SIGCONT to every
process it knows and restarts everything this nemesis took down (and nothing else).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nemesis.base import FaultOp

if TYPE_CHECKING:
    from harness.cluster import AgentProcess, Cluster
    from harness.zookeeper import ZooKeeperNode

PROCESS_FAULTS = frozenset({"kill", "pause", "shutdown", "bounce", "fast_bounce", "wipe"})
INSTANT = frozenset({"bounce", "fast_bounce", "wipe"})


class ProcessNemesis:
    fs = PROCESS_FAULTS
    default_roles = {"wipe": "broker"}

    def __init__(self) -> None:
        self.cluster: Cluster | None = None
        self.down: set[str] = set()  # killed or shut down by us: heal restarts them
        self.paused: set[str] = set()

    def setup(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def _proc(self, name: str) -> AgentProcess | ZooKeeperNode:
        c = self.cluster
        assert c is not None
        if c.ensemble is not None:
            for node in c.ensemble.nodes:
                if node.member.name == name:
                    return node
        for agent in c.agents.values():
            if agent.node.name == name:
                return agent
        raise ValueError(f"{name}: no ZooKeeper server or started agent by that name")

    def _all_names(self) -> list[str]:
        c = self.cluster
        if c is None:
            return []
        zks = [n.member.name for n in c.ensemble.nodes] if c.ensemble is not None else []
        return zks + [a.node.name for a in c.agents.values()]

    def _start(self, name: str) -> str:
        proc = self._proc(name)
        if proc.running():
            self.down.discard(name)
            return "running"
        proc.start()
        self.down.discard(name)
        return "started"

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if not op.targets and op.phase == "start":
            raise ValueError(f"{op.f}: no targets")
        procs = {t: self._proc(t) for t in op.targets}  # every name checked before anything is done
        out: dict[str, Any] = {}
        if op.f == "wipe":
            not_agents = [t for t, p in procs.items() if not hasattr(p, "wipe_data")]
            if not_agents:
                raise ValueError(f"wipe: only broker agents can be wiped, not {not_agents}")
        if op.phase == "stop":
            if op.f in INSTANT:
                return {"instant": True}
            if op.f == "pause":
                names = op.targets or sorted(self.paused)
                for t in names:
                    out[t] = bool(self._proc(t).resume())
                    self.paused.discard(t)
            else:  # kill, shutdown
                names = op.targets or sorted(self.down)
                for t in names:
                    out[t] = self._start(t)
            return {"result": out}
        for t, p in procs.items():
            if op.f == "kill":
                self.down.add(t)
                out[t] = bool(p.kill())
            elif op.f == "shutdown":
                self.down.add(t)
                out[t] = bool(p.stop())
            elif op.f == "pause":
                self.paused.add(t)
                out[t] = bool(p.pause())
            elif op.f in ("bounce", "fast_bounce"):
                self.down.add(t)
                p.resume()
                p.kill() if op.f == "fast_bounce" else p.stop()
                p.start()
                self.down.discard(t)
                out[t] = "restarted"
            elif op.f == "wipe":
                self.down.add(t)
                p.resume()
                p.kill()
                p.wipe_data()  # type: ignore[union-attr]
                p.start()
                self.down.discard(t)
                out[t] = "wiped"
        return {"result": out, **({"instant": True} if op.f in INSTANT else {})}

    def heal(self) -> dict[str, Any]:
        if self.cluster is None:
            return {}
        resumed = []
        for name in self._all_names():
            try:
                if self._proc(name).resume():
                    resumed.append(name)
            except Exception:  # noqa: BLE001, S110 - keep healing the others
                pass
        self.paused.clear()
        restarted, errors = [], {}
        for name in sorted(self.down):
            try:
                if self._start(name) == "started":
                    restarted.append(name)
            except Exception as e:  # noqa: BLE001
                errors[name] = repr(e)
        out: dict[str, Any] = {"sigcont": resumed, "restarted": restarted}
        if errors:
            out["restart_errors"] = errors
        return out

    def teardown(self) -> None:
        pass
