"""Raw-socket ZooKeeper clients built on the codec: the KAFKA-14845 pipelining registration.

``pipelined_register`` does what the Java Netty client does when Kafka queues its broker
registration while the handle is still connecting: ``ClientCnxnSocketNetty`` flushes every queued
packet right behind the ConnectRequest, so the ConnectRequest *and* the registration multi
``[create(path, EPHEMERAL), setData(path, data, 0)]`` leave in one ``send`` without waiting for the
ConnectResponse. The server stops reading a connection until its session is committed
(``ZooKeeperServer.processConnectRequest`` calls ``cnxn.disableRecv()``; ``finishSessionInit``
enables it again, in apache/zookeeper), so the multi runs under
the new session even if the client never learns its id (KAFKA-14845). The broker agent's
pipelining mode and the proxy's integration tests both use it.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field

from zkwire.constants import CreateFlags, Err, OpCode
from zkwire.framing import FrameDecoder, recv_frame
from zkwire.jute import Record
from zkwire.messages import ParsedReply, encode_connect_request, encode_request, parse_reply
from zkwire.records import ACL, OPEN_ACL_UNSAFE, ConnectRequest, ConnectResponse, ReplyHeader
from zkwire.reply_bodies import MultiResponse
from zkwire.request_bodies import CreateRequest, MultiRequest, SetDataRequest

Addr = tuple[str, int]


def parse_addr(addr: str | Addr) -> Addr:
    if isinstance(addr, tuple):
        return addr[0], int(addr[1])
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def registration_multi(
    path: str, data: bytes, *, create_data: bytes | None = None, acl: list[ACL] | None = None
) -> MultiRequest:
    """Kafka's CheckedEphemeral registration: multi[create(path, EPHEMERAL), setData(path, data, 0)]."""
    return MultiRequest(
        [
            (OpCode.CREATE, CreateRequest(path, create_data, list(acl or OPEN_ACL_UNSAFE), CreateFlags.EPHEMERAL)),
            (OpCode.SET_DATA, SetDataRequest(path, data, 0)),
        ]
    )


def build_pipelined_register(
    path: str,
    data: bytes,
    *,
    session_timeout_ms: int = 6000,
    xid: int = 1,
    session_id: int = 0,
    passwd: bytes | None = None,
    last_zxid_seen: int = 0,
    create_data: bytes | None = None,
    acl: list[ACL] | None = None,
) -> bytes:
    """The exact bytes of ConnectRequest + registration multi, ready for one ``sendall``."""
    creq = ConnectRequest(0, last_zxid_seen, session_timeout_ms, session_id, passwd or b"\x00" * 16, False)
    multi = registration_multi(path, data, create_data=create_data, acl=acl)
    return encode_connect_request(creq) + encode_request(xid, OpCode.MULTI, multi)


@dataclass
class PipelinedResult:
    """What the pipelining client saw. ``session_id`` is None when no ConnectResponse arrived."""

    sent: bytes
    connect_response: ConnectResponse | None = None
    reply_header: ReplyHeader | None = None
    multi: MultiResponse | None = None
    notifications: list[ParsedReply] = field(default_factory=list)
    timed_out: bool = False  # gave up waiting after timeout_ms
    closed_by_peer: bool = False  # EOF before both replies arrived
    elapsed_s: float = 0.0
    sock: socket.socket | None = None  # still open only with keep_open=True

    @property
    def session_id(self) -> int | None:
        return self.connect_response.session_id if self.connect_response else None

    @property
    def negotiated_timeout_ms(self) -> int | None:
        return self.connect_response.timeout if self.connect_response else None

    @property
    def session_expired(self) -> bool:
        return self.connect_response is not None and self.connect_response.expired

    @property
    def err(self) -> int | None:
        """0 on success, the failing op's code for a failed multi, None when no reply arrived."""
        if self.reply_header is None:
            return None
        if self.reply_header.err != 0:
            return self.reply_header.err
        return self.multi.first_error if self.multi is not None else Err.OK

    @property
    def ok(self) -> bool:
        return self.err == Err.OK


