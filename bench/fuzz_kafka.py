"""Fuzz runners for the Kafka wire proxy's surfaces (bench/fuzz.py): the codec on hostile bytes, and
the proxy process between a client and an echo server. Seeds are real frames from
tests/kafka_samples.py (the unit tests' samples)."""

from __future__ import annotations

import contextlib
import json
import random
import socket
import socketserver
import struct
import threading
from pathlib import Path

from fuzzlib import Tally, WrongAcceptance

from nemesis.kafkaproxy.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    summarise,
)
from tests import kafka_samples as ks

CLOSE_S = 10.0
RESPONSE_KEYS = (0, 1, 3, 4, 5, 6, 7, 18, 56)


def _seeds() -> tuple[list[bytes], list[tuple[int, int, bytes]]]:
    reqs = [ks.frame(e, 7)[4:] for e in (ks.leader_and_isr_v7(partitions=3), ks.leader_and_isr_v1(),
                                        ks.update_metadata_v8(), ks.stop_replica_v3(), ks.fetch_v12(),
                                        ks.api_versions_v3())]
    reps = [(4, 7, ks.answer(ks.leader_and_isr_v7_response(), 7)[4:]),
            (6, 8, ks.answer(ks.update_metadata_v8_response(), 7)[4:]),
            (56, 3, ks.answer(ks.alter_partition_v3_response(), 7)[4:])]
    return reqs, reps


def _mutant(rng: random.Random, b: bytes) -> bytes:
    out = bytearray(b)
    for _ in range(rng.randint(1, 6)):
        if out and rng.random() < 0.7:
            out[rng.randrange(len(out))] = rng.randrange(256)
        else:
            pos = rng.randrange(len(out) + 1)
            out[pos:pos] = rng.randbytes(rng.randint(1, 4))
    return bytes(out[: rng.randint(0, len(out))]) if rng.random() < 0.3 else bytes(out)


def _judge_request(body: bytes) -> str:
    d = decode_request(body)
    if not d.decoded:
        if not d.parse_error or "\n" in d.parse_error:
            raise WrongAcceptance(f"undecoded without a one-line parse_error: {d.parse_error!r}")
        return "refused"
    summarise(d.body)
    again = decode_request(encode_request(d.body, d.correlation_id or 0, d.client_id)[4:])
    if again.body != d.body:  # what it accepted must be what it would write
        raise WrongAcceptance("decodes, but not to what its own encoding decodes to")
    return "accepted"


def _judge_response(body: bytes, key: int, version: int) -> str:
    d = decode_response(body, key, version)
    if not d.decoded:
        if not d.parse_error or "\n" in d.parse_error:
            raise WrongAcceptance(f"undecoded without a one-line parse_error: {d.parse_error!r}")
        return "refused"
    summarise(d.body)
    again = decode_response(encode_response(d.body, d.correlation_id or 0)[4:], key, version)
    if again.body != d.body:
        raise WrongAcceptance("decodes, but not to what its own encoding decodes to")
    return "accepted"


def kafka_decode(rng: random.Random, n: int, scratch: Path) -> Tally:
    """Request and response bodies: random, real frames mutated (bytes changed, inserted, cut), and
    random bodies read as the response to a random API and version. A body that decodes must
    re-encode to one that decodes the same; one that does not gets a one-line parse_error."""
    t = Tally()
    reqs, reps = _seeds()
    for i in range(n):
        k = i % 4
        if k == 0:
            body = rng.randbytes(rng.randrange(0, 96))
            t.judge(f"random request {body.hex()}", lambda b=body: _judge_request(b))
        elif k == 1:
            body = _mutant(rng, rng.choice(reqs))
            t.judge(f"mutated request {body[:64].hex()}", lambda b=body: _judge_request(b))
        elif k == 2:
            key, ver, seed = rng.choice(reps)
            body = _mutant(rng, seed)
            t.judge(f"mutated response {key} v{ver} {body[:64].hex()}",
                    lambda b=body, k_=key, v=ver: _judge_response(b, k_, v))
        else:
            key, ver = rng.choice(RESPONSE_KEYS), rng.randrange(0, 13)
            body = rng.randbytes(rng.randrange(0, 96))
            t.judge(f"random response {key} v{ver} {body.hex()}", lambda b=body, k_=key, v=ver: _judge_response(b, k_, v))
    return t


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        with contextlib.suppress(OSError):
            while data := self.request.recv(65536):
                self.request.sendall(data)


def _read_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(min(65536, n - len(buf)))
        if not chunk:
            break
        buf += chunk
    return buf


def kafkaproxy_live(rng: random.Random, n: int, scratch: Path) -> Tally:
    """Well-framed malformed frames through ``python -m nemesis.kafkaproxy`` to an echo server (so
    they come back through it as responses): each must come back byte for byte (accepted); a
    hostile size prefix (negative, over the limit) must close its connection (refused). Then: the
    proxy is alive, no protocol_error is an internal error, its log has no traceback."""
    from nemesis.kafkaproxy import KafkaProxyProcess

    t = Tally()
    reqs, reps = _seeds()
    seeds = reqs + [r for _, _, r in reps]
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as echo:
        echo.daemon_threads = True
        threading.Thread(target=echo.serve_forever, daemon=True).start()
        try:
            with KafkaProxyProcess([f"127.0.0.1:{echo.server_address[1]}"], scratch / "kafkaproxy.jsonl",
                                   scratch, seed=rng.randrange(2**31)) as pp:
                addr = ("127.0.0.1", pp.ports[0])
                while t.inputs < n:
                    frames = []
                    for _ in range(min(rng.randint(1, 40), n - t.inputs)):
                        body = rng.randbytes(rng.randrange(0, 80)) if rng.random() < 0.3 else _mutant(rng, rng.choice(seeds))
                        frames.append(struct.pack(">i", len(body)) + body)
                    hostile = rng.random() < 0.15
                    with socket.create_connection(addr, CLOSE_S) as s:
                        s.settimeout(CLOSE_S)
                        wire = b"".join(frames)
                        s.sendall(wire)
                        try:
                            got = _read_exactly(s, len(wire))
                        except TimeoutError:
                            got = None
                        for i, f in enumerate(frames):
                            if got is None:
                                t.add("hang", f"frame {i} of a connection: no echo in {CLOSE_S}s")
                            elif got[sum(map(len, frames[:i])):][: len(f)] != f:
                                t.add("wrong", f"frame {f[:64].hex()} did not come back as sent")
                            else:
                                t.add("accepted")
                        if hostile and t.inputs < n:
                            size = rng.choice((-1, -(2**31), 104_857_601, 2**31 - 1))
                            s.sendall(struct.pack(">i", size) + b"x")
                            try:
                                closed = s.recv(1) == b""
                            except ConnectionResetError:
                                closed = True
                            except TimeoutError:
                                closed = False
                            t.add("refused" if closed else "hang", f"size {size}: connection not closed")
                    if pp.process is not None and pp.process.poll() is not None:
                        t.add("crash", f"the proxy exited with {pp.process.returncode}")
                        return t
                if not pp.client.health()["ok"]:
                    t.add("crash", "the control API does not answer")
        finally:
            echo.shutdown()
    for line in (scratch / "kafkaproxy.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["f"] == "protocol_error" and e["value"]["error"].startswith("internal error"):
            t.add("crash", f"proxy: {e['value']['error']}")
    log = scratch / "kafkaproxy.log"
    if log.exists() and "Traceback" in log.read_text():
        t.add("crash", "a traceback in the proxy's log")
    return t
