"""Components: every process a run starts (ZooKeeper servers, broker agents, the Toxiproxy server,
the ZooKeeper wire proxy, the embedded sshd), behind one small protocol.

The data path: the inventory names nodes; the cluster turns them into components and starts them;
nemeses and the run engine act on components only through this protocol (ducktape's Service,
Jepsen's DB/Kill/Pause/LogFiles). ``state()`` is the one definition of a live process: the engine
records ``run_end.live_brokers`` from it and the process nemesis decides what to restart with it.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Protocol, runtime_checkable


class ProcState(StrEnum):
    RUNNING = "running"  # the process exists and is scheduled
    PAUSED = "paused"  # SIGSTOPped: exists, makes no progress (not live)
    STOPPED = "stopped"  # no process, or a zombie


def parse_stat(stat: str) -> ProcState:
    """A process's state from its ``ps -o stat=`` letters (or /proc/PID/stat's state field):
    nothing or a zombie is stopped, ``T`` (SIGSTOP) is paused, anything else runs."""
    stat = stat.strip()
    if not stat or stat[0] in "ZXx":
        return ProcState.STOPPED
    if stat[0] in "Tt":
        return ProcState.PAUSED
    return ProcState.RUNNING


class Unsupported(RuntimeError):
    """The component cannot do this (for example wiping a component that keeps no data)."""


@runtime_checkable
class Component(Protocol):
    name: str  # the node name the inventory gives it ("zk1", "b2") or the service's name
    role: str  # "zookeeper" | "broker" | "toxiproxy" | "zkproxy" | "sshd"

    def start(self) -> None: ...

    def stop(self, grace: float = 5.0) -> bool: ...  # SIGTERM, then SIGKILL after ``grace``

    def kill(self) -> bool: ...  # SIGKILL

    def pause(self) -> bool: ...  # SIGSTOP

    def resume(self) -> bool: ...  # SIGCONT

    def wipe(self) -> None: ...  # delete its data; raises Unsupported when it keeps none

    def state(self) -> ProcState: ...

    def logs(self, dest: Path) -> list[Path]: ...  # download its log files into ``dest``


def live(component: Component) -> bool:
    """Live means running: a paused or stopped process is not (it cannot register, serve or fence)."""
    return component.state() is ProcState.RUNNING