def pipelined_register(
    sock_or_addr: socket.socket | str | Addr,
    path: str,
    data: bytes,
    timeout_ms: int = 6000,
    *,
    session_timeout_ms: int | None = None,
    create_data: bytes | None = None,
    acl: list[ACL] | None = None,
    keep_open: bool = False,
) -> PipelinedResult:
    """Send ConnectRequest immediately followed by the registration multi; read both replies.

    ``sock_or_addr``: a connected socket, ``"host:port"`` or ``(host, port)``. ``timeout_ms`` is the
    client's connect timeout (the Java client uses requested session timeout / host count): after
    it passes without both replies the client gives up and, unless ``keep_open``, closes the socket,
    like ``ClientCnxn`` logging "Client session timed out ... for sessionid 0x0".
    ``session_timeout_ms`` (default ``timeout_ms``) is the session timeout requested.
    The call never raises on a timeout or a peer close; inspect the result.
    """
    t0 = time.monotonic()
    deadline = t0 + timeout_ms / 1000.0
    if isinstance(sock_or_addr, socket.socket):
        sock = sock_or_addr
    else:
        sock = socket.create_connection(parse_addr(sock_or_addr), timeout=max(0.1, timeout_ms / 1000.0))
    sent = build_pipelined_register(
        path, data, session_timeout_ms=session_timeout_ms or timeout_ms, create_data=create_data, acl=acl
    )
    res = PipelinedResult(sent=sent)
    dec = FrameDecoder()
    try:
        sock.sendall(sent)
        while res.reply_header is None:
            left = deadline - time.monotonic()
            if left <= 0:
                res.timed_out = True
                break
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                res.timed_out = True
                break
            except OSError:
                res.closed_by_peer = True
                break
            if not chunk:
                res.closed_by_peer = True
                break
            for body in dec.feed(chunk):
                if res.connect_response is None:
                    res.connect_response = ConnectResponse.decode(body)
                    continue
                rep = parse_reply(body, OpCode.MULTI)
                if rep.xid == -1:
                    res.notifications.append(rep)
                    continue
                res.reply_header = rep.header
                res.multi = rep.body if isinstance(rep.body, MultiResponse) else None
    finally:
        res.elapsed_s = time.monotonic() - t0
        if keep_open:
            res.sock = sock
        else:
            sock.close()
    return res


class RawSession:
    """A minimal synchronous, non-pipelining ZooKeeper session over a raw socket (tests, probes).

    No watches, no reconnects, no pings on its own: call :meth:`ping` if you need to keep it alive.
    """

    def __init__(self, addr: str | Addr, *, session_timeout_ms: int = 6000, timeout_s: float = 5.0) -> None:
        self.sock = socket.create_connection(parse_addr(addr), timeout=timeout_s)
        self.timeout_s = timeout_s
        self._xid = 0
        self.notifications: list[ParsedReply] = []
        self.sock.sendall(encode_connect_request(ConnectRequest(timeout=session_timeout_ms)))
        self.connect_response = ConnectResponse.decode(self._recv_frame())

    @property
    def session_id(self) -> int:
        return self.connect_response.session_id

    def _recv_frame(self) -> bytes:
        body = recv_frame(self.sock)
        if body is None:
            raise ConnectionError("server closed the connection")
        return body

    def request(self, op: int, body: Record | None = None) -> ParsedReply:
        if op == OpCode.PING:
            xid = -2
        else:
            self._xid += 1
            xid = self._xid
        self.sock.sendall(encode_request(xid, op, body))
        while True:
            rep = parse_reply(self._recv_frame(), op)
            if rep.xid == -1:
                self.notifications.append(rep)
                continue
            if rep.xid != xid:
                raise RuntimeError(f"xid mismatch: sent {xid}, got {rep.xid}")
            return rep

    def ping(self) -> ParsedReply:
        return self.request(OpCode.PING)

    def close(self, *, close_session: bool = True) -> None:
        try:
            if close_session:
                self.request(OpCode.CLOSE_SESSION)
        except (OSError, ConnectionError):
            pass
        finally:
            self.sock.close()

    def __enter__(self) -> RawSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
