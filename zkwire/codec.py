"""ZooKeeper client wire codec: Jute primitives, frames, handshake, headers, request and reply bodies.

Reference: /work/shared/design/zk-wire.md sections 1-5 (apache/zookeeper zookeeper.jute, ClientCnxn,
MultiOperationRecord, MultiResponse). Everything here is pure: bytes in, dataclasses out, and back.
Decoders are strict (a short or over-long body raises :class:`JuteError`), so a proxy that parses
a *copy* of each frame learns about protocol surprises instead of silently misreading them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

T = TypeVar("T")

# ---------------------------------------------------------------------------------------------
# Constants

JUTE_MAXBUFFER = 0xFFFFF  # jute.maxbuffer default (1 MiB - 1); the server's check is len > maxbuffer
FRAME_HEADER_LEN = 4
CONNECT_REQUEST_LEN = 45  # 44 without readOnly (very old clients)
CONNECT_RESPONSE_LEN = 37  # 36 without readOnly
STAT_LEN = 68
PASSWD_LEN = 16

# Special xids (zk-wire.md section 2).
XID_NOTIFICATION = -1
XID_PING = -2
XID_AUTH = -4
XID_SET_WATCHES = -8


class OpCode:
    """ZooDefs.OpCode."""

    NOTIFICATION = 0
    CREATE = 1
    DELETE = 2
    EXISTS = 3
    GET_DATA = 4
    SET_DATA = 5
    GET_ACL = 6
    SET_ACL = 7
    GET_CHILDREN = 8
    SYNC = 9
    PING = 11
    GET_CHILDREN2 = 12
    CHECK = 13
    MULTI = 14
    CREATE2 = 15
    RECONFIG = 16
    CHECK_WATCHES = 17
    REMOVE_WATCHES = 18
    CREATE_CONTAINER = 19
    DELETE_CONTAINER = 20
    CREATE_TTL = 21
    MULTI_READ = 22
    AUTH = 100
    SET_WATCHES = 101
    SASL = 102
    GET_EPHEMERALS = 103
    GET_ALL_CHILDREN_NUMBER = 104
    SET_WATCHES2 = 105
    ADD_WATCH = 106
    WHO_AM_I = 107
    CREATE_SESSION = -10
    CLOSE_SESSION = -11
    ERROR = -1


OP_NAMES: dict[int, str] = {
    0: "notification",
    1: "create",
    2: "delete",
    3: "exists",
    4: "getData",
    5: "setData",
    6: "getACL",
    7: "setACL",
    8: "getChildren",
    9: "sync",
    11: "ping",
    12: "getChildren2",
    13: "check",
    14: "multi",
    15: "create2",
    16: "reconfig",
    17: "checkWatches",
    18: "removeWatches",
    19: "createContainer",
    20: "deleteContainer",
    21: "createTTL",
    22: "multiRead",
    100: "auth",
    101: "setWatches",
    102: "sasl",
    103: "getEphemerals",
    104: "getAllChildrenNumber",
    105: "setWatches2",
    106: "addWatch",
    107: "whoAmI",
    -10: "createSession",
    -11: "closeSession",
    -1: "error",
}
OP_CODES: dict[str, int] = {name: code for code, name in OP_NAMES.items()}


def op_name(op: int | None) -> str | None:
    if op is None:
        return None
    return OP_NAMES.get(op, f"op{op}")


def op_code(name_or_code: str | int) -> int:
    """Resolve ``"multi"``/``"14"``/``14`` to 14. Raises ``KeyError`` for an unknown name."""
    if isinstance(name_or_code, int):
        return name_or_code
    s = name_or_code.strip()
    if s.lstrip("-").isdigit():
        return int(s)
    return OP_CODES[s]


class Err:
    """KeeperException.Code values."""

    OK = 0
    SYSTEM_ERROR = -1
    RUNTIME_INCONSISTENCY = -2
    DATA_INCONSISTENCY = -3
    CONNECTION_LOSS = -4
    MARSHALLING_ERROR = -5
    UNIMPLEMENTED = -6
    OPERATION_TIMEOUT = -7
    BAD_ARGUMENTS = -8
    NEW_CONFIG_NO_QUORUM = -13
    RECONFIG_IN_PROGRESS = -14
    UNKNOWN_SESSION = -12
    API_ERROR = -100
    NO_NODE = -101
    NO_AUTH = -102
    BAD_VERSION = -103
    NO_CHILDREN_FOR_EPHEMERALS = -108
    NODE_EXISTS = -110
    NOT_EMPTY = -111
    SESSION_EXPIRED = -112
    INVALID_CALLBACK = -113
    INVALID_ACL = -114
    AUTH_FAILED = -115
    SESSION_MOVED = -118
    NOT_READONLY = -119
    EPHEMERAL_ON_LOCAL_SESSION = -120
    NO_WATCHER = -121
    REQUEST_TIMEOUT = -122
    RECONFIG_DISABLED = -123
    SESSION_CLOSED_REQUIRE_SASL_AUTH = -124
    QUOTA_EXCEEDED = -125
    THROTTLED_OP = -127


ERR_NAMES: dict[int, str] = {
    v: k for k, v in vars(Err).items() if not k.startswith("_") and isinstance(v, int)
}


def err_name(code: int | None) -> str | None:
    if code is None:
        return None
    return ERR_NAMES.get(code, f"ERR{code}")


class CreateFlags:
    """CreateMode flag values (the ``flags`` int of a create)."""

    PERSISTENT = 0
    EPHEMERAL = 1
    PERSISTENT_SEQUENTIAL = 2
    EPHEMERAL_SEQUENTIAL = 3
    CONTAINER = 4
    PERSISTENT_WITH_TTL = 5
    PERSISTENT_SEQUENTIAL_WITH_TTL = 6


def is_ephemeral_flags(flags: int) -> bool:
    return flags in (CreateFlags.EPHEMERAL, CreateFlags.EPHEMERAL_SEQUENTIAL)


class Perms:
    READ = 1
    WRITE = 2
    CREATE = 4
    DELETE = 8
    ADMIN = 16
    ALL = 31


FOUR_LETTER_WORDS = frozenset(
    w.encode()
    for w in (
        "conf cons crst dirs dump envi gtmk ruok stmk srvr srst stat wchc wchp wchs mntr isro hash"
    ).split()
)


def is_four_letter_word(first4: bytes) -> bool:
    """True if the first four bytes of a connection are a four-letter word (run raw, not framed)."""
    return bytes(first4[:4]) in FOUR_LETTER_WORDS


# ---------------------------------------------------------------------------------------------
# Jute primitives


class JuteError(ValueError):
    """Malformed or truncated Jute data."""


_I = struct.Struct(">i")
_Q = struct.Struct(">q")


class Reader:
    """Sequential Jute reader over a bytes-like object."""

    __slots__ = ("buf", "pos")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.buf = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.pos = pos

    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def at_end(self) -> bool:
        return self.pos >= len(self.buf)

    def _need(self, n: int, what: str) -> None:
        if self.pos + n > len(self.buf):
            raise JuteError(f"truncated {what}: need {n} bytes at offset {self.pos}, have {self.remaining()}")

    def int(self) -> int:
        self._need(4, "int")
        (v,) = _I.unpack_from(self.buf, self.pos)
        self.pos += 4
        return v

    def long(self) -> int:
        self._need(8, "long")
        (v,) = _Q.unpack_from(self.buf, self.pos)
        self.pos += 8
        return v

    def bool(self) -> bool:
        self._need(1, "bool")
        v = self.buf[self.pos]
        self.pos += 1
        return v != 0

    def buffer(self) -> bytes | None:
        n = self.int()
        if n == -1:
            return None
        if n < -1:
            raise JuteError(f"negative buffer length {n} at offset {self.pos - 4}")
        self._need(n, "buffer")
        v = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return v

    def ustring(self) -> str | None:
        b = self.buffer()
        if b is None:
            return None
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JuteError(f"ustring is not UTF-8: {e}") from e

    def vector(self, item: Callable[[Reader], T]) -> list[T] | None:
        n = self.int()
        if n == -1:
            return None
        if n < -1:
            raise JuteError(f"negative vector count {n} at offset {self.pos - 4}")
        if n > self.remaining():  # every item is at least one byte: cheap sanity bound
            raise JuteError(f"vector count {n} exceeds remaining {self.remaining()} bytes")
        return [item(self) for _ in range(n)]

    def rest(self) -> bytes:
        v = bytes(self.buf[self.pos :])
        self.pos = len(self.buf)
        return v

    def expect_end(self, what: str) -> None:
        if not self.at_end():
            raise JuteError(f"{what}: {self.remaining()} unexpected trailing bytes")


class Writer:
    """Jute writer; ``getvalue()`` returns the bytes."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int(self, v: int) -> Writer:
        self.parts.append(_I.pack(v))
        return self

    def long(self, v: int) -> Writer:
        self.parts.append(_Q.pack(v))
        return self

    def bool(self, v: bool) -> Writer:
        self.parts.append(b"\x01" if v else b"\x00")
        return self

    def buffer(self, v: bytes | None) -> Writer:
        if v is None:
            return self.int(-1)
        self.int(len(v))
        self.parts.append(bytes(v))
        return self

    def ustring(self, v: str | None) -> Writer:
        return self.buffer(None if v is None else v.encode("utf-8"))

    def vector(self, items: list[T] | None, item: Callable[[Writer, T], Any]) -> Writer:
        if items is None:
            return self.int(-1)
        self.int(len(items))
        for it in items:
            item(self, it)
        return self

    def raw(self, b: bytes) -> Writer:
        self.parts.append(bytes(b))
        return self

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


