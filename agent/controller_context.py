"""The controller's in-memory view of the cluster (K37 ``ControllerContext``).

One object shared by the controller's decisions (``agent.controller``), its fenced ZooKeeper
access (``agent.controller_zk``) and its channel manager (``agent.channel``), so none of them
needs the others. Touched only on the controller event thread, except the debug hooks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.config import Toggles
from agent.znodes import PartitionState

TP = tuple[str, int]


@dataclass(slots=True)
class ControllerContext:
    me: int  # this broker's id
    toggles: Toggles
    active: bool = False
    epoch: int = 0  # controller epoch won in the last election
    epoch_zk_version: int = -1  # Stat.version of /controller_epoch after that election
    live: dict[int, int] = field(default_factory=dict)  # broker id -> broker epoch (czxid) cached
    shutting_down: set[int] = field(default_factory=set)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)  # topic -> partition -> replicas
    states: dict[TP, PartitionState] = field(default_factory=dict)  # as last read or written
