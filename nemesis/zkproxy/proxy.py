"""The asyncio ZooKeeper wire proxy: ZooKeeper's framing and inspection on the shared proxy.

Role in the data path: ``nemesis.wireproxy.proxy.WireProxy`` owns listeners, per-connection tasks,
rule decisions, delivery, black holes, holds and closes (shared with the Kafka proxy). This module
adds what is ZooKeeper's: the readers split frames (``zkwire.framing``) and tell four-letter-word
connections (passed raw, unparsed and unfaulted) from sessions, ``FrameInspector`` parses a *copy*
of each frame for the rules' ``FrameInfo`` and the ``frame`` event, and the sessions seen.

Connection states are in ``nemesis.zkproxy.conn``. Total: whatever bytes arrive, a connection ends
up forwarded frame by frame or closed on both sides with a ``protocol_error`` event (a bad length,
a frame ZooKeeper itself refuses, or any exception while inspecting a frame: a codec bug must cost
one connection, never wedge it). Other connections are untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine
from typing import Any

from history import EventWriter
from nemesis.wireproxy.conn import Item, WireConn
from nemesis.wireproxy.proxy import HELD_ON_CLOSE, ListenerSpec, WireProxy
from nemesis.zkproxy.conn import CLOSED, CLOSING, HANDSHAKE, RAW, Conn
from nemesis.zkproxy.inspector import FrameInspector
from nemesis.zkproxy.rules import DIALECT, FrameInfo
from zkwire.constants import PROXY_MAX_FRAME, is_four_letter_word
from zkwire.framing import read_frame
from zkwire.jute import ProtocolError

__all__ = ["HELD_ON_CLOSE", "ListenerSpec", "ZkProxy"]


class ZkProxy(WireProxy):
    """The ZooKeeper proxy. Create, ``await start()``, then ``await stop()``; all methods run on its loop."""

    conns: dict[int, Conn]  # type: ignore[assignment]
    DIALECT = DIALECT
    MAX_FRAME = PROXY_MAX_FRAME

    def __init__(self, listeners: list[ListenerSpec], events: EventWriter, **options: Any) -> None:
        """``options``: ``WireProxy``'s (rules, seed, held_on_close, max_frame, connect_timeout_s)."""
        super().__init__(listeners, events, **options)
        self.sessions: dict[int, dict[str, Any]] = {}
        self.inspector = FrameInspector(self.emit, self.sessions)

    # --- protocol hooks -----------------------------------------------------------------------

    def emit_frame(self, ev: dict[str, Any]) -> int:
        return self.emit("frame", **ev)

    def new_conn(self, ordinal: int, listener: int, upstream: str, client: str) -> Conn:
        return Conn(ordinal, listener, upstream, client, time.time())

    def readers(self, c: WireConn) -> list[Coroutine[Any, Any, None]]:
        assert isinstance(c, Conn)
        return [self._c2s_reader(c), self._s2c_reader(c)]

    def conn_fields(self, c: WireConn) -> dict[str, Any]:
        return {"session_id": getattr(c, "session_id", None)}

    def close_fields(self, c: WireConn) -> dict[str, Any]:
        return {"pending": len(c.pending) if isinstance(c, Conn) else 0}

    def stop_fields(self) -> dict[str, Any]:
        return {"sessions": len(self.sessions)}

    def _note_closed(self, c: WireConn, who: str, reason: str) -> None:
        if c.closed_first is None:
            c.closed_first, c.close_reason = who, reason
        if c.state not in (CLOSED, RAW):
            c.state = CLOSING

    def _on_dead_write(self, c: WireConn, d: str, item: Item) -> None:
        if d == "s2c" and item.before_write is not None:
            item.before_write()  # a held ConnectResponse: recorded as not delivered

    # --- readers ------------------------------------------------------------------------------

    async def _c2s_reader(self, c: Conn) -> None:
        assert c.client_r is not None
        try:
            first4 = await c.client_r.readexactly(4)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            self._note_closed(c, "client", "eof_before_first_frame")
            self._client_closed(c, "eof_before_first_frame")
            c.mode_decided.set()
            c.queues["c2s"].put_nowait(Item(0.0, kind="eof"))
            return
        if is_four_letter_word(first4):
            c.state = RAW
            c.mode_decided.set()
            self.emit("four_letter", conn=c.ordinal, upstream=c.upstream, dir="c2s", word=first4.decode())
            await self._raw_pipe(c, "c2s", first4)
            return
        c.state = HANDSHAKE
        c.mode_decided.set()
        peeked: bytes | None = first4
        first = True
        try:
            while True:
                prefix, body = await read_frame(c.client_r, self.max_frame, prefix=peeked)
                peeked = None
                self._on_frame(c, "c2s", prefix + body, body, first)
                first = False
        except ProtocolError as e:
            self._protocol_error(c, "c2s", str(e))
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            self._reader_eof(c, "c2s", e)
        except Exception as e:  # noqa: BLE001 - a bug parsing one frame closes its connection, no more
            self._protocol_error(c, "c2s", f"internal error: {type(e).__name__}: {e}")

    async def _s2c_reader(self, c: Conn) -> None:
        assert c.up_r is not None
        first = True
        try:
            while True:
                prefix = await c.up_r.readexactly(4)
                if first:
                    await c.mode_decided.wait()
                    if c.state == RAW:
                        await self._raw_pipe(c, "s2c", prefix)
                        return
                _, body = await read_frame(c.up_r, self.max_frame, prefix=prefix)
                self._on_frame(c, "s2c", prefix + body, body, first)
                first = False
        except ProtocolError as e:
            self._protocol_error(c, "s2c", str(e))
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            self._reader_eof(c, "s2c", e)
        except Exception as e:  # noqa: BLE001 - as in _c2s_reader
            self._protocol_error(c, "s2c", f"internal error: {type(e).__name__}: {e}")

    async def _raw_pipe(self, c: Conn, d: str, first: bytes) -> None:
        """Four-letter-word connections: bytes through, unparsed and unfaulted."""
        src = c.client_r if d == "c2s" else c.up_r
        dst = c.up_w if d == "c2s" else c.client_w
        assert src is not None and dst is not None
        data = first
        try:
            while data:
                c.nbytes[d] += len(data)
                dst.write(data)
                await dst.drain()
                data = await src.read(65536)
        except (ConnectionError, OSError):
            pass
        self._note_closed(c, "client" if d == "c2s" else "server", "eof")
        if d == "c2s":
            with contextlib.suppress(OSError, RuntimeError):
                if dst.can_write_eof():
                    dst.write_eof()
        else:
            dst.close()
        c.queues[d].put_nowait(Item(0.0, kind="stop"))

    # --- one frame ------------------------------------------------------------------------------

    def _on_frame(self, c: Conn, d: str, raw: bytes, body: bytes, first: bool) -> None:
        c.frames[d] += 1
        c.nbytes[d] += len(raw)
        info = FrameInfo(conn=c.ordinal, upstream=c.listener, upstream_addr=c.upstream, dir=d, kind="request",
                         session_id=c.session_id if c.session_id is not None else c.requested_session_id)
        ev: dict[str, Any] = {"conn": c.ordinal, "upstream": c.upstream, "dir": d, "bytes": len(raw)}
        before_write, after_emit = self.inspector.inspect(c, d, body, first, info, ev)
        ev["kind"] = info.kind
        ev.setdefault("session_id", info.session_id)
        self.deliver(c, d, raw, info, ev, before_write, after_emit)