def _w_ustring(w: Writer, s: str) -> None:
    w.ustring(s)


def _r_ustring(r: Reader) -> str:
    s = r.ustring()
    return "" if s is None else s


# ---------------------------------------------------------------------------------------------
# Frames


class FrameError(JuteError):
    """A length prefix outside [0, max_len]: a protocol error outside RAW mode."""


def frame(body: bytes) -> bytes:
    """Length-prefix one record body."""
    return _I.pack(len(body)) + body


def frame_length(prefix: bytes, max_len: int = JUTE_MAXBUFFER) -> int:
    if len(prefix) != 4:
        raise FrameError(f"frame length prefix must be 4 bytes, got {len(prefix)}")
    (n,) = _I.unpack(prefix)
    if n < 0 or n > max_len:
        raise FrameError(f"frame length {n} outside [0, {max_len}]")
    return n


class FrameDecoder:
    """Incremental frame splitter for byte streams: ``feed(data)`` returns complete frame bodies."""

    def __init__(self, max_len: int = JUTE_MAXBUFFER) -> None:
        self.max_len = max_len
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out: list[bytes] = []
        while len(self._buf) >= 4:
            n = frame_length(bytes(self._buf[:4]), self.max_len)
            if len(self._buf) < 4 + n:
                break
            out.append(bytes(self._buf[4 : 4 + n]))
            del self._buf[: 4 + n]
        return out

    @property
    def pending(self) -> int:
        return len(self._buf)


