"""nemesis.zkproxy on malformed input: unparsable notifications, bad control-API bodies, non-finite
numbers (issue 12.6 items 5 and 6). Plain bytes and one loopback HTTP server; no ZooKeeper."""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import zkwire as z
from history import EventWriter
from nemesis.zkproxy import ListenerSpec, ZkProxy
from nemesis.zkproxy.conn import ESTABLISHED, Conn
from nemesis.zkproxy.control import ControlServer, _HttpError, decode_body
from nemesis.zkproxy.inspector import FrameInspector
from nemesis.zkproxy.rules import FrameInfo


def inspect_reply(body: bytes) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """Run one server->client frame body through the inspector; returns (frame event, other events)."""
    emitted: list[tuple[str, dict[str, Any]]] = []

    def emit(f: str, **v: Any) -> int:
        emitted.append((f, v))
        return 99

    c = Conn(1, 0, "127.0.0.1:2181", "127.0.0.1:5", 0.0, state=ESTABLISHED, session_id=0x101)
    info = FrameInfo(conn=1, upstream=0, upstream_addr=c.upstream, dir="s2c", kind="reply")
    ev: dict[str, Any] = {}
    _, after = FrameInspector(emit, {}).inspect(c, "s2c", body, False, info, ev)
    if after is not None:
        after(7, True)
    ev["kind"] = info.kind
    return ev, emitted


@pytest.mark.parametrize("body", [
    struct.pack(">iqi", -1, -1, 0) + struct.pack(">ii", 1, 3) + b"\x00\x00\x00\x10/a",  # path cut short
    struct.pack(">iqi", -1, -1, 0) + b"\x00\x01",  # a WatcherEvent of two bytes
    b"\xff\xff\xff\xff\x00",  # not even a reply header
])
def test_unparsable_notification_is_logged(body: bytes) -> None:
    ev, emitted = inspect_reply(body)
    assert ev["kind"] == "notification" and ev["parse_error"]
    (f, v), = [e for e in emitted if e[0] == "notification_unparsed"]
    assert v["frame_seq"] == 7 and v["bytes"] == len(body) and v["raw_hex"] == body[:64].hex()
    assert v["parse_error"] == ev["parse_error"]


def test_good_notification_logs_no_parse_event() -> None:
    ev, emitted = inspect_reply(z.encode_notification(z.WatcherEvent(1, 3, "/a"))[4:])
    assert ev["path"] == "/a" and "parse_error" not in ev and emitted == []


@pytest.mark.parametrize(("raw", "msg"), [
    (b"\xff\xfe{}", "not UTF-8"),
    (b'{"id": "x", "action": {"type": "delay", "delay_ms": NaN}}', "NaN is not a number"),
    (b'[{"delay_ms": Infinity}]', "Infinity is not a number"),
    (b"{nope", "not JSON"),
])
def test_bad_bodies_are_400(raw: bytes, msg: str) -> None:
    with pytest.raises(_HttpError, match=msg) as ei:
        decode_body(raw)
    assert ei.value.status == 400


def test_empty_body_is_none() -> None:
    assert decode_body(b"") is None and decode_body(b"  \n") is None and decode_body(b"[]") == []


@pytest.fixture
def control(tmp_path: Path) -> Iterator[tuple[ControlServer, Path]]:
    loop = asyncio.new_event_loop()
    evpath = tmp_path / "ev.jsonl"
    ev = EventWriter(evpath, "zkproxy")
    proxy = ZkProxy([ListenerSpec("127.0.0.1", 0, "127.0.0.1", 1)], ev)
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(5)
    ctl = ControlServer(proxy, loop)
    ctl.start()
    yield ctl, evpath
    ctl.stop()
    asyncio.run_coroutine_threadsafe(proxy.stop(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    t.join(5)
    ev.close()


def post(ctl: ControlServer, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection(ctl.host, ctl.port, timeout=5)
    try:
        conn.putrequest("POST", "/rules")
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        assert b"\n" not in data.strip()  # one line
        return resp.status, json.loads(data)
    finally:
        conn.close()


@pytest.mark.parametrize(("body", "headers", "msg"), [
    (b"\xff\xfe", {"Content-Length": "2"}, "not UTF-8"),
    (b"{}", {"Content-Length": "two"}, "bad Content-Length"),
    (b"{}", {"Content-Length": "-2"}, "bad Content-Length"),
    (b"{}", {"Content-Length": "99999999999"}, "bad Content-Length"),
    (b'{"action": {"type": "delay", "delay_ms": NaN}}', {}, "NaN is not a number"),
    (b'{"action": {"type": "delay", "delay_ms": 1e999}}', {}, "expected a finite number"),
    (b'{"action": {"type": "delay", "delay_ms": -5}}', {}, "must be >= 0"),
])
def test_control_api_rejects_bad_requests_with_400(control: tuple[ControlServer, Path], body: bytes,
                                                   headers: dict[str, str], msg: str) -> None:
    ctl, evpath = control
    headers = headers or {"Content-Length": str(len(body))}
    status, out = post(ctl, body, headers)
    assert status == 400 and msg in out["error"]
    assert ctl.proxy.ruleset.rules == []
    for line in evpath.read_text().splitlines():  # the log stays strict JSON
        json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in the event log"))


def test_event_log_is_strict_json_even_for_non_finite_values(tmp_path: Path) -> None:
    with EventWriter(tmp_path / "e.jsonl", "zkproxy") as ev:
        ev.emit("frame", held_ms=math.nan, delay_ms=math.inf, sub={"x": [-math.inf, 1.5]})
    line = (tmp_path / "e.jsonl").read_text()
    value = json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in the event log"))["value"]
    assert value == {"held_ms": "NaN", "delay_ms": "Infinity", "sub": {"x": ["-Infinity", 1.5]}}
