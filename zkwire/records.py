"""Jute records shared by requests and replies: the handshake, the headers, ``Stat``, ``ACL``, the
empty body and the multi header.

Field order and types follow ``zookeeper-jute/src/main/resources/zookeeper.jute`` (apache/zookeeper):
``ConnectRequest``/``ConnectResponse`` (a trailing ``readOnly`` bool that pre-3.4 peers omit),
``RequestHeader``, ``ReplyHeader``, ``Stat``, ``ACL``/``Id``, ``MultiHeader``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from zkwire.constants import PASSWD_LEN, OpCode, Perms, op_name
from zkwire.jute import JuteError, ProtocolError, Reader, Record, Writer, read_str


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
        return cls(r.int(), read_str(r), read_str(r))


OPEN_ACL_UNSAFE: list[ACL] = [ACL(Perms.ALL, "world", "anyone")]


def write_acl(w: Writer, a: ACL) -> None:
    """The vector item writer for ACL lists."""
    a.write(w)


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


def write_multi(w: Writer, items: list[tuple[int, Record]], err: Callable[[Record], int]) -> None:
    """A multi body: ``(MultiHeader(type, false, err(record)), record)*`` then the done header."""
    for t, rec in items:
        MultiHeader(t, False, err(rec)).write(w)
        rec.write(w)
    MULTI_TERMINATOR.write(w)


MULTI_TYPES = frozenset((OpCode.MULTI, OpCode.MULTI_READ))


def read_multi(r: Reader, readers: Mapping[int, Callable[[Reader], Record]], what: str) -> list[tuple[int, Record]]:
    """A multi body up to its done header; ``readers`` maps each item's type to its record.

    A loop, never a recursion: ZooKeeper's multi is flat, so an item that is itself a multi is a
    :class:`ProtocolError` (a frame of headers nested in headers would otherwise recurse once per
    9 bytes and blow the stack). Every item header takes 9 bytes, so the item count is bounded by
    the frame.
    """
    items: list[tuple[int, Record]] = []
    while True:
        h = MultiHeader.read(r)
        if h.done:
            return items
        if h.type in MULTI_TYPES:
            raise ProtocolError(f"{what} {len(items)} is a nested {op_name(h.type)}: ZooKeeper's multi is flat")
        reader = readers.get(h.type)
        if reader is None:
            raise JuteError(f"{what} type {h.type} ({op_name(h.type)}) is not readable")
        items.append((h.type, reader(r)))