async def read_frame(reader: Any, max_len: int = JUTE_MAXBUFFER) -> tuple[bytes, bytes]:
    """Read one frame from an ``asyncio.StreamReader``: returns ``(prefix, body)``.

    Raises ``asyncio.IncompleteReadError`` at EOF and :class:`FrameError` on a bad length.
    """
    prefix = await reader.readexactly(4)
    n = frame_length(prefix, max_len)
    body = await reader.readexactly(n) if n else b""
    return prefix, body


# ---------------------------------------------------------------------------------------------
# Records


class Record:
    """Base for Jute records: ``encode()``/``decode(data)`` plus ``write(w)``/``read(r)``."""

    def write(self, w: Writer) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def read(cls, r: Reader) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self) -> bytes:
        w = Writer()
        self.write(w)
        return w.getvalue()

    @classmethod
    def decode(cls, data: bytes) -> Any:
        r = Reader(data)
        v = cls.read(r)
        r.expect_end(cls.__name__)
        return v


@dataclass(slots=True)
class ConnectRequest(Record):
    protocol_version: int = 0
    last_zxid_seen: int = 0
    timeout: int = 30000
    session_id: int = 0
    passwd: bytes | None = b"\x00" * PASSWD_LEN
    read_only: bool | None = False  # None: omitted (pre-3.4 peers, 44-byte body)

    def write(self, w: Writer) -> None:
        w.int(self.protocol_version).long(self.last_zxid_seen).int(self.timeout).long(self.session_id)
        w.buffer(self.passwd)
        if self.read_only is not None:
            w.bool(self.read_only)

    @classmethod
    def read(cls, r: Reader) -> ConnectRequest:
        pv, lz, to, sid = r.int(), r.long(), r.int(), r.long()
        pw = r.buffer()
        ro = r.bool() if not r.at_end() else None
        return cls(pv, lz, to, sid, pw, ro)


@dataclass(slots=True)
class ConnectResponse(Record):
    protocol_version: int = 0
    timeout: int = 0
    session_id: int = 0
    passwd: bytes | None = b"\x00" * PASSWD_LEN
    read_only: bool | None = False

    @property
    def expired(self) -> bool:
        """``timeOut <= 0``: the server refused the session (expired); it closes the socket next."""
        return self.timeout <= 0

    def write(self, w: Writer) -> None:
        w.int(self.protocol_version).int(self.timeout).long(self.session_id).buffer(self.passwd)
        if self.read_only is not None:
            w.bool(self.read_only)

    @classmethod
    def read(cls, r: Reader) -> ConnectResponse:
        pv, to, sid = r.int(), r.int(), r.long()
        pw = r.buffer()
        ro = r.bool() if not r.at_end() else None
        return cls(pv, to, sid, pw, ro)


