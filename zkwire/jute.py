"""Jute, ZooKeeper's serialization: the primitives and the record base class.

Big-endian ``int`` (4 bytes), ``long`` (8), ``bool`` (1), ``buffer``/``ustring`` (int length, -1 =
null, then bytes), ``vector`` (int count, -1 = null, then items), as ``BinaryInputArchive`` and
``BinaryOutputArchive`` read and write them (apache/zookeeper ``zookeeper-jute/src/main/java/org/
apache/jute/``). Pure and strict: a short or over-long body raises :class:`JuteError`, so a proxy that
parses a *copy* of each frame learns about protocol surprises instead of silently misreading them.

Total: decoding any bytes returns a record or raises :class:`JuteError` (nothing else: no
``struct.error``, ``UnicodeDecodeError``, ``RecursionError``). Every length is checked against the
bytes that are left before anything is allocated, and nothing recurses on the input: the one
nested shape, a multi, is flat in ZooKeeper, and a multi inside a multi is a :class:`ProtocolError`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class JuteError(ValueError):
    """Malformed or truncated Jute data: the one exception a decode of arbitrary bytes raises."""


class ProtocolError(JuteError):
    """Bytes no ZooKeeper peer sends and ZooKeeper itself refuses by closing the connection: a frame
    length outside its limit, a multi inside a multi (``MultiOperationRecord``/``MultiResponse``
    throw "Invalid type of op"). The message parsers raise it rather than report it in ``.error``,
    so a proxy closes the connection (a ``protocol_error``) instead of forwarding the frame."""


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


def write_str(w: Writer, s: str) -> None:
    """A ustring that is never null (paths, children): the vector item writer."""
    w.ustring(s)


def read_str(r: Reader) -> str:
    """A ustring where null reads as "" (paths, children): the vector item reader."""
    s = r.ustring()
    return "" if s is None else s



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

