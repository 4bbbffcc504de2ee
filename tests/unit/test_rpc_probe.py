"""checkers.rpc_probe: the probe frame as Spark's transport decodes it, and what replies say of the
server (plain bytes: the head of a real master's answer, HTTP, SSH, TLS, silence)."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from checkers.rpc_probe import RPC_REQUEST, Answer, classify, probe, request_frame, shown

# The first bytes a Spark 4 standalone master sent back to request_frame: an RpcFailure frame.
MASTER_REPLY = b"\x00\x00\x00\x00\x00\x00\n\x9b\x05\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\n\x86org.apache.spark." \
               b"SparkException: Could not find zkfence-probe.\n\tat org.apache.spark.rpc.netty.Dispatcher"


def test_the_frame_is_one_rpc_request_with_its_body_then_line_ends() -> None:
    frame = request_frame("127.0.0.1", 7077)
    (length,) = struct.unpack(">q", frame[:8])
    kind, request_id, body_length = struct.unpack(">bqi", frame[8:21])
    assert (kind, request_id) == (RPC_REQUEST, 1)
    assert length == 21 + body_length and frame[length:] == b"\r\n\r\n"
    body = frame[21:length]
    assert body[:2] == b"\x00\x01"  # no sender; a receiver address follows
    assert body[2:13] == b"\x00\x09127.0.0.1" and struct.unpack(">i", body[13:17]) == (7077,)
    assert body[17:32] == b"\x00\x0dzkfence-probe" and body[32:] == b"\xac\xed\x00\x05\x74\x00\x05probe"


@pytest.mark.parametrize("reply, answer", [
    (MASTER_REPLY, Answer.SPARK),
    (MASTER_REPLY[:8] + b"\x04", Answer.SPARK),  # an RpcResponse
    (b"HTTP/1.1 400 Bad Request\r\nDate: x\r\n", Answer.OTHER),
    (b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n", Answer.OTHER),
    (b"<!DOCTYPE HTML>\n<html lang=\"en\">", Answer.OTHER),
    (MASTER_REPLY[:8] + b"\x03", Answer.OTHER),  # a frame, but no reply's type
    (b"\x7f" + MASTER_REPLY[1:], Answer.OTHER),  # a length no frame has
    (b"", Answer.UNSURE),
    (b"\x15\x03\x03\x00\x02\x02\x46", Answer.UNSURE),  # a TLS alert: an RPC port with TLS on
    (b"\x00\x00\x00", Answer.UNSURE),  # a frame's length, cut short
    (b"+OK", Answer.OTHER),
])
def test_a_reply_says_spark_something_else_or_nothing_sure(reply: bytes, answer: Answer) -> None:
    assert classify(reply) is answer


def test_a_reply_is_shown_as_its_first_printable_line() -> None:
    assert shown(b"HTTP/1.1 400 Bad Request\r\nDate: x") == "HTTP/1.1 400 Bad Request"
    assert shown(b"\x00\x01ab\tc") == "..ab.c"
    assert shown(b"x" * 100) == "x" * 60 + "..."


def _listener(answer: bytes | None) -> tuple[socket.socket, threading.Thread]:
    """A loopback listener that takes one connection and sends ``answer`` (None: says nothing until
    the client goes)."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            if answer is not None:
                conn.sendall(answer)
            conn.recv(65536)
            conn.settimeout(5)
            while conn.recv(65536):
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return server, t


@pytest.mark.parametrize("answer, expected", [(b"SSH-2.0-OpenSSH_9.2p1\r\n", Answer.OTHER), (None, Answer.UNSURE)])
def test_probe_judges_what_a_listener_sends(answer: bytes | None, expected: Answer) -> None:
    server, t = _listener(answer)
    with server:
        got, reply = probe("127.0.0.1", server.getsockname()[1], timeout=0.5)
        t.join(10)
    assert got is expected and reply == (answer or b"")


def test_a_master_that_sends_nothing_back_is_left_to_spark_with_a_warning(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from checkers import spark

    monkeypatch.setattr(spark, "PROBE_TIMEOUT_S", 0.3)
    silent, t1 = _listener(None)
    ssh, t2 = _listener(b"SSH-2.0-OpenSSH_9.2p1\r\n")
    quiet, banner = silent.getsockname()[1], ssh.getsockname()[1]
    with silent, ssh:
        master = f"spark://127.0.0.1:{banner},127.0.0.1:{quiet}"
        assert spark.check_master(master) == master  # no verdict: the silent one may be Spark's
        t1.join(10)
        t2.join(10)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"127.0.0.1:{quiet} sent nothing back to a Spark RPC request within 0.3 s" in err
    assert f"127.0.0.1:{banner} answers 'SSH-2.0-OpenSSH_9.2p1', not Spark's RPC" in err
    assert "Spark gives up registering only after a minute" in err