@dataclass(slots=True)
class RequestHeader(Record):
    xid: int
    type: int

    LEN: ClassVar[int] = 8

    def write(self, w: Writer) -> None:
        w.int(self.xid).int(self.type)

    @classmethod
    def read(cls, r: Reader) -> RequestHeader:
        return cls(r.int(), r.int())


@dataclass(slots=True)
class ReplyHeader(Record):
    xid: int
    zxid: int = 0
    err: int = 0

    LEN: ClassVar[int] = 16

    def write(self, w: Writer) -> None:
        w.int(self.xid).long(self.zxid).int(self.err)

    @classmethod
    def read(cls, r: Reader) -> ReplyHeader:
        return cls(r.int(), r.long(), r.int())


@dataclass(slots=True)
class Stat(Record):
    czxid: int = 0
    mzxid: int = 0
    ctime: int = 0
    mtime: int = 0
    version: int = 0
    cversion: int = 0
    aversion: int = 0
    ephemeral_owner: int = 0
    data_length: int = 0
    num_children: int = 0
    pzxid: int = 0

    # Byte offset of ephemeralOwner inside the 68-byte Stat: 4 longs + 3 ints = 44.
    EPHEMERAL_OWNER_OFFSET: ClassVar[int] = 44

    def write(self, w: Writer) -> None:
        w.long(self.czxid).long(self.mzxid).long(self.ctime).long(self.mtime)
        w.int(self.version).int(self.cversion).int(self.aversion).long(self.ephemeral_owner)
        w.int(self.data_length).int(self.num_children).long(self.pzxid)

    @classmethod
    def read(cls, r: Reader) -> Stat:
        return cls(
            r.long(), r.long(), r.long(), r.long(), r.int(), r.int(), r.int(), r.long(), r.int(), r.int(),
            r.long(),
        )


@dataclass(slots=True)
class ACL(Record):
    perms: int = Perms.ALL
    scheme: str = "world"
    id: str = "anyone"

    def write(self, w: Writer) -> None:
        w.int(self.perms).ustring(self.scheme).ustring(self.id)

    @classmethod
    def read(cls, r: Reader) -> ACL:
        return cls(r.int(), _r_ustring(r), _r_ustring(r))


OPEN_ACL_UNSAFE: list[ACL] = [ACL(Perms.ALL, "world", "anyone")]


def _w_acl(w: Writer, a: ACL) -> None:
    a.write(w)


# --- requests ---------------------------------------------------------------------------------


@dataclass(slots=True)
class CreateRequest(Record):
    """create (1), create2 (15), createContainer (19); createTTL (21) when ``ttl`` is not None."""

    path: str
    data: bytes | None = b""
    acl: list[ACL] | None = field(default_factory=lambda: list(OPEN_ACL_UNSAFE))
    flags: int = 0
    ttl: int | None = None

    @property
    def ephemeral(self) -> bool:
        return is_ephemeral_flags(self.flags)

    def write(self, w: Writer) -> None:
        w.ustring(self.path).buffer(self.data).vector(self.acl, _w_acl).int(self.flags)
        if self.ttl is not None:
            w.long(self.ttl)

    @classmethod
    def read(cls, r: Reader) -> CreateRequest:
        return cls(_r_ustring(r), r.buffer(), r.vector(ACL.read), r.int())

    @classmethod
    def read_ttl(cls, r: Reader) -> CreateRequest:
        c = cls.read(r)
        c.ttl = r.long()
        return c


@dataclass(slots=True)
class PathVersionRequest(Record):
    """delete (2), check (13), deleteContainer-less shapes: ``{path, version}``."""

    path: str
    version: int = -1

    def write(self, w: Writer) -> None:
        w.ustring(self.path).int(self.version)

    @classmethod
    def read(cls, r: Reader) -> PathVersionRequest:
        return cls(_r_ustring(r), r.int())


class DeleteRequest(PathVersionRequest):
    __slots__ = ()


class CheckVersionRequest(PathVersionRequest):
    __slots__ = ()


@dataclass(slots=True)
class PathWatchRequest(Record):
    """exists (3), getData (4), getChildren (8), getChildren2 (12): ``{path, watch}``."""

    path: str
    watch: bool = False

    def write(self, w: Writer) -> None:
        w.ustring(self.path).bool(self.watch)

    @classmethod
    def read(cls, r: Reader) -> PathWatchRequest:
        return cls(_r_ustring(r), r.bool())


