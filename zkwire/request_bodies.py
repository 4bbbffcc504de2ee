"""Request bodies, one Jute record per opcode shape, and the opcode -> reader table.

Shapes follow ``zookeeper-jute/src/main/resources/zookeeper.jute`` (apache/zookeeper):
``CreateRequest``/``CreateTTLRequest``, ``DeleteRequest``, ``ExistsRequest``, ``GetDataRequest``,
``SetDataRequest``, ``SetACLRequest``, ``CheckVersionRequest``, ``SetWatches``/``SetWatches2``,
``AuthPacket``, ``ReconfigRequest``; a multi is ``(MultiHeader, body)*`` closed by a done header
(``MultiOperationRecord.java``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from zkwire.constants import OpCode, is_ephemeral_flags
from zkwire.jute import Reader, Record, Writer, read_str, write_str
from zkwire.records import ACL, OPEN_ACL_UNSAFE, EmptyRecord, read_multi, write_acl, write_multi


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
        w.ustring(self.path).buffer(self.data).vector(self.acl, write_acl).int(self.flags)
        if self.ttl is not None:
            w.long(self.ttl)

    @classmethod
    def read(cls, r: Reader) -> CreateRequest:
        return cls(read_str(r), r.buffer(), r.vector(ACL.read), r.int())

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
        return cls(read_str(r), r.int())


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
        return cls(read_str(r), r.bool())


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
        return cls(read_str(r))


@dataclass(slots=True)
class SetDataRequest(Record):
    path: str
    data: bytes | None = b""
    version: int = -1

    def write(self, w: Writer) -> None:
        w.ustring(self.path).buffer(self.data).int(self.version)

    @classmethod
    def read(cls, r: Reader) -> SetDataRequest:
        return cls(read_str(r), r.buffer(), r.int())


@dataclass(slots=True)
class SetACLRequest(Record):
    path: str
    acl: list[ACL] | None = field(default_factory=lambda: list(OPEN_ACL_UNSAFE))
    version: int = -1

    def write(self, w: Writer) -> None:
        w.ustring(self.path).vector(self.acl, write_acl).int(self.version)

    @classmethod
    def read(cls, r: Reader) -> SetACLRequest:
        return cls(read_str(r), r.vector(ACL.read), r.int())


@dataclass(slots=True)
class PathModeRequest(Record):
    """addWatch (106) ``{path, mode}``; checkWatches/removeWatches (17/18) ``{path, type}``."""

    path: str
    mode: int = 0

    def write(self, w: Writer) -> None:
        w.ustring(self.path).int(self.mode)

    @classmethod
    def read(cls, r: Reader) -> PathModeRequest:
        return cls(read_str(r), r.int())


@dataclass(slots=True)
class AuthPacket(Record):
    type: int = 0
    scheme: str = "digest"
    auth: bytes | None = b""

    def write(self, w: Writer) -> None:
        w.int(self.type).ustring(self.scheme).buffer(self.auth)

    @classmethod
    def read(cls, r: Reader) -> AuthPacket:
        return cls(r.int(), read_str(r), r.buffer())


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
            w.vector(lst, write_str)
        if self.v2:
            w.vector(self.persistent_watches, write_str)
            w.vector(self.persistent_recursive_watches or [], write_str)

    @classmethod
    def read(cls, r: Reader) -> SetWatches:
        z = r.long()
        d, e, c = (r.vector(read_str) or [] for _ in range(3))
        return cls(z, d, e, c)

    @classmethod
    def read2(cls, r: Reader) -> SetWatches:
        s = cls.read(r)
        s.persistent_watches = r.vector(read_str) or []
        s.persistent_recursive_watches = r.vector(read_str) or []
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
        write_multi(w, self.ops, lambda rec: -1)

    @classmethod
    def read(cls, r: Reader) -> MultiRequest:
        return cls(read_multi(r, REQUEST_TYPES, "multi sub-op"))


REQUEST_TYPES[OpCode.MULTI] = MultiRequest.read
REQUEST_TYPES[OpCode.MULTI_READ] = MultiRequest.read
