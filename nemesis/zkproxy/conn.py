"""One proxied connection: its state machine, per-direction queues and black-hole overlays, and
the requests awaiting replies.

States: NEW -> RAW (four-letter word) or HANDSHAKE -> AWAIT_CONNECT_RESPONSE -> ESTABLISHED, then
CLOSING -> CLOSED (``closed_first`` = client | server | proxy). Pure data plus ``set_rst``; the
proxy's tasks do the I/O.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NEW, RAW, HANDSHAKE, AWAIT_CONNECT_RESPONSE, ESTABLISHED, CLOSING, CLOSED = (
    "NEW", "RAW", "HANDSHAKE", "AWAIT_CONNECT_RESPONSE", "ESTABLISHED", "CLOSING", "CLOSED",
)


@dataclass(slots=True)
class Pending:
    xid: int
    op: int
    paths: list[str]
    ephemeral: bool
    req_seq: int
    t_sent: float


@dataclass(slots=True)
class Item:
    release_at: float
    data: bytes = b""
    kind: str = "data"  # data | eof | close
    seq: int | None = None
    delayed: bool = False
    before_write: Callable[[], None] | None = None
    rst: bool = False


@dataclass
class Conn:
    ordinal: int
    listener: int
    upstream: str
    client_addr: str
    opened_wall: float
    state: str = NEW
    client_r: asyncio.StreamReader | None = None
    client_w: asyncio.StreamWriter | None = None
    up_r: asyncio.StreamReader | None = None
    up_w: asyncio.StreamWriter | None = None
    blackhole: dict[str, bool] = field(default_factory=lambda: {"c2s": False, "s2c": False})
    blackhole_rule: dict[str, str | None] = field(default_factory=lambda: {"c2s": None, "s2c": None})
    discard_held: dict[str, bool] = field(default_factory=lambda: {"c2s": False, "s2c": False})
    dead: dict[str, bool] = field(default_factory=lambda: {"c2s": False, "s2c": False})
    queues: dict[str, asyncio.Queue[Item]] = field(
        default_factory=lambda: {"c2s": asyncio.Queue(), "s2c": asyncio.Queue()}
    )
    last_release: dict[str, float] = field(default_factory=lambda: {"c2s": 0.0, "s2c": 0.0})
    frames: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    nbytes: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    pending: deque[Pending] = field(default_factory=deque)
    requested_session_id: int | None = None
    session_id: int | None = None
    negotiated_timeout_ms: int | None = None
    closed_first: str | None = None
    client_eof: bool = False  # the client closed its side (FIN or reset)
    close_reason: str | None = None
    mode_decided: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    close_handle: asyncio.TimerHandle | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "conn": self.ordinal, "listener": self.listener, "upstream": self.upstream,
            "client": self.client_addr, "state": self.state, "session_id": self.session_id,
            "requested_session_id": self.requested_session_id,
            "negotiated_timeout_ms": self.negotiated_timeout_ms,
            "blackhole": [d for d in ("c2s", "s2c") if self.blackhole[d]],
            "frames": dict(self.frames), "bytes": dict(self.nbytes), "pending": len(self.pending),
            "closed_first": self.closed_first, "opened_wall": self.opened_wall,
        }


def set_rst(w: asyncio.StreamWriter | None) -> None:
    """Make the next close an RST (SO_LINGER 0) instead of a FIN."""
    if w is None:
        return
    sock = w.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