class ExistsRequest(PathWatchRequest):
    __slots__ = ()


class GetDataRequest(PathWatchRequest):
    __slots__ = ()


class GetChildrenRequest(PathWatchRequest):
    __slots__ = ()


@dataclass(slots=True)
class PathRequest(Record):
    """sync (9), getACL (6), getEphemerals (103), getAllChildrenNumber (104), deleteContainer (20)."""

    path: str

    def write(self, w: Writer) -> None:
        w.ustring(self.path)

    @classmethod
    def read(cls, r: Reader) -> PathRequest:
        return cls(_r_ustring(r))


@dataclass(slots=True)
class SetDataRequest(Record):
    path: str
    data: bytes | None = b""
    version: int = -1

    def write(self, w: Writer) -> None:
        w.ustring(self.path).buffer(self.data).int(self.version)

    @classmethod
    def read(cls, r: Reader) -> SetDataRequest:
        return cls(_r_ustring(r), r.buffer(), r.int())


@dataclass(slots=True)
class SetACLRequest(Record):
    path: str
    acl: list[ACL] | None = field(default_factory=lambda: list(OPEN_ACL_UNSAFE))
    version: int = -1

    def write(self, w: Writer) -> None:
        w.ustring(self.path).vector(self.acl, _w_acl).int(self.version)

    @classmethod
    def read(cls, r: Reader) -> SetACLRequest:
        return cls(_r_ustring(r), r.vector(ACL.read), r.int())


@dataclass(slots=True)
class PathModeRequest(Record):
    """addWatch (106) ``{path, mode}``; checkWatches/removeWatches (17/18) ``{path, type}``."""

    path: str
    mode: int = 0

    def write(self, w: Writer) -> None:
        w.ustring(self.path).int(self.mode)

    @classmethod
    def read(cls, r: Reader) -> PathModeRequest:
        return cls(_r_ustring(r), r.int())


@dataclass(slots=True)
class AuthPacket(Record):
    type: int = 0
    scheme: str = "digest"
    auth: bytes | None = b""

    def write(self, w: Writer) -> None:
        w.int(self.type).ustring(self.scheme).buffer(self.auth)

    @classmethod
    def read(cls, r: Reader) -> AuthPacket:
        return cls(r.int(), _r_ustring(r), r.buffer())


@dataclass(slots=True)
class SetWatches(Record):
    """setWatches (101); setWatches2 (105) adds the two persistent lists (``v2=True``)."""

    relative_zxid: int = 0
    data_watches: list[str] = field(default_factory=list)
    exist_watches: list[str] = field(default_factory=list)
    child_watches: list[str] = field(default_factory=list)
    persistent_watches: list[str] | None = None
    persistent_recursive_watches: list[str] | None = None

    @property
    def v2(self) -> bool:
        return self.persistent_watches is not None

    @property
    def paths(self) -> list[str]:
        out = self.data_watches + self.exist_watches + self.child_watches
        return out + (self.persistent_watches or []) + (self.persistent_recursive_watches or [])

    def write(self, w: Writer) -> None:
        w.long(self.relative_zxid)
        for lst in (self.data_watches, self.exist_watches, self.child_watches):
            w.vector(lst, _w_ustring)
        if self.v2:
            w.vector(self.persistent_watches, _w_ustring)
            w.vector(self.persistent_recursive_watches or [], _w_ustring)

    @classmethod
    def read(cls, r: Reader) -> SetWatches:
        z = r.long()
        d, e, c = (r.vector(_r_ustring) or [] for _ in range(3))
        return cls(z, d, e, c)

    @classmethod
    def read2(cls, r: Reader) -> SetWatches:
        s = cls.read(r)
        s.persistent_watches = r.vector(_r_ustring) or []
        s.persistent_recursive_watches = r.vector(_r_ustring) or []
        return s


@dataclass(slots=True)
class SaslRequest(Record):
    token: bytes | None = b""

    def write(self, w: Writer) -> None:
        w.buffer(self.token)

    @classmethod
    def read(cls, r: Reader) -> SaslRequest:
        return cls(r.buffer())


@dataclass(slots=True)
class ReconfigRequest(Record):
    joining_servers: str | None = None
    leaving_servers: str | None = None
    new_members: str | None = None
    cur_config_id: int = -1

    def write(self, w: Writer) -> None:
        w.ustring(self.joining_servers).ustring(self.leaving_servers).ustring(self.new_members)
        w.long(self.cur_config_id)

    @classmethod
    def read(cls, r: Reader) -> ReconfigRequest:
        return cls(r.ustring(), r.ustring(), r.ustring(), r.long())


