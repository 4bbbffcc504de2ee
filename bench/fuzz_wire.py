"""bench/fuzz.py's wire surfaces: the zkwire codec, the proxy process in front of a real ZooKeeper,
and the proxy's control API. Inputs come from tests/wire_samples.py (the property tests' seeds) and
this module's HTTP generators (bench/fuzz_http.py)."""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import time
from pathlib import Path

from fuzzlib import Tally, WrongAcceptance

import zkwire as z
from tests import wire_samples as ws

REPLY_OPS = [None, *sorted(z.REPLY_TYPES), 999, -77]
FRAME_LIMIT = z.JUTE_MAXBUFFER + z.JUTE_EXTRASIZE  # the proxy's default
CLOSE_S = 10.0  # how long a connection the proxy must close may take before it counts as a hang
REPLY_S = 2.0  # how long to wait for ZooKeeper's answer to a forwarded frame


def _decode(body: bytes, direction: str, op: int | None = None) -> str:
    try:
        return ws.decode(body, direction, op)
    except ws.WrongAcceptance as e:
        raise WrongAcceptance(str(e)) from None


def _nested(body: bytes, reply: bool) -> str:
    """A nested multi must be a ProtocolError: anything else (accepted, or reported and forwarded)
    is a wrong acceptance."""
    try:
        p = z.parse_reply(body, z.OpCode.MULTI) if reply else z.parse_request(body)
    except z.ProtocolError:
        return "refused"
    except z.JuteError as e:
        raise WrongAcceptance(f"nested multi refused as {e!r}, not a ProtocolError") from None
    raise WrongAcceptance(f"nested multi accepted: error={p.error!r}")


def _frames(data: bytes, max_len: int, chunks: list[int]) -> str:
    dec = z.FrameDecoder(max_len)
    try:
        pos = 0
        for n in chunks:
            for body in dec.feed(data[pos:pos + n]):
                if len(body) > max_len:
                    raise WrongAcceptance(f"a {len(body)}-byte frame past the limit {max_len}")
            pos += n
    except z.FrameError:
        return "refused"
    return "accepted"


def zkwire_decode(rng: random.Random, n: int, scratch: Path) -> Tally:
    """Bodies in both directions: random, mutated valid frames (read as the answer to their own or
    another request), mutated handshakes, nested multis up to 110,000 deep, and byte streams cut at
    random through the frame splitter."""
    t = Tally()
    reqs, reps = ws.request_bodies(), ws.reply_bodies()
    for i in range(n):
        k = i % 10
        if k in (0, 1):
            body = rng.randbytes(rng.randrange(0, 96))
            t.judge(f"random request {body.hex()}", lambda b=body: _decode(b, "c2s"))
        elif k in (2, 3):
            body, op = rng.randbytes(rng.randrange(0, 96)), rng.choice(REPLY_OPS)
            t.judge(f"random reply to {op} {body.hex()}", lambda b=body, o=op: _decode(b, "s2c", o))
        elif k in (4, 5):
            body = ws.mutants(rng, rng.choice(reqs)[1])
            t.judge(f"mutated request {body[:64].hex()}", lambda b=body: _decode(b, "c2s"))
        elif k in (6, 7):
            op, body = rng.choice(reps)
            op = op if rng.random() < 0.8 else rng.choice(REPLY_OPS)
            body = ws.mutants(rng, body)
            t.judge(f"mutated reply to {op} {body[:64].hex()}", lambda b=body, o=op: _decode(b, "s2c", o))
        elif k == 8:
            d = rng.choice(("connect_req", "connect_resp"))
            body = ws.mutants(rng, ws.connect_request() if d == "connect_req" else ws.connect_response())
            t.judge(f"mutated {d} {body.hex()}", lambda b=body, d=d: _decode(b, d))
        elif i % 20 == 9:
            depth, reply = rng.choice((1, 2, 3, rng.randrange(1, 110_000))), rng.random() < 0.5
            body = ws.nested_multi(depth, reply)
            t.judge(f"nested multi depth {depth} reply={reply}", lambda b=body, r=reply: _nested(b, r))
        else:
            data = b"".join(z.frame(b) for _, b in rng.sample(reqs, 3))
            data = ws.mutants(rng, data) if rng.random() < 0.7 else rng.randbytes(rng.randrange(1, 64))
            chunks = [rng.randrange(1, 16) for _ in range(len(data))]
            max_len = rng.choice((16, 64, FRAME_LIMIT))
            t.judge(f"stream {data[:64].hex()}", lambda d=data, m=max_len, c=chunks: _frames(d, m, c))
    return t


