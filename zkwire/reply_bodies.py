"""Reply bodies, one Jute record per reply shape, and the opcode -> reader table.

Shapes follow ``zookeeper-jute/src/main/resources/zookeeper.jute`` (apache/zookeeper):
``CreateResponse``, ``Create2Response``, ``SetDataResponse``/``ExistsResponse`` (a ``Stat``),
``GetDataResponse``, ``GetACLResponse``, ``GetChildren(2)Response``, ``ErrorResponse``,
``WatcherEvent``, ``WhoAmIResponse``; a multi reply is ``(MultiHeader, body)*`` closed by a done
header (``MultiResponse.java``). A reply with ``err != 0`` in its header has no body at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from zkwire.constants import Err, OpCode
from zkwire.jute import Reader, Record, Writer, read_str, write_str
from zkwire.records import ACL, EmptyRecord, Stat, read_multi, write_acl, write_multi


@dataclass(slots=True)
class PathResponse(Record):
    """create (1), sync (9) replies."""

    path: str

    def write(self, w: Writer) -> None:
        w.ustring(self.path)

    @classmethod
    def read(cls, r: Reader) -> PathResponse:
        return cls(read_str(r))


@dataclass(slots=True)
class Create2Response(Record):
    path: str
    stat: Stat = field(default_factory=Stat)

    def write(self, w: Writer) -> None:
        w.ustring(self.path)
        self.stat.write(w)

    @classmethod
    def read(cls, r: Reader) -> Create2Response:
        return cls(read_str(r), Stat.read(r))


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
        w.vector(self.acl, write_acl)
        self.stat.write(w)

    @classmethod
    def read(cls, r: Reader) -> GetACLResponse:
        return cls(r.vector(ACL.read), Stat.read(r))


@dataclass(slots=True)
class GetChildrenResponse(Record):
    children: list[str] | None = field(default_factory=list)

    def write(self, w: Writer) -> None:
        w.vector(self.children, write_str)

    @classmethod
    def read(cls, r: Reader) -> GetChildrenResponse:
        return cls(r.vector(read_str))


@dataclass(slots=True)
class GetChildren2Response(Record):
    children: list[str] | None = field(default_factory=list)
    stat: Stat = field(default_factory=Stat)

    def write(self, w: Writer) -> None:
        w.vector(self.children, write_str)
        self.stat.write(w)

    @classmethod
    def read(cls, r: Reader) -> GetChildren2Response:
        return cls(r.vector(read_str), Stat.read(r))


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
class ErrorResponse(Record):
    """``ErrorResponse { int err }``: the body of an addWatch (106) reply. ``FinalRequestProcessor``
    answers addWatch with ``new ErrorResponse(0)``, and ``ZooKeeper.addWatch`` reads one."""

    err: int

    def write(self, w: Writer) -> None:
        w.int(self.err)

    @classmethod
    def read(cls, r: Reader) -> ErrorResponse:
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
        return cls(r.vector(lambda r_: (read_str(r_), read_str(r_))) or [])


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
        w.vector(self.ephemerals, write_str)

    @classmethod
    def read(cls, r: Reader) -> GetEphemeralsResponse:
        return cls(r.vector(read_str))


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
    OpCode.ADD_WATCH: ErrorResponse.read,
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
        write_multi(w, self.results, lambda rec: rec.err if isinstance(rec, ErrorResult) else 0)

    @classmethod
    def read(cls, r: Reader) -> MultiResponse:
        return cls(read_multi(r, REPLY_TYPES, "multi result"))


REPLY_TYPES[OpCode.MULTI] = MultiResponse.read
REPLY_TYPES[OpCode.MULTI_READ] = MultiResponse.read
