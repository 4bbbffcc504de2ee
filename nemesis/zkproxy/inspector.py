"""What the proxy learns from a *copy* of each frame: the rules' ``FrameInfo``, the fields of its
``frame`` event, the connection's handshake state, the requests awaiting replies, and the sessions
seen in ConnectResponses.

Replies are matched to requests FIFO for xids >= 0 and -8 (SetWatches), -2 (ping) and -4 (auth) by
value, notifications (-1) never pop: the server answers a connection's requests in order
(``FinalRequestProcessor`` in apache/zookeeper). The original bytes are forwarded whatever this finds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from nemesis.zkproxy.conn import AWAIT_CONNECT_RESPONSE, CLOSING, ESTABLISHED, HANDSHAKE, Conn, Pending
from nemesis.zkproxy.rules import FrameInfo
from zkwire.constants import XID_AUTH, XID_NOTIFICATION, XID_PING, XID_SET_WATCHES, OpCode, op_name
from zkwire.jute import JuteError, ProtocolError
from zkwire.messages import parse_reply, parse_request, reply_kind, request_kind
from zkwire.records import ConnectRequest, ConnectResponse
from zkwire.reply_bodies import Create2Response, MultiResponse, PathResponse, WatcherEvent

BeforeWrite = Callable[[], None]  # runs just before the frame is written to its destination
AfterEmit = Callable[[int, bool], None]  # (frame event seq, forwarded?) once the frame is logged
Emit = Callable[..., int]  # ZkProxy.emit: event name + fields -> seq
RAW_HEX_BYTES = 64  # how much of an unparsable frame body an event carries, as hex


def connect_result(requested: int | None, resp: ConnectResponse) -> str:
    """What a ConnectResponse did: ``expired`` (session id 0 / timeOut 0: the requested session is
    gone), ``reattached`` (the requested session again) or ``new`` (a fresh session)."""
    if resp.expired:
        return "expired"
    if requested not in (0, None) and resp.session_id == requested:
        return "reattached"
    return "new"


class FrameInspector:
    def __init__(self, emit: Emit, sessions: dict[int, dict[str, Any]]) -> None:
        self.emit = emit
        self.sessions = sessions  # session id -> what the proxy saw of it (the control API lists them)

    def inspect(self, c: Conn, d: str, body: bytes, first: bool, info: FrameInfo,
                ev: dict[str, Any]) -> tuple[BeforeWrite | None, AfterEmit | None]:
        """Parse one frame body (``d`` = c2s | s2c; ``first`` = the handshake frame), filling
        ``info`` and ``ev``. A malformed body is reported as ``ev["parse_error"]`` (the frame is still
        forwarded); a :class:`ProtocolError` (a nested multi) propagates: the proxy closes the
        connection on it, as ZooKeeper would."""
        before_write: BeforeWrite | None = None
        after_emit: AfterEmit | None = None
        try:
            if d == "c2s" and first:
                before_write, after_emit = self._parse_connect_req(c, body, info, ev)
            elif d == "s2c" and first:
                before_write, after_emit = self._parse_connect_resp(c, body, info, ev)
            elif d == "c2s":
                pend = self._parse_request(c, body, info, ev)
                if pend is not None:
                    before_write = self._pusher(c, pend)
                    after_emit = self._req_seq_setter(pend)
            else:
                after_emit = self._parse_reply(c, body, info, ev)
        except ProtocolError:
            raise
        except JuteError as e:
            ev["parse_error"] = str(e)
            if d == "s2c" and not first and body[:4] == b"\xff\xff\xff\xff":  # a short notification
                info.kind = "notification"
                after_emit = self._unparsed_notification(c, body, str(e))
        return before_write, after_emit

    def _unparsed_notification(self, c: Conn, body: bytes, error: str) -> AfterEmit:
        """A notification that does not parse is still forwarded; this logs what it was."""

        def log(seq: int, forwarded: bool) -> None:
            self.emit("notification_unparsed", conn=c.ordinal, upstream=c.upstream, frame_seq=seq,
                      bytes=len(body), raw_hex=body[:RAW_HEX_BYTES].hex(), parse_error=error)

        return log

    @staticmethod
    def _pusher(c: Conn, pend: Pending) -> BeforeWrite:
        def push() -> None:  # just before the request reaches the server: its reply can only follow
            pend.t_sent = time.monotonic()
            c.pending.append(pend)

        return push

    @staticmethod
    def _req_seq_setter(pend: Pending) -> AfterEmit:
        def set_seq(seq: int, forwarded: bool) -> None:
            pend.req_seq = seq

        return set_seq

    def _parse_connect_req(self, c: Conn, body: bytes, info: FrameInfo,
                           ev: dict[str, Any]) -> tuple[BeforeWrite, None]:
        info.kind = "connect_req"
        req = ConnectRequest.decode(body)
        c.requested_session_id = req.session_id
        info.session_id = req.session_id
        ev.update(session_id=req.session_id, timeout_ms=req.timeout, last_zxid_seen=req.last_zxid_seen,
                  read_only=req.read_only, protocol_version=req.protocol_version)

        def before() -> None:
            if c.state == HANDSHAKE:
                c.state = AWAIT_CONNECT_RESPONSE

        return before, None

    def _parse_connect_resp(self, c: Conn, body: bytes, info: FrameInfo,
                            ev: dict[str, Any]) -> tuple[BeforeWrite, AfterEmit]:
        """The session is recorded when the frame's fate is known: at once if it is not forwarded
        or the client has already closed, else just before it is written (a delayed response can
        outlive its client)."""
        info.kind = "connect_resp"
        resp = ConnectResponse.decode(body)
        info.session_id = resp.session_id
        info.connect_result = connect_result(c.requested_session_id, resp)
        ev.update(session_id=resp.session_id, timeout_ms=resp.timeout, expired=resp.expired,
                  read_only=resp.read_only, connect_result=info.connect_result)
        if c.client_eof:
            ev["client_closed"] = True
        if resp.expired:
            c.state = CLOSING
        else:
            c.session_id = resp.session_id
            c.negotiated_timeout_ms = resp.timeout
            c.state = ESTABLISHED

        held: list[int] = []  # the frame's seq while it waits to be written

        def after(seq: int, forwarded: bool) -> None:
            if forwarded and not c.client_eof:
                held.append(seq)
            else:  # dropped, or the client already closed its side: nobody receives it
                record(seq, False)

        def before() -> None:
            if held:
                record(held.pop(), not c.client_eof)

        def record(seq: int, delivered: bool) -> None:
            if resp.expired:
                self.emit("session_rejected", conn=c.ordinal, upstream=c.upstream,
                          requested_session_id=c.requested_session_id, frame_seq=seq,
                          forwarded_to_client=delivered)
                return
            s = self.sessions.setdefault(resp.session_id, {
                "session_id": resp.session_id, "first_conn": c.ordinal, "conns": [],
                "negotiated_timeout_ms": resp.timeout, "first_seen_wall": time.time(),
            })
            s["conns"].append(c.ordinal)
            s["last_conn"] = c.ordinal
            s["negotiated_timeout_ms"] = resp.timeout
            self.emit("session_established", conn=c.ordinal, upstream=c.upstream, session_id=resp.session_id,
                      negotiated_timeout_ms=resp.timeout, requested_session_id=c.requested_session_id,
                      new=c.requested_session_id in (0, None), frame_seq=seq,
                      forwarded_to_client=delivered, connect_result=info.connect_result)
            s["forwarded_to_client"] = delivered
            if not delivered:  # the server holds a session nobody received
                s["orphan"] = True
                self.emit("session_orphaned", conn=c.ordinal, upstream=c.upstream, session_id=resp.session_id,
                          frame_seq=seq, reason="client_closed" if c.client_eof else "not_forwarded")

        return before, after

    def _parse_request(self, c: Conn, body: bytes, info: FrameInfo, ev: dict[str, Any]) -> Pending | None:
        p = parse_request(body)
        info.kind = request_kind(p.op)
        info.xid, info.op = p.xid, p.op
        info.paths = p.paths
        info.ephemeral = p.ephemeral
        ev.update(xid=p.xid, op=p.op, op_name=op_name(p.op))
        subs = p.sub_ops
        if subs is not None:
            ev["sub_ops"] = [s.as_dict() for s in subs]
        elif info.paths:
            ev["path"] = info.paths[0] if len(info.paths) == 1 else info.paths
        if p.ephemeral:
            ev["ephemeral"] = True
        flags = getattr(p.body, "flags", None)
        if subs is None and flags is not None:
            ev["flags"] = flags
        if p.error:
            ev["parse_error"] = p.error
        if p.xid >= 0 or p.xid == XID_SET_WATCHES:  # these get replies in request order
            return Pending(p.xid, p.op, info.paths, p.ephemeral, 0, 0.0)
        return None

    def _parse_reply(self, c: Conn, body: bytes, info: FrameInfo, ev: dict[str, Any]) -> AfterEmit | None:
        # header first: the xid decides the parse
        xid = int.from_bytes(body[:4], "big", signed=True) if len(body) >= 4 else None
        op: int | None = None
        pend: Pending | None = None
        if xid == XID_PING:
            op = OpCode.PING
        elif xid == XID_AUTH:
            op = OpCode.AUTH
        elif xid is not None and xid != XID_NOTIFICATION:
            if c.pending:
                pend = c.pending.popleft()
                op = pend.op
                if pend.xid != xid:
                    self.emit("xid_mismatch", conn=c.ordinal, upstream=c.upstream, expected=pend.xid, got=xid,
                              req_seq=pend.req_seq)
            else:
                self.emit("unmatched_reply", conn=c.ordinal, upstream=c.upstream, xid=xid)
        rep = parse_reply(body, op)
        info.xid = rep.xid
        info.kind = reply_kind(rep.xid, op)
        ev.update(xid=rep.xid, zxid=rep.header.zxid, err=rep.err)
        if rep.xid == XID_NOTIFICATION:
            info.op = OpCode.NOTIFICATION
            ev.update(op=0, op_name="notification")
            if isinstance(rep.body, WatcherEvent):
                info.paths = [rep.body.path] if rep.body.path else []
                ev.update(path=rep.body.path, event_type=rep.body.type, event_name=rep.body.type_name,
                          state=rep.body.state)
            if rep.error:
                ev["parse_error"] = rep.error
                return self._unparsed_notification(c, body, rep.error)
            return None
        info.op = op
        ev.update(op=op, op_name=op_name(op))
        if pend is not None:
            info.paths = pend.paths
            info.ephemeral = pend.ephemeral
            ev["req_seq"] = pend.req_seq
            ev["latency_ms"] = round((time.monotonic() - pend.t_sent) * 1000.0, 3)
            if pend.paths:
                ev["path"] = pend.paths[0] if len(pend.paths) == 1 else pend.paths
        if isinstance(rep.body, MultiResponse):
            ev["multi_errs"] = rep.body.errors
            ev["multi_failed"] = rep.body.failed
            ev["created_paths"] = rep.body.created_paths
        elif isinstance(rep.body, (PathResponse, Create2Response)) and op in (1, 15, 19, 21):
            ev["created_paths"] = [rep.body.path]
        if rep.error:
            ev["parse_error"] = rep.error
        return None