# --- the proxy process in front of a real ZooKeeper ------------------------------------------


def _recv_some(s: socket.socket, timeout: float) -> bytes | None:
    """Bytes that arrive within ``timeout`` (b"" at EOF or reset), or None if none did."""
    s.settimeout(timeout)
    try:
        return s.recv(65536)
    except (TimeoutError, BlockingIOError):  # BlockingIOError: timeout 0, nothing there
        return None
    except ConnectionError:
        return b""


def _closes(s: socket.socket, timeout: float = CLOSE_S) -> bool:
    """True if the peer closes within ``timeout`` (whatever it sends first)."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        data = _recv_some(s, left)
        if data == b"":
            return True
        if data is None:
            return False
    return False


def _send(s: socket.socket, data: bytes) -> bool:
    """False if the peer closed (or reset) before taking it all: the proxy may close mid-frame."""
    try:
        s.sendall(data)
    except OSError:
        return False
    return True


def _fin(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_WR)


def _drain(s: socket.socket) -> bool:
    """Read what is already there; False if the connection is closed."""
    while True:
        data = _recv_some(s, 0.0)
        if data is None:
            return True
        if data == b"":
            return False


class _Live:
    """Counts for one proxy run: outcomes, and the hostile frames sent (each must cost its
    connection and one protocol_error event, checked against the log at the end)."""

    def __init__(self, rng: random.Random, addr: tuple[str, int], t: Tally) -> None:
        self.rng, self.addr, self.t = rng, addr, t
        self.hostile = 0
        self.reqs = ws.request_bodies()

    def connection(self, budget: int) -> None:
        rng, t = self.rng, self.t
        with socket.create_connection(self.addr, timeout=CLOSE_S) as s:
            mode = rng.random()
            if mode < 0.1:  # garbage from the first byte, then a FIN: the connection must end
                if _send(s, rng.randbytes(rng.randrange(1, 2048))):
                    _fin(s)
                t.add("refused" if _closes(s) else "hang", "garbage stream not closed after FIN")
                return
            creq = ws.connect_request()
            if mode < 0.2:  # a mutated handshake
                if _send(s, z.frame(ws.mutants(rng, creq))):
                    _fin(s)
                t.add("refused" if _closes(s) else "hang", "mutated handshake not closed after FIN")
                return
            s.sendall(z.frame(creq))
            if not _recv_some(s, CLOSE_S):
                t.add("crash", "no ConnectResponse through the proxy")
                return
            for _ in range(min(budget, rng.randrange(1, 9))):
                if not _drain(s):
                    break
                if not self.frame(s):
                    return  # the connection ended
            try:
                s.shutdown(socket.SHUT_WR)
            except OSError:
                return
            if not _closes(s):
                t.add("hang", "an open connection not closed after FIN")

    def frame(self, s: socket.socket) -> bool:
        """Send one input; False once the connection is closed."""
        rng, t = self.rng, self.t
        r = rng.random()
        if r < 0.15:  # must cost the connection: a nested multi, or a length outside the limit
            self.hostile += 1
            if rng.random() < 0.5:
                depth = rng.choice((1, 2, rng.randrange(1, 110_000)))
                _send(s, z.frame(ws.nested_multi(depth)))
                what = f"nested multi depth {depth}"
            else:
                _send(s, struct.pack(">i", rng.choice((-1, -rng.randrange(2, 2**31), FRAME_LIMIT + 1,
                                                       rng.randrange(FRAME_LIMIT + 1, 2**31))))
                      + rng.randbytes(rng.randrange(0, 64)))
                what = "a length outside the limit"
            t.add("refused" if _closes(s) else "hang", f"{what}: connection not closed")
            return False
        if r < 0.45:
            body = rng.choice(self.reqs)[1]
        elif r < 0.85:
            body = ws.mutants(rng, rng.choice(self.reqs)[1])
        else:
            body = rng.randbytes(rng.randrange(0, 128))
        if not _send(s, z.frame(body)):
            t.add("refused")
            return False
        data = _recv_some(s, REPLY_S)
        if data is None:  # ZooKeeper does not answer every oddity; the FIN check decides
            t.add("refused")
            return True
        t.add("accepted" if data else "refused")
        return bool(data)


def zkproxy_live(rng: random.Random, n: int, scratch: Path) -> Tally:
    """Valid, mutated, random and hostile frames through ``python -m nemesis.zkproxy`` to a real
    ZooKeeper (both started here, in ``scratch``, and stopped). Then: no connection is left open,
    every hostile frame produced one protocol_error and none was forwarded, no protocol_error is an
    internal error, the proxy is alive, and a fresh kazoo session goes through."""
    from kazoo.client import KazooClient
    from zkproxy_latency import start_zk

    from nemesis.zkproxy import ProxyProcess

    t = Tally()
    ens, zk_addr = start_zk(str(scratch))
    try:
        with ProxyProcess([zk_addr], scratch / "zkproxy.jsonl", scratch, seed=rng.randrange(2**31)) as pp:
            host, port = pp.addresses[0].rsplit(":", 1)
            live = _Live(rng, (host, int(port)), t)
            while t.inputs < n:
                live.connection(n - t.inputs)
                if pp.process is not None and pp.process.poll() is not None:
                    t.add("crash", f"the proxy exited with {pp.process.returncode}")
                    return t
            _after_live(pp, live, t, KazooClient)
    finally:
        ens.stop()
    return t


def _after_live(pp: object, live: _Live, t: Tally, kazoo: type) -> None:
    import json

    from base.wait import wait_until

    api = pp.client  # type: ignore[attr-defined]
    left = wait_until(lambda: not api.connections() or None, CLOSE_S, poll=0.2)
    if left is None:
        for c in api.connections():
            t.add("hang", f"connection {c['conn']} still open at the end ({c['state']})")
    events = [json.loads(x) for x in Path(pp.events).read_text().splitlines() if x.endswith("}")]  # type: ignore[attr-defined]
    errors = [e["value"] for e in events if e["f"] == "protocol_error"]
    for e in errors:
        if e["error"].startswith("internal error"):
            t.add("crash", f"proxy: {e['error']}")
    forwarded_nested = [e for e in events if e["f"] == "frame" and e["value"].get("dir") == "c2s"
                        and any(s.get("type") in (14, 22) for s in e["value"].get("sub_ops") or [])]
    for e in forwarded_nested:
        t.add("wrong", f"nested multi forwarded: frame seq {e['seq']}")
    if len(errors) < live.hostile:
        for _ in range(live.hostile - len(errors)):
            t.add("wrong", f"{live.hostile} hostile frames, {len(errors)} protocol_error events")
    zk = kazoo(hosts=pp.connect_string, timeout=10)  # type: ignore[attr-defined]
    try:
        zk.start(timeout=15)
        zk.exists("/")
    except Exception as e:  # noqa: BLE001
        t.add("crash", f"a fresh kazoo session through the proxy failed: {e!r}")
    finally:
        zk.stop()
        zk.close()


def control_api(rng: random.Random, n: int, scratch: Path) -> Tally:
    from fuzz_http import run_control

    return run_control(rng, n, scratch)