@dataclass(slots=True)
class EmptyRecord(Record):
    """ping (11), closeSession (-11), whoAmI (107) requests; delete/check/closeSession replies."""

    def write(self, w: Writer) -> None:
        return None

    @classmethod
    def read(cls, r: Reader) -> EmptyRecord:
        return cls()


@dataclass(slots=True)
class MultiHeader(Record):
    type: int
    done: bool = False
    err: int = -1

    def write(self, w: Writer) -> None:
        w.int(self.type).bool(self.done).int(self.err)

    @classmethod
    def read(cls, r: Reader) -> MultiHeader:
        return cls(r.int(), r.bool(), r.int())


MULTI_TERMINATOR = MultiHeader(-1, True, -1)

# Body record class for each request opcode (and multi sub-op type).
REQUEST_TYPES: dict[int, Callable[[Reader], Record]] = {
    OpCode.CREATE: CreateRequest.read,
    OpCode.CREATE2: CreateRequest.read,
    OpCode.CREATE_CONTAINER: CreateRequest.read,
    OpCode.CREATE_TTL: CreateRequest.read_ttl,
    OpCode.DELETE: DeleteRequest.read,
    OpCode.DELETE_CONTAINER: PathRequest.read,
    OpCode.EXISTS: ExistsRequest.read,
    OpCode.GET_DATA: GetDataRequest.read,
    OpCode.SET_DATA: SetDataRequest.read,
    OpCode.GET_ACL: PathRequest.read,
    OpCode.SET_ACL: SetACLRequest.read,
    OpCode.GET_CHILDREN: GetChildrenRequest.read,
    OpCode.GET_CHILDREN2: GetChildrenRequest.read,
    OpCode.SYNC: PathRequest.read,
    OpCode.PING: EmptyRecord.read,
    OpCode.CHECK: CheckVersionRequest.read,
    OpCode.RECONFIG: ReconfigRequest.read,
    OpCode.CHECK_WATCHES: PathModeRequest.read,
    OpCode.REMOVE_WATCHES: PathModeRequest.read,
    OpCode.AUTH: AuthPacket.read,
    OpCode.SET_WATCHES: SetWatches.read,
    OpCode.SET_WATCHES2: SetWatches.read2,
    OpCode.SASL: SaslRequest.read,
    OpCode.GET_EPHEMERALS: PathRequest.read,
    OpCode.GET_ALL_CHILDREN_NUMBER: PathRequest.read,
    OpCode.ADD_WATCH: PathModeRequest.read,
    OpCode.WHO_AM_I: EmptyRecord.read,
    OpCode.CLOSE_SESSION: EmptyRecord.read,
}


@dataclass(slots=True)
class MultiRequest(Record):
    """multi (14) / multiRead (22): ``ops`` is a list of ``(type, record)``."""

    ops: list[tuple[int, Record]] = field(default_factory=list)

    def write(self, w: Writer) -> None:
        for t, rec in self.ops:
            MultiHeader(t, False, -1).write(w)
            rec.write(w)
        MULTI_TERMINATOR.write(w)

    @classmethod
    def read(cls, r: Reader) -> MultiRequest:
        ops: list[tuple[int, Record]] = []
        while True:
            h = MultiHeader.read(r)
            if h.done:
                return cls(ops)
            reader = REQUEST_TYPES.get(h.type)
            if reader is None:
                raise JuteError(f"multi sub-op type {h.type} ({op_name(h.type)}) is not readable")
            ops.append((h.type, reader(r)))


REQUEST_TYPES[OpCode.MULTI] = MultiRequest.read
REQUEST_TYPES[OpCode.MULTI_READ] = MultiRequest.read


# --- replies ----------------------------------------------------------------------------------


@dataclass(slots=True)
class PathResponse(Record):
    """create (1), sync (9) replies."""

    path: str

    def write(self, w: Writer) -> None:
        w.ustring(self.path)

    @classmethod
    def read(cls, r: Reader) -> PathResponse:
        return cls(_r_ustring(r))


@dataclass(slots=True)
class Create2Response(Record):
    path: str
    stat: Stat = field(default_factory=Stat)

    def write(self, w: Writer) -> None:
        w.ustring(self.path)
        self.stat.write(w)

    @classmethod
    def read(cls, r: Reader) -> Create2Response:
        return cls(_r_ustring(r), Stat.read(r))


@dataclass(slots=True)
class StatResponse(Record):
    """exists (3), setData (5), setACL (7) replies."""

    stat: Stat = field(default_factory=Stat)

    def write(self, w: Writer) -> None:
        self.stat.write(w)

    @classmethod
    def read(cls, r: Reader) -> StatResponse:
        return cls(Stat.read(r))


