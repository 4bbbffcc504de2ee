"""One proxied ZooKeeper connection: the shared ``WireConn`` (queues, black holes, close
bookkeeping; ``nemesis.wireproxy.conn``) plus the handshake state, the session, and the requests
awaiting replies.

States: NEW -> RAW (four-letter word) or HANDSHAKE -> AWAIT_CONNECT_RESPONSE -> ESTABLISHED, then
CLOSING -> CLOSED (``closed_first`` = client | server | proxy). Pure data; the proxy's tasks do the I/O.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from nemesis.wireproxy.conn import CLOSED, CLOSING, NEW, Item, WireConn, set_rst

RAW, HANDSHAKE, AWAIT_CONNECT_RESPONSE, ESTABLISHED = "RAW", "HANDSHAKE", "AWAIT_CONNECT_RESPONSE", "ESTABLISHED"

__all__ = ["AWAIT_CONNECT_RESPONSE", "CLOSED", "CLOSING", "ESTABLISHED", "HANDSHAKE", "NEW", "RAW", "Conn", "Item",
           "Pending", "set_rst"]


@dataclass(slots=True)
class Pending:
    xid: int
    op: int
    paths: list[str]
    ephemeral: bool
    req_seq: int
    t_sent: float


@dataclass
class Conn(WireConn):
    pending: deque[Pending] = field(default_factory=deque)
    requested_session_id: int | None = None
    session_id: int | None = None
    negotiated_timeout_ms: int | None = None
    mode_decided: asyncio.Event = field(default_factory=asyncio.Event)

    def summary(self) -> dict[str, Any]:
        return {
            **WireConn.summary(self), "session_id": self.session_id,
            "requested_session_id": self.requested_session_id,
            "negotiated_timeout_ms": self.negotiated_timeout_ms, "pending": len(self.pending),
        }
