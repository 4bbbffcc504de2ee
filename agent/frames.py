"""The agents' control-plane framing: 4-byte big-endian length, then one UTF-8 JSON object.

Pure: ``encode`` and ``FrameDecoder`` touch no sockets; ``send_frame``/``recv_frame`` are the
thin blocking helpers the server and clients use.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

MAX_FRAME = 16 * 1024 * 1024
_LEN = struct.Struct(">I")


class FrameError(ValueError):
    """A frame that is too large, not JSON, or not a JSON object."""


def encode(obj: dict[str, Any]) -> bytes:
    if not isinstance(obj, dict):
        raise FrameError(f"a frame carries one JSON object, not {type(obj).__name__}")
    body = json.dumps(obj, separators=(",", ":")).encode()
    if len(body) > MAX_FRAME:
        raise FrameError(f"frame of {len(body)} bytes exceeds {MAX_FRAME}")
    return _LEN.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(body.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FrameError(f"frame is not JSON: {e}") from e
    if not isinstance(obj, dict):
        raise FrameError(f"frame is JSON {type(obj).__name__}, not an object")
    return obj


class FrameDecoder:
    """Incremental decoder: ``feed(bytes)`` returns every complete frame so far, in order."""

    def __init__(self, max_len: int = MAX_FRAME) -> None:
        self.max_len = max_len
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buf += data
        out: list[dict[str, Any]] = []
        while len(self._buf) >= 4:
            (n,) = _LEN.unpack_from(self._buf)
            if n > self.max_len:
                raise FrameError(f"frame length {n} exceeds {self.max_len}")
            if len(self._buf) < 4 + n:
                break
            body = bytes(self._buf[4 : 4 + n])
            del self._buf[: 4 + n]
            out.append(decode_body(body))
        return out

    @property
    def pending(self) -> int:
        """Bytes buffered towards an incomplete frame."""
        return len(self._buf)


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


def send_frame(sock: socket.socket, obj: dict[str, Any]) -> None:
    sock.sendall(encode(obj))


def recv_frame(sock: socket.socket, max_len: int = MAX_FRAME) -> dict[str, Any] | None:
    """One frame, or None on a clean EOF before its first byte."""
    head = _recv_exact(sock, 4)
    if head is None:
        return None
    (n,) = _LEN.unpack(head)
    if n > max_len:
        raise FrameError(f"frame length {n} exceeds {max_len}")
    body = _recv_exact(sock, n) if n else b""
    if body is None:
        raise ConnectionError("peer closed mid-frame")
    return decode_body(body)