@dataclass(slots=True)
class GetDataResponse(Record):
    data: bytes | None = b""
    stat: Stat = field(default_factory=Stat)

    def write(self, w: Writer) -> None:
        w.buffer(self.data)
        self.stat.write(w)

    @classmethod
    def read(cls, r: Reader) -> GetDataResponse:
        return cls(r.buffer(), Stat.read(r))


@dataclass(slots=True)
class GetACLResponse(Record):
    acl: list[ACL] | None = field(default_factory=list)
    stat: Stat = field(default_factory=Stat)

    def write(self, w: Writer) -> None:
        w.vector(self.acl, _w_acl)
        self.stat.write(w)

    @classmethod
    def read(cls, r: Reader) -> GetACLResponse:
        return cls(r.vector(ACL.read), Stat.read(r))


@dataclass(slots=True)
class GetChildrenResponse(Record):
    children: list[str] | None = field(default_factory=list)

    def write(self, w: Writer) -> None:
        w.vector(self.children, _w_ustring)

    @classmethod
    def read(cls, r: Reader) -> GetChildrenResponse:
        return cls(r.vector(_r_ustring))


@dataclass(slots=True)
class GetChildren2Response(Record):
    children: list[str] | None = field(default_factory=list)
    stat: Stat = field(default_factory=Stat)

    def write(self, w: Writer) -> None:
        w.vector(self.children, _w_ustring)
        self.stat.write(w)

    @classmethod
    def read(cls, r: Reader) -> GetChildren2Response:
        return cls(r.vector(_r_ustring), Stat.read(r))


@dataclass(slots=True)
class ErrorResult(Record):
    """A multi sub-result of type -1."""

    err: int

    def write(self, w: Writer) -> None:
        w.int(self.err)

    @classmethod
    def read(cls, r: Reader) -> ErrorResult:
        return cls(r.int())


@dataclass(slots=True)
class WatcherEvent(Record):
    """A notification body (after ``ReplyHeader(-1, zxid, 0)``)."""

    type: int
    state: int = 3
    path: str | None = ""

    TYPE_NAMES: ClassVar[dict[int, str]] = {
        -1: "None", 1: "NodeCreated", 2: "NodeDeleted", 3: "NodeDataChanged", 4: "NodeChildrenChanged",
        5: "DataWatchRemoved", 6: "ChildWatchRemoved", 7: "PersistentWatchRemoved",
    }

    @property
    def type_name(self) -> str:
        return self.TYPE_NAMES.get(self.type, f"type{self.type}")

    def write(self, w: Writer) -> None:
        w.int(self.type).int(self.state).ustring(self.path)

    @classmethod
    def read(cls, r: Reader) -> WatcherEvent:
        return cls(r.int(), r.int(), r.ustring())


@dataclass(slots=True)
class WhoAmIResponse(Record):
    client_info: list[tuple[str, str]] = field(default_factory=list)

    def write(self, w: Writer) -> None:
        w.vector(self.client_info, lambda w_, ci: w_.ustring(ci[0]).ustring(ci[1]))

    @classmethod
    def read(cls, r: Reader) -> WhoAmIResponse:
        return cls(r.vector(lambda r_: (_r_ustring(r_), _r_ustring(r_))) or [])


@dataclass(slots=True)
class GetAllChildrenNumberResponse(Record):
    total: int = 0

    def write(self, w: Writer) -> None:
        w.int(self.total)

    @classmethod
    def read(cls, r: Reader) -> GetAllChildrenNumberResponse:
        return cls(r.int())


@dataclass(slots=True)
class GetEphemeralsResponse(Record):
    ephemerals: list[str] | None = field(default_factory=list)

    def write(self, w: Writer) -> None:
        w.vector(self.ephemerals, _w_ustring)

    @classmethod
    def read(cls, r: Reader) -> GetEphemeralsResponse:
        return cls(r.vector(_r_ustring))


@dataclass(slots=True)
class SaslResponse(Record):
    token: bytes | None = b""

    def write(self, w: Writer) -> None:
        w.buffer(self.token)

    @classmethod
    def read(cls, r: Reader) -> SaslResponse:
        return cls(r.buffer())


