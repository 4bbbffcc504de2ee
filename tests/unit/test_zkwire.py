"""zkwire codec: hand-built byte vectors (layouts from ZooKeeper's zookeeper.jute) and hypothesis round-trips."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zkwire as z


def be_i(v: int) -> bytes:
    return struct.pack(">i", v)


def be_q(v: int) -> bytes:
    return struct.pack(">q", v)


def ustr(s: str) -> bytes:
    b = s.encode()
    return be_i(len(b)) + b


# --- primitives -------------------------------------------------------------------------------


def test_primitives_big_endian_and_null() -> None:
    w = z.Writer().int(-2).long(1 << 40).bool(True).buffer(None).ustring("é").vector(None, lambda w, x: None)
    assert w.getvalue() == be_i(-2) + be_q(1 << 40) + b"\x01" + be_i(-1) + be_i(2) + "é".encode() + be_i(-1)
    r = z.Reader(w.getvalue())
    assert (r.int(), r.long(), r.bool(), r.buffer(), r.ustring()) == (-2, 1 << 40, True, None, "é")
    assert r.vector(z.Reader.int) is None
    assert r.at_end()


def test_truncated_and_negative_lengths_raise() -> None:
    with pytest.raises(z.JuteError):
        z.Reader(b"\x00\x00").int()
    with pytest.raises(z.JuteError):
        z.Reader(be_i(5) + b"abc").buffer()
    with pytest.raises(z.JuteError):
        z.Reader(be_i(-7)).buffer()
    with pytest.raises(z.JuteError):
        z.Stat.decode(b"\x00" * 67)
    with pytest.raises(z.JuteError):  # trailing bytes
        z.Stat.decode(b"\x00" * 69)


def test_frames_and_limits() -> None:
    assert z.frame(b"abc") == b"\x00\x00\x00\x03abc"
    dec = z.FrameDecoder()
    data = z.frame(b"one") + z.frame(b"") + z.frame(b"three")
    out = []
    for i in range(len(data)):  # byte at a time
        out += dec.feed(data[i : i + 1])
    assert out == [b"one", b"", b"three"] and dec.pending == 0
    with pytest.raises(z.FrameError):
        z.FrameDecoder().feed(be_i(-1))
    with pytest.raises(z.FrameError):
        z.FrameDecoder().feed(be_i(z.JUTE_MAXBUFFER + 1))
    assert z.frame_length(be_i(z.JUTE_MAXBUFFER)) == z.JUTE_MAXBUFFER


def test_read_frame_async() -> None:
    async def go() -> list[tuple[bytes, bytes]]:
        r = asyncio.StreamReader()
        r.feed_data(z.frame(b"xy") + z.frame(b""))
        r.feed_eof()
        got = [await z.read_frame(r), await z.read_frame(r)]
        with pytest.raises(asyncio.IncompleteReadError):
            await z.read_frame(r)
        return got

    assert asyncio.run(go()) == [(be_i(2), b"xy"), (be_i(0), b"")]


def test_four_letter_words() -> None:
    for w in ("ruok", "cons", "dump", "srvr", "stat", "mntr", "wchs", "isro", "hash"):
        assert z.is_four_letter_word(w.encode())
    assert not z.is_four_letter_word(be_i(45))
    assert not z.is_four_letter_word(b"RUOK")


# --- handshake --------------------------------------------------------------------------------


def test_connect_request_45_bytes_by_hand() -> None:
    creq = z.ConnectRequest(0, 0x1234, 6000, 0, b"\x00" * 16, False)
    body = be_i(0) + be_q(0x1234) + be_i(6000) + be_q(0) + be_i(16) + b"\x00" * 16 + b"\x00"
    assert len(body) == z.CONNECT_REQUEST_LEN == 45
    assert creq.encode() == body
    assert z.ConnectRequest.decode(body) == creq
    old = z.ConnectRequest.decode(body[:-1])  # pre-readOnly peers: 44 bytes
    assert old.read_only is None and old.encode() == body[:-1]


def test_connect_response_37_bytes_and_expired() -> None:
    sid = 0x1001764B3920000
    body = be_i(0) + be_i(4000) + be_q(sid) + be_i(16) + bytes(range(16)) + b"\x00"
    assert len(body) == z.CONNECT_RESPONSE_LEN == 37
    resp = z.ConnectResponse.decode(body)
    assert resp.session_id == sid and resp.timeout == 4000 and not resp.expired
    assert resp.encode() == body
    assert z.ConnectResponse(0, 0, 0).expired


# --- headers and simple bodies ----------------------------------------------------------------


def test_request_and_reply_headers() -> None:
    assert z.RequestHeader(7, 14).encode() == be_i(7) + be_i(14)
    assert z.ReplyHeader.decode(be_i(-2) + be_q(99) + be_i(0)) == z.ReplyHeader(-2, 99, 0)
    assert z.encode_request(-2, z.OpCode.PING) == be_i(8) + be_i(-2) + be_i(11)


def test_stat_is_68_bytes_with_owner_at_44() -> None:
    st_ = z.Stat(czxid=1, mzxid=2, ctime=3, mtime=4, version=5, cversion=6, aversion=7,
                 ephemeral_owner=0x300000043230AC1, data_length=9, num_children=10, pzxid=11)
    b = st_.encode()
    assert len(b) == z.STAT_LEN == 68
    off = z.Stat.EPHEMERAL_OWNER_OFFSET
    assert struct.unpack(">q", b[off : off + 8])[0] == 0x300000043230AC1
    assert z.Stat.decode(b) == st_


def test_create_request_by_hand() -> None:
    body = z.CreateRequest("/brokers/ids/1", b"x", z.OPEN_ACL_UNSAFE, z.CreateFlags.EPHEMERAL).encode()
    assert body == (
        ustr("/brokers/ids/1") + be_i(1) + b"x" + be_i(1) + be_i(31) + ustr("world") + ustr("anyone") + be_i(1)
    )
    parsed = z.parse_request(z.RequestHeader(3, 1).encode() + body)
    assert parsed.op == 1 and parsed.paths == ["/brokers/ids/1"] and parsed.ephemeral and parsed.error is None
    ttl = z.CreateRequest("/t", None, [], z.CreateFlags.PERSISTENT_WITH_TTL, ttl=5000)
    assert z.parse_request(z.RequestHeader(1, 21).encode() + ttl.encode()).body == ttl


@pytest.mark.parametrize(
    ("op", "rec"),
    [
        (z.OpCode.DELETE, z.DeleteRequest("/a", 3)),
        (z.OpCode.EXISTS, z.ExistsRequest("/a", True)),
        (z.OpCode.GET_DATA, z.GetDataRequest("/a", False)),
        (z.OpCode.SET_DATA, z.SetDataRequest("/a", b"v", 0)),
        (z.OpCode.GET_CHILDREN, z.GetChildrenRequest("/a", True)),
        (z.OpCode.GET_CHILDREN2, z.GetChildrenRequest("/a", False)),
        (z.OpCode.CHECK, z.CheckVersionRequest("/a", 1)),
        (z.OpCode.SYNC, z.PathRequest("/a")),
        (z.OpCode.SET_ACL, z.SetACLRequest("/a", [z.ACL(1, "digest", "u:p")], 2)),
        (z.OpCode.AUTH, z.AuthPacket(0, "digest", b"u:p")),
        (z.OpCode.SET_WATCHES, z.SetWatches(5, ["/a"], ["/b"], ["/c"])),
        (z.OpCode.SET_WATCHES2, z.SetWatches(5, ["/a"], [], [], ["/p"], ["/r"])),
        (z.OpCode.ADD_WATCH, z.PathModeRequest("/a", 1)),
        (z.OpCode.CLOSE_SESSION, z.EmptyRecord()),
        (z.OpCode.PING, z.EmptyRecord()),
    ],
)
def test_request_bodies_round_trip(op: int, rec: z.Record) -> None:
    frame = z.encode_request(9, op, rec)
    parsed = z.parse_request(frame[4:])
    assert parsed.error is None
    assert parsed.body == rec
    assert parsed.header == z.RequestHeader(9, op)


def test_set_watches_paths_and_kinds() -> None:
    p = z.parse_request(z.encode_request(-8, 101, z.SetWatches(1, ["/d"], ["/e"], ["/c"]))[4:])
    assert p.paths == ["/d", "/e", "/c"]
    assert z.request_kind(11) == "ping" and z.request_kind(100) == "auth" and z.request_kind(-11) == "close"
    assert z.request_kind(14) == "request"
    assert z.reply_kind(-1) == "notification" and z.reply_kind(-2) == "ping" and z.reply_kind(-4) == "auth"
    assert z.reply_kind(5, 14) == "reply" and z.reply_kind(5, -11) == "close"


def test_unknown_opcode_is_tolerated() -> None:
    p = z.parse_request(z.RequestHeader(1, 77).encode() + b"junk")
    assert p.body is None and "unknown opcode" in (p.error or "")
    assert p.paths == [] and not p.ephemeral


def test_opcode_table() -> None:
    assert z.op_name(14) == "multi" and z.op_name(-11) == "closeSession" and z.op_name(999) == "op999"
    assert z.op_code("multi") == 14 and z.op_code("15") == 15 and z.op_code(5) == 5
    assert z.err_name(-110) == "NODE_EXISTS" and z.err_name(-112) == "SESSION_EXPIRED"


# --- multi ------------------------------------------------------------------------------------


def kafka_multi_bytes(path: str, data: bytes) -> bytes:
    create = ustr(path) + be_i(-1) + be_i(1) + be_i(31) + ustr("world") + ustr("anyone") + be_i(1)
    setdata = ustr(path) + be_i(len(data)) + data + be_i(0)
    return (
        be_i(1) + b"\x00" + be_i(-1) + create
        + be_i(5) + b"\x00" + be_i(-1) + setdata
        + be_i(-1) + b"\x01" + be_i(-1)
    )


def test_multi_request_by_hand() -> None:
    m = z.registration_multi("/brokers/ids/3", b"info")
    assert m.encode() == kafka_multi_bytes("/brokers/ids/3", b"info")
    parsed = z.parse_request(z.RequestHeader(1, 14).encode() + kafka_multi_bytes("/brokers/ids/3", b"info"))
    assert parsed.body == m
    assert [s.as_dict() for s in parsed.sub_ops or []] == [
        {"type": 1, "op_name": "create", "path": "/brokers/ids/3", "flags": 1},
        {"type": 5, "op_name": "setData", "path": "/brokers/ids/3"},
    ]
    assert parsed.paths == ["/brokers/ids/3", "/brokers/ids/3"] and parsed.ephemeral


def test_failed_multi_response_shape_verified_on_38() -> None:
    # A failed multi as a ZooKeeper 3.8 server sends it for a duplicate create:
    # (-1,false,-110)(-110)(-1,true,-1).
    body = be_i(-1) + b"\x00" + be_i(-110) + be_i(-110) + be_i(-1) + b"\x01" + be_i(-1)
    rep = z.parse_reply(z.ReplyHeader(1, 40, 0).encode() + body, z.OpCode.MULTI)
    assert rep.err == 0 and rep.error is None
    assert isinstance(rep.body, z.MultiResponse)
    assert rep.body.failed and rep.body.errors == [-110] and rep.body.first_error == -110
    assert rep.body.encode() == body
    two = z.MultiResponse([(-1, z.ErrorResult(-110)), (-1, z.ErrorResult(-2))])
    assert two.first_error == -110 and z.MultiResponse.decode(two.encode()) == two


def test_successful_multi_response() -> None:
    stat = z.Stat(czxid=0x20, ephemeral_owner=77)
    body = (
        be_i(1) + b"\x00" + be_i(0) + ustr("/brokers/ids/3")
        + be_i(5) + b"\x00" + be_i(0) + stat.encode()
        + be_i(-1) + b"\x01" + be_i(-1)
    )
    rep = z.parse_reply(z.ReplyHeader(1, 0x21, 0).encode() + body, 14)
    assert isinstance(rep.body, z.MultiResponse)
    assert not rep.body.failed and rep.body.first_error == 0
    assert rep.body.created_paths == ["/brokers/ids/3"]
    assert rep.body.results[1] == (5, z.StatResponse(stat))
    assert rep.body.encode() == body


def test_error_reply_has_no_body_and_notification_parses() -> None:
    rep = z.parse_reply(z.ReplyHeader(4, 10, -101).encode(), z.OpCode.GET_DATA)
    assert rep.err == -101 and rep.body is None and rep.error is None
    note = z.encode_notification(z.WatcherEvent(1, 3, "/brokers/ids/3"))
    rep = z.parse_reply(note[4:], None)
    assert rep.xid == -1 and rep.body == z.WatcherEvent(1, 3, "/brokers/ids/3")
    assert rep.body.type_name == "NodeCreated"


def test_add_watch_reply_is_an_error_response_not_trailing_bytes() -> None:
    # FinalRequestProcessor answers addWatch (106) with ``new ErrorResponse(0)``: header + int err
    body = struct.pack(">iqi", 7, 42, 0) + struct.pack(">i", 0)
    rep = z.parse_reply(body, z.OpCode.ADD_WATCH)
    assert rep.error is None and rep.body == z.ErrorResponse(0)
    req = z.parse_request(z.encode_request(7, z.OpCode.ADD_WATCH, z.PathModeRequest("/w", 1))[4:])
    assert req.error is None and req.paths == ["/w"]


@pytest.mark.parametrize(
    ("op", "rec"),
    [
        (1, z.PathResponse("/a0000000001")),
        (15, z.Create2Response("/a", z.Stat(czxid=5))),
        (3, z.StatResponse(z.Stat(version=2))),
        (4, z.GetDataResponse(b"d", z.Stat(data_length=1))),
        (5, z.StatResponse(z.Stat(version=1))),
        (8, z.GetChildrenResponse(["a", "b"])),
        (12, z.GetChildren2Response(["a"], z.Stat(num_children=1))),
        (6, z.GetACLResponse(z.OPEN_ACL_UNSAFE, z.Stat())),
        (2, z.EmptyRecord()),
        (11, z.EmptyRecord()),
        (107, z.WhoAmIResponse([("ip", "127.0.0.1")])),
    ],
)
def test_reply_bodies_round_trip(op: int, rec: z.Record) -> None:
    rep = z.parse_reply(z.encode_reply(3, 9, 0, rec)[4:], op)
    assert rep.error is None and rep.body == rec


# --- hypothesis round-trips -------------------------------------------------------------------

paths = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20).map(lambda s: "/" + s)
blobs = st.one_of(st.none(), st.binary(max_size=40))
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
acls = st.lists(st.builds(z.ACL, i32, st.text(max_size=8), st.text(max_size=8)), max_size=3)
stats = st.builds(z.Stat, i64, i64, i64, i64, i32, i32, i32, i64, i32, i32, i64)

sub_ops = st.one_of(
    st.tuples(st.sampled_from([1, 15, 19]), st.builds(z.CreateRequest, paths, blobs, acls, st.integers(0, 4))),
    st.tuples(st.just(2), st.builds(z.DeleteRequest, paths, i32)),
    st.tuples(st.just(5), st.builds(z.SetDataRequest, paths, blobs, i32)),
    st.tuples(st.just(13), st.builds(z.CheckVersionRequest, paths, i32)),
)
sub_results = st.one_of(
    st.tuples(st.just(1), st.builds(z.PathResponse, paths)),
    st.tuples(st.just(15), st.builds(z.Create2Response, paths, stats)),
    st.tuples(st.just(5), st.builds(z.StatResponse, stats)),
    st.tuples(st.sampled_from([2, 13]), st.builds(z.EmptyRecord)),
    st.tuples(st.just(-1), st.builds(z.ErrorResult, i32)),
)


@given(st.builds(z.ConnectRequest, i32, i64, i32, i64, blobs, st.one_of(st.none(), st.booleans())))
def test_connect_request_round_trip(c: z.ConnectRequest) -> None:
    assert z.ConnectRequest.decode(c.encode()) == c


@given(st.builds(z.ConnectResponse, i32, i32, i64, blobs, st.one_of(st.none(), st.booleans())))
def test_connect_response_round_trip(c: z.ConnectResponse) -> None:
    assert z.ConnectResponse.decode(c.encode()) == c


@given(stats)
def test_stat_round_trip(s: z.Stat) -> None:
    b = s.encode()
    assert len(b) == 68 and z.Stat.decode(b) == s


@settings(max_examples=150)
@given(st.integers(1, 2**31 - 1), st.lists(sub_ops, max_size=5))
def test_multi_request_round_trip(xid: int, ops: list[tuple[int, z.Record]]) -> None:
    parsed = z.parse_request(z.encode_request(xid, 14, z.MultiRequest(ops))[4:])
    assert parsed.error is None and parsed.body == z.MultiRequest(ops)
    assert parsed.paths == [r.path for _, r in ops]
    assert parsed.ephemeral == any(t in (1, 15, 19) and r.flags in (1, 3) for t, r in ops)


@settings(max_examples=150)
@given(i64, st.lists(sub_results, max_size=5))
def test_multi_response_round_trip(zxid: int, results: list[tuple[int, z.Record]]) -> None:
    rep = z.parse_reply(z.encode_reply(1, zxid, 0, z.MultiResponse(results))[4:], 14)
    assert rep.error is None and rep.body == z.MultiResponse(results) and rep.header.zxid == zxid


@given(st.lists(st.binary(max_size=50), max_size=6), st.integers(1, 17))
def test_frame_decoder_any_chunking(bodies: list[bytes], chunk: int) -> None:
    data = b"".join(z.frame(b) for b in bodies)
    dec = z.FrameDecoder()
    out: list[bytes] = []
    for i in range(0, len(data), chunk):
        out += dec.feed(data[i : i + chunk])
    assert out == bodies


@given(st.binary(max_size=120))
def test_parsers_never_crash_on_garbage(data: bytes) -> None:
    # The proxy parses a copy of every frame: anything beyond a short header must not raise.
    if len(data) >= 8:
        z.parse_request(data)
    if len(data) >= 16:
        for op in (1, 4, 5, 12, 14, None):
            z.parse_reply(data, op)


# --- pipelining client against a scripted fake server -------------------------------------------


def _fake_server(script) -> tuple[str, int, threading.Thread]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def run() -> None:
        conn, _ = srv.accept()
        with conn:
            script(conn)
        srv.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return "127.0.0.1", srv.getsockname()[1], t


def _read_exact(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def test_pipelined_register_sends_both_frames_before_reading() -> None:
    expected = z.build_pipelined_register("/brokers/ids/5", b"info", session_timeout_ms=4000)
    seen: list[bytes] = []

    def script(conn: socket.socket) -> None:
        seen.append(_read_exact(conn, len(expected)))  # both frames, without us replying first
        stat = z.Stat(czxid=0x42, ephemeral_owner=0xABC)
        conn.sendall(
            z.encode_connect_response(z.ConnectResponse(0, 4000, 0xABC))
            + z.encode_notification(z.WatcherEvent(1, 3, "/brokers/ids/5"))
            + z.encode_reply(1, 0x42, 0, z.MultiResponse([(1, z.PathResponse("/brokers/ids/5")),
                                                         (5, z.StatResponse(stat))]))
        )

    host, port, t = _fake_server(script)
    res = z.pipelined_register((host, port), "/brokers/ids/5", b"info", 3000, session_timeout_ms=4000)
    t.join(5)
    assert seen == [expected]
    assert res.session_id == 0xABC and res.negotiated_timeout_ms == 4000
    assert res.ok and res.reply_header is not None and res.reply_header.zxid == 0x42
    assert len(res.notifications) == 1 and not res.timed_out


def test_pipelined_register_times_out_without_replies() -> None:
    def script(conn: socket.socket) -> None:
        while conn.recv(4096):  # swallow everything; wait for the client to give up and close
            pass

    host, port, t = _fake_server(script)
    res = z.pipelined_register(f"{host}:{port}", "/brokers/ids/6", b"x", 300)
    t.join(5)
    assert res.timed_out and res.session_id is None and res.err is None and not res.ok


def test_pipelined_register_reports_node_exists() -> None:
    def script(conn: socket.socket) -> None:
        _read_exact(conn, 10)
        failed = z.MultiResponse([(-1, z.ErrorResult(-110)), (-1, z.ErrorResult(-2))])
        conn.sendall(z.encode_connect_response(z.ConnectResponse(0, 4000, 7)) + z.encode_reply(1, 5, 0, failed))

    host, port, t = _fake_server(script)
    res = z.pipelined_register((host, port), "/brokers/ids/7", b"x", 3000)
    t.join(5)
    assert res.err == z.Err.NODE_EXISTS and res.session_id == 7
