"""What the controller, the replica manager and the registrar need from the broker process.

``agent.broker.BrokerAgent`` satisfies this Protocol structurally. The parts depend on it, not on
the class, so the broker can own them without an import cycle (broker -> controller -> broker).
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from kazoo.client import KazooClient

from agent.config import AgentConfig
from history import Event


class BrokerApi(Protocol):
    cfg: AgentConfig
    zk: KazooClient
    stopping: threading.Event  # set once the process is stopping: every loop and retry ends

    @property
    def broker_epoch(self) -> int | None:
        """The czxid of this broker's registration (KIP-380), None before the first one."""

    @property
    def registered(self) -> bool:
        """Registered under the current ZooKeeper session."""

    def session_id(self) -> int | None: ...

    def emit(self, f: str, type: str = "event", **value: Any) -> Event:
        """Write one event to this agent's history file."""

    def wait_connected(self) -> None:
        """Block until kazoo is connected again (or the process stops)."""

    def learn_broker_endpoint(self, bid: int, data: bytes) -> None:
        """Cache a broker's host:port from its /brokers/ids/N payload."""

    def endpoint_of(self, bid: int) -> dict[str, Any]: ...

    def request_broker(self, bid: int, msg: dict[str, Any], timeout: float = 2.0) -> dict[str, Any]:
        """One control-plane request to broker ``bid``; raises OSError when the outcome is unknown."""

    def send_to_controller(self, msg: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """One request to the active controller (learnt from control requests, else /controller)."""
