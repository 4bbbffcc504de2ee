"""One proxied connection, whatever the protocol: per-direction queues, black-hole overlays, the
close bookkeeping, and the queued ``Item``s the writers deliver.

Role in the data path: the shared proxy (``nemesis.wireproxy.proxy``) reads frames into these
queues and its writers drain them; a protocol's connection (``nemesis.zkproxy.conn.Conn``,
``nemesis.kafkaproxy.proxy.KafkaConn``) subclasses ``WireConn`` with what its inspector tracks
(sessions, requests awaiting replies). Pure data plus ``set_rst``; the proxy's tasks do the I/O.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NEW, CLOSING, CLOSED = "NEW", "CLOSING", "CLOSED"
DIRS = ("c2s", "s2c")


@dataclass(slots=True)
class Item:
    release_at: float
    data: bytes = b""
    kind: str = "data"  # data | eof | close | stop
    seq: int | None = None
    delayed: bool = False
    before_write: Callable[[], None] | None = None
    rst: bool = False


@dataclass
class WireConn:
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
    closed_first: str | None = None
    client_eof: bool = False  # the client closed its side (FIN or reset)
    close_reason: str | None = None
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    close_handle: asyncio.TimerHandle | None = None

    def summary(self) -> dict[str, Any]:
        return {
            "conn": self.ordinal, "listener": self.listener, "upstream": self.upstream,
            "client": self.client_addr, "state": self.state,
            "blackhole": [d for d in DIRS if self.blackhole[d]],
            "frames": dict(self.frames), "bytes": dict(self.nbytes),
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
