"""bench/fuzz.py's control API surface: raw HTTP requests, valid, invalid by construction and mutated,
to the real ``ControlServer`` handler on a loopback port (in-process, with a proxy that has no
traffic). Each answer must be an HTTP response with a JSON body; a 4xx must be one-line
``{"error": ...}``; a 5xx, a malformed answer or silence is a crash, no answer in time a hang, and a
2xx to a request built to be invalid a wrong acceptance."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzzlib import Tally, WrongAcceptance

from tests.wire_samples import mutants

ANSWER_S = 10.0
GETS = ("/health", "/listeners", "/rules", "/armed", "/connections", "/sessions")
OPS = ("multi", "create", "getData", "setData", "delete", "ping", 14, 4)


def request(method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
            version: str = "HTTP/1.1") -> bytes:
    hs = dict(headers or {})
    if body is not None and "Content-Length" not in hs:
        hs["Content-Length"] = str(len(body))
    head = f"{method} {path} {version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hs.items()) + "\r\n"
    return head.encode("latin-1") + (body or b"")


def valid_rule(rng: random.Random, rid: str) -> dict[str, Any]:
    match: dict[str, Any] = {}
    for key, gen in (("dir", lambda: rng.choice(("c2s", "s2c"))), ("op", lambda: rng.choice(OPS)),
                     ("kind", lambda: rng.choice(("request", "reply", "connect_resp"))),
                     ("path_prefix", lambda: "/brokers/ids/"), ("ephemeral", lambda: rng.random() < 0.5),
                     ("session_id", lambda: rng.choice((1, "0x101"))), ("conn", lambda: [1, 2])):
        if rng.random() < 0.3:
            match[key] = gen()
    action = rng.choice(({"type": "forward"}, {"type": "delay", "delay_ms": rng.randrange(0, 5000)},
                         {"type": "close", "when": "after", "rst": True}, "drop_then_blackhole",
                         {"type": "drop_then_close", "after_ms": 10}))
    budget = rng.choice(({}, {"times": 1}, {"probability": 0.5, "arm": "x"}, {"from_ms": 0, "until_ms": 10}))
    return {"id": rid, "match": match, "action": action, "budget": budget}


# (path in the rule, a value of the wrong type there)
WRONG_TYPES = (("match.dir", 5), ("match.op", 3.5), ("match.ephemeral", 1), ("match.session_id", 1.5),
               ("match.conn", True), ("match.path_prefix", 3), ("budget.times", "1"),
               ("budget.probability", "1"), ("budget.arm", 5), ("action.delay_ms", "5"), ("unsafe", "yes"),
               ("id", 7), ("match", [1]), ("budget", "x"), ("action", 3))


def invalid(rng: random.Random, i: int) -> bytes:
    """A request that must be refused, one of many kinds."""
    rule = valid_rule(rng, f"bad{i}")
    k = rng.randrange(16)
    if k == 0:
        return request(rng.choice(("PUT", "PATCH", "HEAD", "OPTIONS", "BREW", "get")), rng.choice(GETS))
    if k == 1:
        return request(rng.choice(("GET", "POST", "DELETE")), "/" + rng.choice(("nope", "rules/a/b", "arm", "")),
                       b"" if rng.random() < 0.5 else None)
    if k == 2:
        text = json.dumps(rule).encode()
        return request("POST", "/rules", text[: rng.randrange(1, len(text))])  # cut short: not JSON
    if k == 3:
        return request("POST", "/rules", rng.choice((b"\xff\xfe{}", b'{"id": "\xc3\x28"}', b"\x80")))
    if k == 4:
        const = rng.choice(("NaN", "Infinity", "-Infinity", "1e999"))
        return request("POST", "/rules", f'{{"id": "n", "action": {{"type": "delay", "delay_ms": {const}}}}}'.encode())
    if k == 5:
        d = rng.randrange(40, 200_000)
        return request("POST", "/rules", b"[" * d + b"]" * d)
    if k == 6:
        where = rng.choice(("", "match", "action", "budget"))
        key = f"bogus{rng.randrange(100)}"
        if where:
            rule[where] = {**(rule[where] if isinstance(rule[where], dict) else {"type": rule[where]}), key: 1}
        else:
            rule[key] = 1
        return request("POST", "/rules", json.dumps(rule).encode())
    if k == 7:
        path, value = rng.choice(WRONG_TYPES)
        top, _, sub = path.partition(".")
        if sub:
            target = rule[top] if isinstance(rule[top], dict) else {"type": rule[top]}
            rule[top] = {**target, sub: value}
        else:
            rule[top] = value
        return request("POST", "/rules", json.dumps(rule).encode())
    if k == 8:
        return request("GET", rng.choice(GETS), json.dumps(rule).encode())  # a body where none belongs
    if k == 9:
        return request("POST", "/rules", json.dumps(rule).encode(), {"Content-Length": ""})
    if k == 10:
        cl = rng.choice(("two", "-2", "1e3", "99999999999", str((1 << 20) + 1), " ", "0x10"))
        return request("POST", "/rules", b"[]", {"Content-Length": cl})
    if k == 11:
        return request("POST", "/rules", b"2\r\n[]\r\n0\r\n\r\n", {"Transfer-Encoding": "chunked"})
    if k == 12:  # POST without Content-Length
        return b"POST /rules HTTP/1.1\r\nHost: x\r\n\r\n" + json.dumps(rule).encode()
    if k == 13:
        return request("POST", "/connections/1/close", json.dumps({"rst": rng.choice(("yes", 1, None, [])),
                                                                   "x": 1}).encode())
    if k == 14:
        return rng.choice((b"GET /health\r\n\r\n", b"GET /health HTTP/2.0\r\n\r\n", b"GARBAGE\r\n\r\n",
                           b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 120 + b"\r\n",
                           b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n"))
    body = json.dumps(rule).encode()
    return request("POST", "/rules", body, {"Content-Length": str(len(body) + rng.randrange(1, 100))})


def valid(rng: random.Random, i: int) -> tuple[bytes, bool]:
    """A well-formed request, and whether it must succeed (a DELETE of an unknown id may 404)."""
    k = rng.randrange(8)
    if k < 3:
        return request("GET", rng.choice(GETS)), True
    if k < 5:
        tag = rng.randrange(10**9)  # so a mutant of an earlier request cannot have taken the id
        rules = [valid_rule(rng, f"ok{i}x{tag}-{j}") for j in range(rng.randrange(1, 3))]
        body: Any = rules[0] if len(rules) == 1 and rng.random() < 0.5 else {"rules": rules}
        return request("POST", "/rules", json.dumps(body).encode()), True
    if k == 5:
        return request("POST", f"/{rng.choice(('arm', 'disarm'))}/x", b""), True
    if k == 6:
        return request("DELETE", rng.choice(("/rules", f"/rules/ok{rng.randrange(i + 1)}-0"))), False
    return request("POST", f"/connections/{rng.randrange(1, 9)}/close", b'{"rst": false}'), False


def _exchange(addr: tuple[str, int], data: bytes) -> bytes | None:
    """Send, half-close, read to EOF; None if nothing came back in time (a hang)."""
    with socket.create_connection(addr, timeout=ANSWER_S) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server answered (and closed) before taking it all
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except TimeoutError:
            return None
        except ConnectionResetError:
            pass
    return out


def _answer(resp: bytes, head_request: bool = False) -> tuple[int, Any]:
    """The first response: ``(status, JSON body)``; raises on anything that is not one. The answer
    to a HEAD has no body (HTTP), so only its headers are checked."""
    head, sep, rest = resp.partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"HTTP/1."):
        raise ValueError(f"not an HTTP response: {resp[:80]!r}")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    hdrs = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    if hdrs.get("content-type") != "application/json":
        raise ValueError(f"answer is {hdrs.get('content-type')!r}, not JSON")
    if head_request:
        return status, {"error": "(the answer to a HEAD has no body)"}
    body = rest[: int(hdrs["content-length"])]
    if b"\n" in body.strip():
        raise ValueError(f"answer is not one line: {body[:80]!r}")
    return status, json.loads(body)


def judge(addr: tuple[str, int], data: bytes, expect: str) -> Callable[[], str]:
    """``expect``: "ok" (must be 2xx), "bad" (must be 4xx), "any"."""

    def run() -> str:
        resp = _exchange(addr, data)
        if resp is None:
            raise TimeoutError("no answer in time")
        if not resp:  # only an empty request line may go unanswered
            if data.split(b"\n", 1)[0].rstrip(b"\r"):
                raise ValueError("connection closed without an answer")
            return "refused"
        status, out = _answer(resp, data.startswith(b"HEAD "))
        if status >= 500:
            raise RuntimeError(f"HTTP {status}: {out}")
        if 400 <= status < 500:
            if not (isinstance(out, dict) and isinstance(out.get("error"), str) and out["error"]):
                raise ValueError(f"HTTP {status} without an error message: {out!r}")
            if expect == "ok":
                raise RuntimeError(f"a valid request refused: HTTP {status}: {out['error']}")
            return "refused"
        if expect == "bad":
            raise WrongAcceptance(f"HTTP {status}: {str(out)[:120]}")
        return "accepted"

    return run


def run_control(rng: random.Random, n: int, scratch: Path) -> Tally:
    from history import EventWriter
    from nemesis.zkproxy import ListenerSpec, ZkProxy
    from nemesis.zkproxy.control import ControlServer

    t = Tally()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzz-proxy-loop", daemon=True)
    thread.start()
    ev = EventWriter(scratch / "zkproxy.jsonl", "zkproxy")
    proxy = ZkProxy([ListenerSpec("127.0.0.1", 0, "127.0.0.1", 1)], ev)
    ctl: ControlServer | None = None
    try:
        asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(10)
        ctl = ControlServer(proxy, loop)
        ctl.start()
        addr = (str(ctl.host), int(ctl.port))
        for i in range(n):
            r = rng.random()
            if r < 0.3:
                data, must = valid(rng, i)
                expect = "ok" if must else "any"
            elif r < 0.7:
                data, expect = invalid(rng, i), "bad"
            elif r < 0.9:
                data, expect = mutants(rng, valid(rng, i)[0]), "any"
            else:
                data, expect = rng.randbytes(rng.randrange(0, 256)), "any"
            t.judge(f"{expect} {data[:100]!r}", judge(addr, data, expect))
            if i % 500 == 499:  # keep the rule list short
                _exchange(addr, request("DELETE", "/rules"))
    finally:
        if ctl is not None:
            ctl.stop()
        asyncio.run_coroutine_threadsafe(proxy.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
        ev.close()
    return t
