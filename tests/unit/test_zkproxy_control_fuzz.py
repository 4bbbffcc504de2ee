"""The control API is total (issue 46.4): every malformed request gets a 4xx with a one-line JSON
``{"error": ...}``, never a 500, a 501 or an HTML page. Property tests drive the pure checks
(``body_length``, ``decode_body``, ``match_route``, ``validate``, rule parsing); a handful of raw
requests hit the real handler on a loopback port, for what the stdlib refuses itself."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from history import EventWriter
from nemesis.zkproxy import ListenerSpec, ZkProxy
from nemesis.zkproxy.control import (
    MAX_BODY,
    ControlServer,
    _HttpError,
    body_length,
    decode_body,
    match_route,
    validate,
)
from nemesis.zkproxy.rules import RuleError, parse_rule, parse_rules

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
    max_leaves=20,
)
RULE_KEYS = st.sampled_from(["id", "match", "action", "budget", "unsafe", "comment", "type", "dir", "op", "kind",
                             "delay_ms", "mode", "times", "probability", "arm", "path_prefix", "session_id",
                             "conn", "upstream", "when", "rst", "after_ms", "skip", "from_ms", "until_ms"])
RULE_LIKE = st.recursive(  # JSON whose keys are mostly the rules' own, to get past the first check
    st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(
        ["delay", "close", "s2c", "c2s", "both", "multi", "getData", "14", "²", "0x10", "/a", "", "forward"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(RULE_KEYS, kids, max_size=4),
    max_leaves=16,
)
PATHS = st.lists(st.sampled_from(["health", "listeners", "rules", "arm", "disarm", "armed", "connections",
                                  "sessions", "close", "x", "1", "-1", "%00", "..", "9" * 30]), max_size=4)
METHODS = st.sampled_from(["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "get", "X"])


def refused_cleanly(e: _HttpError) -> None:
    assert 400 <= e.status < 500 and "\n" not in str(e) and len(str(e)) <= 300, (e.status, str(e))


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_arbitrary_bodies_decode_or_400(raw: bytes) -> None:
    try:
        doc = decode_body(raw)
    except _HttpError as e:
        refused_cleanly(e)
        return
    json.dumps(doc, allow_nan=False)  # what it accepts it can answer with


@pytest.mark.parametrize("raw", [b"[" * 100_000, b'{"a":' * 50 + b"1" + b"}" * 50, b"1" * 5000,
                                 b'{"x": 1e999}', b'{"x": -1e400}'])
def test_hostile_json_is_400(raw: bytes) -> None:
    with pytest.raises(_HttpError) as ei:
        decode_body(raw)
    refused_cleanly(ei.value)


@settings(max_examples=200)
@given(RULE_LIKE | JSON)
def test_rule_parsing_of_arbitrary_json(doc: Any) -> None:
    """A rule document is parsed or refused with a RuleError; never anything else."""
    for parse in (lambda d: parse_rules(d, source="fuzz"), lambda d: [parse_rule(d, source="fuzz")]):
        try:
            rules = parse(doc)
        except RuleError as e:
            assert "\n" not in str(e)
            continue
        for r in rules:
            json.dumps(r.to_dict(), allow_nan=False)


@settings(max_examples=200)
@given(METHODS, PATHS, st.text(max_size=6), RULE_LIKE | JSON)
def test_requests_are_routed_and_validated_or_4xx(method: str, parts: list[str], query: str, body: Any) -> None:
    path = "/" + "/".join(parts) + (f"?{query}" if query else "")
    try:
        pattern, params = match_route(method, path)
        validate(method, pattern, params, body)
    except _HttpError as e:
        refused_cleanly(e)


@settings(max_examples=200)
@given(st.sampled_from(["GET", "POST", "DELETE"]), st.lists(st.text(max_size=14), max_size=3),
       st.none() | st.text(max_size=8))
def test_content_length_is_one_bounded_number(method: str, values: list[str], te: str | None) -> None:
    try:
        n = body_length(method, values, te)
    except _HttpError as e:
        refused_cleanly(e)
        assert e.close
        return
    assert 0 <= n <= MAX_BODY and te is None and (values or method != "POST")


def test_a_body_where_none_belongs_and_wrong_types() -> None:
    for method, path, body in [("GET", "/health", {}), ("POST", "/arm/x", [1]),
                               ("POST", "/connections/1/close", {"rst": "yes"}),
                               ("POST", "/connections/1/close", {"rst": True, "x": 1}),
                               ("POST", "/connections/²/close", None), ("POST", "/rules", {"action": 5})]:
        with pytest.raises(_HttpError) as ei:
            validate(method, *match_route(method, path), body)
        assert ei.value.status == 400, (method, path, body)
    with pytest.raises(_HttpError) as ei:
        match_route("PUT", "/rules")
    assert ei.value.status == 405 and "allowed: DELETE, GET, POST" in str(ei.value)


@pytest.fixture(scope="module")
def ctl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlServer]:
    """One proxy (no upstream needed) and its control API for the module: started once."""
    loop = asyncio.new_event_loop()
    ev = EventWriter(tmp_path_factory.mktemp("ctl") / "ev.jsonl", "zkproxy")
    proxy = ZkProxy([ListenerSpec("127.0.0.1", 0, "127.0.0.1", 1)], ev)
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    server: ControlServer | None = None
    try:
        asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(5)
        server = ControlServer(proxy, loop)
        server.start()
        yield server
    finally:
        if server is not None:
            server.stop()
        asyncio.run_coroutine_threadsafe(proxy.stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        t.join(5)
        ev.close()


def raw_request(ctl: ControlServer, data: bytes) -> tuple[int, dict[str, Any]]:
    """Send raw bytes, half-close, read the answer: ``(status, JSON body)``."""
    with socket.create_connection((ctl.host, ctl.port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        resp = b""
        while chunk := s.recv(65536):
            resp += chunk
    head, _, body = resp.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"content-type: application/json" in head.lower(), head
    assert b"\n" not in body.strip(), body  # one line
    return status, json.loads(body.split(b"HTTP/1.1 ")[0])


@pytest.mark.parametrize(("data", "status"), [
    (b"GARBAGE\r\n\r\n", 400),
    (b"\x85\x0c\r\n\r\n", 400),  # whitespace to str.split(): the stdlib would not answer
    (b"GET\r\n\r\n", 400),
    (b"GET /health\r\n\r\n", 400),  # HTTP/0.9
    (b"GET /health HTTP/2.0\r\n\r\n", 400),  # the stdlib's 505
    (b"BREW /health HTTP/1.1\r\n\r\n", 405),  # the stdlib's 501
    (b"PUT /rules HTTP/1.1\r\nContent-Length: 2\r\n\r\n[]", 405),
    (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET /health HTTP/1.1\r\n" + b"X: y\r\n" * 120 + b"\r\n", 431),
    (b"GET /nope HTTP/1.1\r\n\r\n", 404),
    (b"POST /rules HTTP/1.1\r\n\r\n[]", 411),
    (b"POST /rules HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n0\r\n\r\n", 411),
    (b"POST /rules HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n[]", 400),
    (b"POST /rules HTTP/1.1\r\nContent-Length: 10\r\n\r\n[]", 400),  # the body ends early
    (b"POST /rules HTTP/1.1\r\nContent-Length: 4\r\n\r\n\xc3\x28[]", 400),
    (b'POST /rules HTTP/1.1\r\nContent-Length: 29\r\n\r\n{"action": "forward", "x": 1}', 400),
    (b"POST /rules HTTP/1.1\r\nContent-Length: " + str(MAX_BODY + 1).encode() + b"\r\n\r\n", 400),
])
def test_the_real_handler_answers_malformed_requests_with_json_4xx(ctl: ControlServer, data: bytes,
                                                                   status: int) -> None:
    got, out = raw_request(ctl, data)
    assert got == status and out["error"], (got, out)
    assert raw_request(ctl, b"GET /health HTTP/1.1\r\n\r\n")[0] == 200  # still serving
    assert ctl.proxy.ruleset.rules == []
