"""Whole messages: framed encoders, and the tolerant parsers a proxy runs on a copy of each frame.

After the handshake a request frame is ``RequestHeader`` + body and a reply frame is ``ReplyHeader``
+ body (``ClientCnxn.java`` and ``FinalRequestProcessor.java`` in apache/zookeeper). The parsers never
raise for an unknown opcode or a malformed body: they report it in ``.error``, so the original bytes
can still be forwarded (ZooKeeper, not the proxy, judges a shape the codec does not know). They
raise :class:`JuteError` for a header too short to read, and :class:`ProtocolError` for a frame
ZooKeeper itself would close the connection on (a nested multi): nothing else, whatever the bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zkwire.constants import XID_AUTH, XID_NOTIFICATION, XID_PING, OpCode, is_ephemeral_flags, op_name
from zkwire.framing import frame
from zkwire.jute import JuteError, ProtocolError, Reader, Record, Writer
from zkwire.records import ConnectRequest, ConnectResponse, ReplyHeader, RequestHeader
from zkwire.reply_bodies import REPLY_TYPES, WatcherEvent
from zkwire.request_bodies import REQUEST_TYPES, CreateRequest, MultiRequest, SetWatches


def encode_request(xid: int, op: int, body: Record | None = None) -> bytes:
    """One framed request: length + RequestHeader + body."""
    w = Writer()
    RequestHeader(xid, op).write(w)
    if body is not None:
        body.write(w)
    return frame(w.getvalue())


def encode_reply(xid: int, zxid: int, err: int, body: Record | None = None) -> bytes:
    """One framed reply: length + ReplyHeader + body (omit the body for error replies)."""
    w = Writer()
    ReplyHeader(xid, zxid, err).write(w)
    if body is not None:
        body.write(w)
    return frame(w.getvalue())


def encode_notification(event: WatcherEvent, zxid: int = -1) -> bytes:
    return encode_reply(XID_NOTIFICATION, zxid, 0, event)


def encode_connect_request(req: ConnectRequest) -> bytes:
    return frame(req.encode())


def encode_connect_response(resp: ConnectResponse) -> bytes:
    return frame(resp.encode())


@dataclass(slots=True)
class SubOp:
    """A multi sub-op as the proxy logs it."""

    type: int
    path: str | None
    flags: int | None = None

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, "op_name": op_name(self.type), "path": self.path}
        if self.flags is not None:
            d["flags"] = self.flags
        return d


def record_path(rec: Record | None) -> str | None:
    p = getattr(rec, "path", None)
    return p if isinstance(p, str) else None


@dataclass(slots=True)
class ParsedRequest:
    header: RequestHeader
    body: Record | None  # None when the opcode is unknown or the body failed to parse
    error: str | None = None  # parse problem (the frame is still forwarded)

    @property
    def xid(self) -> int:
        return self.header.xid

    @property
    def op(self) -> int:
        return self.header.type

    @property
    def sub_ops(self) -> list[SubOp] | None:
        if isinstance(self.body, MultiRequest):
            return [SubOp(t, record_path(rec), getattr(rec, "flags", None)) for t, rec in self.body.ops]
        return None

    @property
    def paths(self) -> list[str]:
        subs = self.sub_ops
        if subs is not None:
            return [s.path for s in subs if s.path is not None]
        if isinstance(self.body, SetWatches):
            return self.body.paths
        p = record_path(self.body)
        return [p] if p is not None else []

    @property
    def ephemeral(self) -> bool:
        """A create with the ephemeral flag, or a multi with such a sub-create."""
        subs = self.sub_ops
        if subs is not None:
            return any(s.flags is not None and is_ephemeral_flags(s.flags) for s in subs)
        return isinstance(self.body, CreateRequest) and self.body.ephemeral


def _read_body(r: Reader, reader: Callable[[Reader], Record], what: str) -> tuple[Record | None, str | None]:
    """(record, None), or (None, the problem) for a body that is short, long or malformed; a
    :class:`ProtocolError` is raised, not reported."""
    try:
        rec = reader(r)
        r.expect_end(what)
    except ProtocolError:
        raise
    except JuteError as e:
        return None, str(e)
    return rec, None


def parse_request(body: bytes) -> ParsedRequest:
    """Parse a request frame body (after the handshake). Raises JuteError only for a short header,
    ProtocolError for a nested multi."""
    r = Reader(body)
    h = RequestHeader.read(r)
    reader = REQUEST_TYPES.get(h.type)
    if reader is None:
        return ParsedRequest(h, None, f"unknown opcode {h.type}")
    return ParsedRequest(h, *_read_body(r, reader, f"{op_name(h.type)} request"))


@dataclass(slots=True)
class ParsedReply:
    header: ReplyHeader
    body: Record | None
    error: str | None = None

    @property
    def xid(self) -> int:
        return self.header.xid

    @property
    def err(self) -> int:
        return self.header.err


def parse_reply(body: bytes, op: int | None) -> ParsedReply:
    """Parse a reply frame body. ``op`` is the opcode of the matched request (None if unknown).

    Notifications (xid -1) are parsed as :class:`WatcherEvent` whatever ``op`` is. A reply with
    ``err != 0`` has no body. Raises JuteError only for a short header, ProtocolError for a nested
    multi.
    """
    r = Reader(body)
    h = ReplyHeader.read(r)
    if h.xid == XID_NOTIFICATION:
        reader: Callable[[Reader], Record] | None = WatcherEvent.read
    elif h.err != 0:
        if r.at_end():
            return ParsedReply(h, None)
        return ParsedReply(h, None, f"error reply with {r.remaining()} body bytes")
    else:
        reader = REPLY_TYPES.get(op) if op is not None else None
    if reader is None:
        return ParsedReply(h, None, None if op is None else f"unknown opcode {op}")
    return ParsedReply(h, *_read_body(r, reader, f"{op_name(op)} reply"))


def request_kind(op: int) -> str:
    """The proxy's frame kind for a client->server frame after the handshake."""
    if op == OpCode.PING:
        return "ping"
    if op == OpCode.AUTH:
        return "auth"
    if op == OpCode.CLOSE_SESSION:
        return "close"
    return "request"


def reply_kind(xid: int, op: int | None = None) -> str:
    """The proxy's frame kind for a server->client frame after the handshake."""
    if xid == XID_NOTIFICATION:
        return "notification"
    if xid == XID_PING:
        return "ping"
    if xid == XID_AUTH:
        return "auth"
    if op == OpCode.CLOSE_SESSION:
        return "close"
    return "reply"
