"""Does a ``spark://`` HOST:PORT speak Spark's RPC? Asked once, before a session is started on it.

Spark's own client, pointed at a port that answers something else (the master's web UI, its REST
server, an SSH daemon), retries registering for a minute (3 x 20 s in ``StandaloneAppClient``) and
then fails with "All masters are unresponsive!" and a stopped SparkContext, naming neither the port
nor what answered. This module sends one Spark RPC request and reads what comes back.

The request is a well-formed ``RpcRequest`` frame (Spark's ``network-common`` transport: an 8-byte
frame length that counts itself, a type byte, the request id and the body's length) whose body is
a ``RequestMessage`` (``NettyRpcEnv.scala``: no sender, the receiver's address and endpoint name,
then the content in Java serialization) addressed to an endpoint no Spark process registers, with
a Java-serialized string as content. Any Spark RPC server (a master, a worker, a driver) answers it
with an ``RpcFailure`` frame ("Could not find zkfence-probe.") and logs nothing above INFO: a body
Spark could not decode would put an ERROR and a stack trace in the master's log on every call.

Only an answer that is clearly something else counts against the port. Silence, a close without a
byte and a TLS record (an RPC port with TLS on) leave the verdict to Spark, as before.
"""

from __future__ import annotations

import socket
import struct
import time
from enum import Enum

RPC_REQUEST, RPC_RESPONSE, RPC_FAILURE = 3, 4, 5  # Spark's Message.Type ids
PROBE_ENDPOINT = "zkfence-probe"
_HEADER = 8 + 1  # frame length, type
_MAX_FRAME = 2**31  # Spark's frame decoder refuses larger frames
# Sent after the frame: an HTTP server that reads a request line (Python's http.server) answers at
# once instead of waiting for the line's end; Spark's frame decoder holds the four bytes as the
# start of a next frame and drops them at the close, logging nothing.
_LINE_ENDS = b"\r\n\r\n"


class Answer(Enum):
    SPARK = "spark"
    OTHER = "other"
    UNSURE = "unsure"


def _utf(text: str) -> bytes:
    """``DataOutputStream.writeUTF``: a 2-byte length, then the bytes (its modified UTF-8 is UTF-8
    for a host name's characters)."""
    data = text.encode("utf-8")
    return struct.pack(">H", len(data)) + data


def request_frame(host: str, port: int) -> bytes:
    """The probe: one ``RpcRequest`` (id 1) to ``PROBE_ENDPOINT`` at ``host:port``, then line ends."""
    java_string = b"\xac\xed\x00\x05" + b"\x74" + _utf("probe")  # stream magic, version, TC_STRING
    body = (b"\x00"  # no sender address (a client)
            + b"\x01" + _utf(host) + struct.pack(">i", port) + _utf(PROBE_ENDPOINT) + java_string)
    header = struct.pack(">bqi", RPC_REQUEST, 1, len(body))
    return struct.pack(">q", 8 + len(header) + len(body)) + header + body + _LINE_ENDS


def classify(reply: bytes) -> Answer:
    """What the first bytes of a reply to ``request_frame`` say of the server."""
    if not reply:
        return Answer.UNSURE  # silent, or closed the connection: Spark decides
    if reply[0] in (0x15, 0x16) and reply[1:2] == b"\x03":
        return Answer.UNSURE  # a TLS record (alert or handshake): an RPC port with TLS is still Spark's
    if len(reply) < _HEADER:
        # a frame's length starts with zero bytes; anything else is no frame
        return Answer.UNSURE if reply == bytes(len(reply)) else Answer.OTHER
    (length,) = struct.unpack(">q", reply[:8])
    is_frame = _HEADER <= length <= _MAX_FRAME and reply[8] in (RPC_RESPONSE, RPC_FAILURE)
    return Answer.SPARK if is_frame else Answer.OTHER


def shown(reply: bytes, limit: int = 60) -> str:
    """A reply's first line as a user reads it: printable text, cut at ``limit`` characters."""
    line = reply.split(b"\n", 1)[0].rstrip(b"\r").decode("latin-1")
    text = "".join(c if c.isprintable() else "." for c in line)
    return text if len(text) <= limit else text[:limit] + "..."


def probe(host: str, port: int, timeout: float) -> tuple[Answer, bytes]:
    """Connect, send the probe and read until a frame header, a close or ``timeout``. A refused or
    timed-out connection raises ``OSError`` (nothing accepts connections there)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        deadline = time.monotonic() + timeout
        reply = b""
        try:
            s.sendall(request_frame(host, port))
            while len(reply) < _HEADER and (left := deadline - time.monotonic()) > 0:
                s.settimeout(left)
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        except OSError:
            pass  # a reset or a timeout after connecting: judged on what arrived
    return classify(reply), reply
