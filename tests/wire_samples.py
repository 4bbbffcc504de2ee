"""Valid ZooKeeper frames of every shape the codec knows, hostile ones, and byte mutations: the seeds
the wire fuzzers share (tests/unit/test_zkwire_fuzz.py, tests/integration/test_zkproxy_hostile.py,
bench/fuzz.py), so a shape added to the codec is fuzzed everywhere by adding it here once.

A "body" is a frame without its 4-byte length prefix, as ``zkwire.parse_request``/``parse_reply``
take it. Everything is deterministic given a ``random.Random``.
"""

from __future__ import annotations

import random
import struct

import zkwire as z

STAT = z.Stat(1, 2, 3, 4, 5, 6, 7, 0x101, 9, 10, 11)


def request_bodies() -> list[tuple[int, bytes]]:
    """``(opcode, body)`` for one valid request of each opcode, header included."""
    reqs: list[tuple[int, z.Record | None]] = [
        (z.OpCode.CREATE, z.CreateRequest("/a", b"x", flags=1)),
        (z.OpCode.CREATE2, z.CreateRequest("/b", None, acl=None)),
        (z.OpCode.CREATE_TTL, z.CreateRequest("/t", b"", flags=5, ttl=1000)),
        (z.OpCode.DELETE, z.DeleteRequest("/a", 3)),
        (z.OpCode.EXISTS, z.ExistsRequest("/a", True)),
        (z.OpCode.GET_DATA, z.GetDataRequest("/a")),
        (z.OpCode.SET_DATA, z.SetDataRequest("/a", b"yz", 2)),
        (z.OpCode.GET_ACL, z.PathRequest("/a")),
        (z.OpCode.SET_ACL, z.SetACLRequest("/a", [z.ACL(1, "digest", "u:p")], 0)),
        (z.OpCode.GET_CHILDREN2, z.GetChildrenRequest("/", False)),
        (z.OpCode.SYNC, z.PathRequest("/")),
        (z.OpCode.PING, None),
        (z.OpCode.CHECK, z.CheckVersionRequest("/a", 1)),
        (z.OpCode.AUTH, z.AuthPacket(0, "digest", b"u:p")),
        (z.OpCode.SET_WATCHES, z.SetWatches(5, ["/a"], [], ["/b"])),
        (z.OpCode.SET_WATCHES2, z.SetWatches(5, [], ["/c"], [], ["/d"], [])),
        (z.OpCode.RECONFIG, z.ReconfigRequest("server.1=h:1:2", None, None, -1)),
        (z.OpCode.ADD_WATCH, z.PathModeRequest("/w", 1)),
        (z.OpCode.WHO_AM_I, None),
        (z.OpCode.CLOSE_SESSION, None),
        (z.OpCode.MULTI, z.MultiRequest([
            (z.OpCode.CREATE, z.CreateRequest("/brokers/ids/1", b"{}", flags=1)),
            (z.OpCode.CHECK, z.CheckVersionRequest("/controller_epoch", 4)),
            (z.OpCode.SET_DATA, z.SetDataRequest("/e", b"5", 4)),
            (z.OpCode.DELETE, z.DeleteRequest("/x")),
        ])),
        (z.OpCode.MULTI_READ, z.MultiRequest([(z.OpCode.GET_DATA, z.GetDataRequest("/a"))])),
    ]
    return [(op, z.encode_request(i + 1, op, rec)[4:]) for i, (op, rec) in enumerate(reqs)]


def reply_bodies() -> list[tuple[int | None, bytes]]:
    """``(opcode of the request it answers, body)`` for one valid reply of each shape."""
    reps: list[tuple[int | None, z.Record | None, int]] = [
        (z.OpCode.CREATE, z.PathResponse("/a"), 0),
        (z.OpCode.CREATE2, z.Create2Response("/b", STAT), 0),
        (z.OpCode.DELETE, None, 0),
        (z.OpCode.EXISTS, z.StatResponse(STAT), 0),
        (z.OpCode.GET_DATA, z.GetDataResponse(b"abc", STAT), 0),
        (z.OpCode.GET_ACL, z.GetACLResponse([z.ACL()], STAT), 0),
        (z.OpCode.GET_CHILDREN, z.GetChildrenResponse(["a", "b"]), 0),
        (z.OpCode.GET_CHILDREN2, z.GetChildren2Response([], STAT), 0),
        (z.OpCode.GET_DATA, None, z.Err.NO_NODE),
        (z.OpCode.ADD_WATCH, z.ErrorResponse(0), 0),
        (z.OpCode.WHO_AM_I, z.WhoAmIResponse([("ip", "127.0.0.1")]), 0),
        (z.OpCode.GET_EPHEMERALS, z.GetEphemeralsResponse(["/e"]), 0),
        (z.OpCode.GET_ALL_CHILDREN_NUMBER, z.GetAllChildrenNumberResponse(3), 0),
        (z.OpCode.SASL, z.SaslResponse(b"t"), 0),
        (z.OpCode.MULTI, z.MultiResponse([
            (z.OpCode.CREATE, z.PathResponse("/brokers/ids/1")),
            (z.OpCode.CHECK, z.EmptyRecord()),
            (z.OpCode.SET_DATA, z.StatResponse(STAT)),
        ]), 0),
        (z.OpCode.MULTI, z.MultiResponse([(-1, z.ErrorResult(0)), (-1, z.ErrorResult(-101))]), 0),
    ]
    out: list[tuple[int | None, bytes]] = [
        (op, z.encode_reply(i + 1, 100 + i, err, rec)[4:]) for i, (op, rec, err) in enumerate(reps)
    ]
    out.append((None, z.encode_notification(z.WatcherEvent(1, 3, "/a"), 7)[4:]))
    out.append((z.OpCode.PING, z.encode_reply(z.XID_PING, -1, 0)[4:]))
    return out