# Successful reply body for each request opcode (multi sub-result types use the same table).
REPLY_TYPES: dict[int, Callable[[Reader], Record]] = {
    OpCode.CREATE: PathResponse.read,
    OpCode.CREATE2: Create2Response.read,
    OpCode.CREATE_CONTAINER: Create2Response.read,
    OpCode.CREATE_TTL: Create2Response.read,
    OpCode.DELETE: EmptyRecord.read,
    OpCode.DELETE_CONTAINER: EmptyRecord.read,
    OpCode.EXISTS: StatResponse.read,
    OpCode.GET_DATA: GetDataResponse.read,
    OpCode.SET_DATA: StatResponse.read,
    OpCode.GET_ACL: GetACLResponse.read,
    OpCode.SET_ACL: StatResponse.read,
    OpCode.GET_CHILDREN: GetChildrenResponse.read,
    OpCode.GET_CHILDREN2: GetChildren2Response.read,
    OpCode.SYNC: PathResponse.read,
    OpCode.PING: EmptyRecord.read,
    OpCode.CHECK: EmptyRecord.read,
    OpCode.CHECK_WATCHES: EmptyRecord.read,
    OpCode.REMOVE_WATCHES: EmptyRecord.read,
    OpCode.AUTH: EmptyRecord.read,
    OpCode.SET_WATCHES: EmptyRecord.read,
    OpCode.SET_WATCHES2: EmptyRecord.read,
    OpCode.SASL: SaslResponse.read,
    OpCode.GET_EPHEMERALS: GetEphemeralsResponse.read,
    OpCode.GET_ALL_CHILDREN_NUMBER: GetAllChildrenNumberResponse.read,
    OpCode.ADD_WATCH: EmptyRecord.read,
    OpCode.WHO_AM_I: WhoAmIResponse.read,
    OpCode.CLOSE_SESSION: EmptyRecord.read,
    OpCode.RECONFIG: GetDataResponse.read,
    OpCode.ERROR: ErrorResult.read,
}


@dataclass(slots=True)
class MultiResponse(Record):
    """multi / multiRead reply: ``results`` is a list of ``(type, record)``; type -1 is an ErrorResult.

    A failed multi keeps header ``err=0`` and turns every result into type -1: earlier ops carry 0,
    the failing op its code, later ops -2 (RuntimeInconsistency).
    """

    results: list[tuple[int, Record]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(t == OpCode.ERROR for t, _ in self.results)

    @property
    def errors(self) -> list[int]:
        return [rec.err if isinstance(rec, ErrorResult) else 0 for _, rec in self.results]

    @property
    def first_error(self) -> int:
        """The code of the op that failed (first non-OK, non-RuntimeInconsistency), or 0."""
        errs = [e for e in self.errors if e not in (Err.OK, Err.RUNTIME_INCONSISTENCY)]
        return errs[0] if errs else (Err.RUNTIME_INCONSISTENCY if self.failed else Err.OK)

    @property
    def created_paths(self) -> list[str]:
        return [rec.path for _, rec in self.results if isinstance(rec, (PathResponse, Create2Response))]

    def write(self, w: Writer) -> None:
        for t, rec in self.results:
            err = rec.err if isinstance(rec, ErrorResult) else 0
            MultiHeader(t, False, err).write(w)
            rec.write(w)
        MULTI_TERMINATOR.write(w)

    @classmethod
    def read(cls, r: Reader) -> MultiResponse:
        results: list[tuple[int, Record]] = []
        while True:
            h = MultiHeader.read(r)
            if h.done:
                return cls(results)
            reader = REPLY_TYPES.get(h.type)
            if reader is None:
                raise JuteError(f"multi result type {h.type} ({op_name(h.type)}) is not readable")
            results.append((h.type, reader(r)))


REPLY_TYPES[OpCode.MULTI] = MultiResponse.read
REPLY_TYPES[OpCode.MULTI_READ] = MultiResponse.read


# ---------------------------------------------------------------------------------------------
# Whole messages: encode helpers and tolerant parsers for the proxy


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


def parse_request(body: bytes) -> ParsedRequest:
    """Parse a request frame body (after the handshake). Raises JuteError only for a short header."""
    r = Reader(body)
    h = RequestHeader.read(r)
    reader = REQUEST_TYPES.get(h.type)
    if reader is None:
        return ParsedRequest(h, None, f"unknown opcode {h.type}")
    try:
        rec = reader(r)
        r.expect_end(f"{op_name(h.type)} request")
    except JuteError as e:
        return ParsedRequest(h, None, str(e))
    return ParsedRequest(h, rec)


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
    ``err != 0`` has no body. Raises JuteError only for a short header.
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
    try:
        rec = reader(r)
        r.expect_end(f"{op_name(op)} reply")
    except JuteError as e:
        return ParsedReply(h, None, str(e))
    return ParsedReply(h, rec)


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
