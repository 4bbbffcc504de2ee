"""Length-prefixed framing: a 4-byte big-endian signed length, then that many bytes of body.

The project's one implementation of it. ZooKeeper frames every client and server message this way
(``ClientCnxnSocketNIO`` and ``NIOServerCnxn`` in apache/zookeeper read a 4-byte length, reject one
outside ``[0, jute.maxbuffer]``, then read the body); the agents' control plane reuses the same
framing around a JSON body (``agent.frames``). One length check, three readers: ``FrameDecoder``
for bytes fed in arbitrary chunks, ``read_frame`` for asyncio streams, ``recv_frame`` for blocking
sockets.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from zkwire.constants import JUTE_MAXBUFFER
from zkwire.jute import ProtocolError

_LEN = struct.Struct(">i")


class FrameError(ProtocolError):
    """A length prefix outside [0, max_len] (a protocol error outside RAW mode), or a body its
    decoder rejects."""


def frame(body: bytes, max_len: int | None = None) -> bytes:
    """Length-prefix one body; with ``max_len``, refuse a body the receiver would reject."""
    if max_len is not None and len(body) > max_len:
        raise FrameError(f"frame of {len(body)} bytes exceeds {max_len}")
    return _LEN.pack(len(body)) + body


def frame_length(prefix: bytes, max_len: int = JUTE_MAXBUFFER) -> int:
    if len(prefix) != 4:
        raise FrameError(f"frame length prefix must be 4 bytes, got {len(prefix)}")
    (n,) = _LEN.unpack(prefix)
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
        """Bytes buffered towards an incomplete frame."""
        return len(self._buf)


async def read_frame(reader: Any, max_len: int = JUTE_MAXBUFFER, prefix: bytes | None = None) -> tuple[bytes, bytes]:
    """Read one frame from an ``asyncio.StreamReader``: returns ``(prefix, body)``.

    ``prefix``: the four length bytes when the caller has already read them (the proxy peeks at a
    connection's first four bytes to tell a four-letter word from a framed handshake).
    Raises ``asyncio.IncompleteReadError`` at EOF and :class:`FrameError` on a bad length.
    """
    if prefix is None:
        prefix = await reader.readexactly(4)
    n = frame_length(prefix, max_len)
    body = await reader.readexactly(n) if n else b""
    return prefix, body


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            if chunks:
                raise ConnectionError(f"peer closed mid-frame after {len(chunks)} of {n} bytes")
            return None
        chunks += chunk
    return bytes(chunks)


def recv_frame(sock: socket.socket, max_len: int = JUTE_MAXBUFFER) -> bytes | None:
    """One frame body from a blocking socket, or None on a clean EOF before its first byte.

    EOF inside a frame raises ``ConnectionError``; a bad length raises :class:`FrameError`.
    """
    head = _recv_exact(sock, 4)
    if head is None:
        return None
    n = frame_length(head, max_len)
    body = _recv_exact(sock, n) if n else b""
    if body is None:
        raise ConnectionError("peer closed mid-frame")
    return body