def connect_request() -> bytes:
    return z.ConnectRequest(timeout=4000).encode()


def connect_response() -> bytes:
    return z.ConnectResponse(0, 4000, 0x101, b"\x01" * 16, False).encode()


def nested_multi(depth: int, reply: bool = False, xid: int = 1) -> bytes:
    """A multi whose first item is a multi, ``depth`` levels deep: the frame that used to raise
    ``RecursionError`` in the codec (9 bytes per level, so a 1 MiB frame nests ~100,000 deep)."""
    head = struct.pack(">iqi", xid, 0, 0) if reply else struct.pack(">ii", xid, z.OpCode.MULTI)
    return head + struct.pack(">i?i", z.OpCode.MULTI, False, -1) * depth + struct.pack(">i?i", -1, True, -1)


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One random mutation of ``data``: flip, set, insert or delete bytes, overwrite an int with a
    boundary value (0, -1, huge, negative), truncate, duplicate a slice, or splice in a nested
    multi header."""
    b = bytearray(data)
    how = rng.randrange(8)
    pos = rng.randrange(len(b) + 1)
    if how == 0 and b:
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif how == 1 and b:
        b[rng.randrange(len(b))] = rng.randrange(256)
    elif how == 2:
        b[pos:pos] = rng.randbytes(rng.randrange(1, 9))
    elif how == 3 and b:
        del b[pos:pos + rng.randrange(1, 9)]
    elif how == 4:
        v = rng.choice((0, -1, -2, 1, 0x7FFFFFFF, -0x80000000, len(b), len(b) + 1, 0xFFFFF))
        b[pos:pos + 4] = struct.pack(">i", v)
    elif how == 5:
        del b[pos:]
    elif how == 6 and b:
        i = rng.randrange(len(b))
        b[pos:pos] = b[i:i + rng.randrange(1, 32)]
    else:
        b[pos:pos] = struct.pack(">i?i", rng.choice((z.OpCode.MULTI, z.OpCode.MULTI_READ)), False, -1)
    return bytes(b)


def mutants(rng: random.Random, data: bytes, max_rounds: int = 4) -> bytes:
    """``data`` after 1..max_rounds mutations."""
    for _ in range(rng.randrange(1, max_rounds + 1)):
        data = mutate(rng, data)
    return data


class WrongAcceptance(AssertionError):
    """The codec accepted bytes it misread: the frame it returns does not encode back to a frame
    that decodes the same, or to the same number of bytes."""


def decode(body: bytes, direction: str, op: int | None = None) -> str:
    """Decode one frame body as the proxy would (``c2s``: a request, ``s2c``: a reply to ``op``;
    ``connect_req``/``connect_resp``: a handshake frame) and judge it: ``"accepted"`` (a frame, no
    parse error, and it encodes back consistently) or ``"refused"`` (``JuteError``, or a frame whose
    ``.error`` reports the problem). Raises :class:`WrongAcceptance`; any other exception is the
    codec's crash and propagates."""
    if direction in ("connect_req", "connect_resp"):
        cls = z.ConnectRequest if direction == "connect_req" else z.ConnectResponse
        try:
            rec = cls.decode(body)
        except z.JuteError:
            return "refused"
        again = rec.encode()
        if len(again) != len(body) or cls.decode(again) != rec:
            raise WrongAcceptance(f"{direction} {body.hex()} decoded as {rec}, encodes to {again.hex()}")
        return "accepted"
    try:
        if direction == "c2s":
            p: z.ParsedRequest | z.ParsedReply = z.parse_request(body)
        else:
            p = z.parse_reply(body, op)
    except z.JuteError:
        return "refused"
    if isinstance(p, z.ParsedRequest):  # the proxy reads these properties of every request
        _ = (p.paths, p.ephemeral, p.sub_ops)
        if p.error is not None:
            return "refused"
        again = z.encode_request(p.xid, p.op, p.body)[4:]
        p2: z.ParsedRequest | z.ParsedReply = z.parse_request(again)
    else:
        if p.error is not None:
            return "refused"
        if p.body is None and len(body) != z.ReplyHeader.LEN:
            return "refused"  # a reply to an unknown request: the header is all that was read
        again = z.encode_reply(p.xid, p.header.zxid, p.err, p.body)[4:]
        p2 = z.parse_reply(again, op)
    if len(again) != len(body) or p2.header != p.header or p2.body != p.body or p2.error is not None:
        raise WrongAcceptance(f"{direction} {body[:64].hex()} decoded as {p}, encodes to {again[:64].hex()}")
    return "accepted"
