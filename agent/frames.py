"""The agents' control-plane messages: one UTF-8 JSON object per length-prefixed frame.

The framing itself (4-byte big-endian length, then the body) is ``zkwire.framing``, the same code
that splits ZooKeeper frames; this module only adds the JSON body and its 16 MiB limit. Pure:
``encode`` and ``FrameDecoder`` touch no sockets; ``send_frame``/``recv_frame`` are the thin
blocking helpers the server and clients use.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from zkwire import framing
from zkwire.framing import FrameError

__all__ = ["MAX_FRAME", "FrameDecoder", "FrameError", "decode_body", "encode", "recv_frame", "send_frame"]

MAX_FRAME = 16 * 1024 * 1024


def encode(obj: dict[str, Any]) -> bytes:
    if not isinstance(obj, dict):
        raise FrameError(f"a frame carries one JSON object, not {type(obj).__name__}")
    return framing.frame(json.dumps(obj, separators=(",", ":")).encode(), max_len=MAX_FRAME)


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
        self._frames = framing.FrameDecoder(max_len)

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        return [decode_body(body) for body in self._frames.feed(data)]

    @property
    def pending(self) -> int:
        """Bytes buffered towards an incomplete frame."""
        return self._frames.pending


def send_frame(sock: socket.socket, obj: dict[str, Any]) -> None:
    sock.sendall(encode(obj))


def recv_frame(sock: socket.socket, max_len: int = MAX_FRAME) -> dict[str, Any] | None:
    """One frame, or None on a clean EOF before its first byte."""
    body = framing.recv_frame(sock, max_len)
    return None if body is None else decode_body(body)
