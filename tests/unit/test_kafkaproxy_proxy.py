"""nemesis.kafkaproxy in-process against a scripted fake broker speaking real Kafka frames (kio):
request/response events, hold and release (control API), drop, duplicate, delay, and a
malformed-frame fuzz of both directions against an echo server that leaves the proxy up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import socketserver
import struct
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from history import EventWriter
from nemesis.kafkaproxy import KafkaProxy, KafkaProxyClient, KafkaProxyProcess, ListenerSpec, parse_rules
from nemesis.kafkaproxy.codec import decode_request
from nemesis.wireproxy.control import ControlServer
from tests import kafka_samples as ks

TIMEOUT = 10.0


class FakeBroker:
    """Answers LeaderAndIsr with STALE_BROKER_EPOCH, UpdateMetadata with none, other APIs not at all
    (so a test can tell which requests arrived: ``got``, correlation ids in arrival order)."""

    def __init__(self) -> None:
        self.got: list[tuple[int | None, int | None]] = []  # (api key, correlation id)
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await r.readexactly(4))[0]
                d = decode_request(await r.readexactly(size))
                self.got.append((d.api_key, d.correlation_id))
                if d.api_key == 4:
                    w.write(ks.answer(ks.leader_and_isr_v7_response(ErrorCode.stale_broker_epoch), d.correlation_id))
                elif d.api_key == 6:
                    w.write(ks.answer(ks.update_metadata_v8_response(), d.correlation_id))
                await w.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            w.close()


class Client:
    def __init__(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        self.r, self.w = r, w

    def send(self, data: bytes) -> None:
        self.w.write(data)

    async def response_id(self, timeout: float = TIMEOUT) -> int:
        size = struct.unpack(">i", await asyncio.wait_for(self.r.readexactly(4), timeout))[0]
        body = await asyncio.wait_for(self.r.readexactly(size), timeout)
        return struct.unpack(">i", body[:4])[0]

    async def nothing_for(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self.r.read(1), seconds)
        except TimeoutError:
            return True
        return False


def events(path: Path) -> list[dict[str, Any]]:
    return [{"f": d["f"], "seq": d["seq"], **d["value"]} for d in map(json.loads, path.read_text().splitlines())]


def frames(evs: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    return [e for e in evs if e["f"] == "kafka_frame" and all(e.get(k) == v for k, v in kw.items())]


async def until(pred: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


Scenario = Callable[[KafkaProxy, FakeBroker, Client], Awaitable[None]]


def run(tmp_path: Path, scenario: Scenario, rules: list[dict] | None = None) -> list[dict[str, Any]]:
    evpath = tmp_path / "kafkaproxy.jsonl"

    async def main() -> None:
        broker = FakeBroker()
        await broker.start()
        ev = EventWriter(evpath, "kafkaproxy")
        proxy = KafkaProxy([ListenerSpec("127.0.0.1", 0, "127.0.0.1", broker.port)], ev, broker_ids=[2],
                           rules=parse_rules(rules or []))
        (_, port), = await proxy.start()
        r, w = await asyncio.open_connection("127.0.0.1", port)
        try:
            await scenario(proxy, broker, Client(r, w))
        finally:
            w.close()
            await proxy.stop()
            broker.server.close()
            ev.close()

    asyncio.run(main())
    return events(evpath)


@contextlib.contextmanager
def control_api(proxy: KafkaProxy, loop: asyncio.AbstractEventLoop) -> Any:
    """The proxy's control API served on loopback for one scenario, and a client of it."""
    ctl = ControlServer(proxy, loop)
    ctl.start()
    try:
        yield KafkaProxyClient(ctl.host, ctl.port)
    finally:
        ctl.stop()


def test_a_control_request_and_its_response_are_one_event_each(tmp_path: Path) -> None:
    async def sc(proxy: KafkaProxy, broker: FakeBroker, c: Client) -> None:
        c.send(ks.frame(ks.leader_and_isr_v7(partitions=60), 17))
        assert await c.response_id() == 17

    evs = run(tmp_path, sc)
    req, = frames(evs, kind="request")
    resp, = frames(evs, kind="response")
    assert {k: req[k] for k in ("api", "api_key", "api_version", "correlation_id", "client_id", "decoded",
                                "src_broker", "dst_broker", "controller_id", "controller_epoch", "broker_epoch",
                                "partition_count", "action", "dir")} == {
        "api": "LeaderAndIsr", "api_key": 4, "api_version": 7, "correlation_id": 17, "client_id": "controller-1",
        "decoded": True, "src_broker": 1, "dst_broker": 2, "controller_id": 1, "controller_epoch": 3,
        "broker_epoch": 4242, "partition_count": 60, "action": "forward", "dir": "c2s"}
    assert len(req["partitions"]) == 50  # capped; partition_count says all
    assert req["partitions"][0] == {"topic": "t", "topic_id": "00000000-0000-0000-0000-00000000002a", "partition": 0,
                                    "leader": 1, "leader_epoch": 5, "isr": [1, 2], "partition_epoch": 1}
    assert resp["api"] == "LeaderAndIsr" and resp["correlation_id"] == 17 and resp["req_seq"] == req["seq"]
    assert resp["error"] == "STALE_BROKER_EPOCH" and resp["errors"] == ["STALE_BROKER_EPOCH"]
    assert resp["controller_epoch"] == 3 and resp["broker_epoch"] == 4242 and resp["latency_ms"] >= 0


def test_hold_keeps_a_request_that_later_ones_overtake_until_released(tmp_path: Path) -> None:
    rules = [{"id": "stale", "match": {"api": "LeaderAndIsr"}, "action": "hold", "budget": {"times": 1}}]

    async def sc(proxy: KafkaProxy, broker: FakeBroker, c: Client) -> None:
        loop = asyncio.get_running_loop()
        with control_api(proxy, loop) as api:
            c.send(ks.frame(ks.leader_and_isr_v7(controller_epoch=3), 1))
            c.send(ks.frame(ks.update_metadata_v8(controller_epoch=4), 2))
            assert await c.response_id() == 2  # the later request overtook the held one
            held = await loop.run_in_executor(None, api.held)
            assert [(h["rule_id"], h["dir"]) for h in held] == [("stale", "c2s")]
            assert broker.got == [(6, 2)]
            assert await loop.run_in_executor(None, api.release, "stale") == 1
            assert await c.response_id() == 1  # delivered late: the stale request
            assert broker.got == [(6, 2), (4, 1)]
            assert await loop.run_in_executor(None, api.release) == 0

    evs = run(tmp_path, sc, rules)
    held, = frames(evs, api="LeaderAndIsr", kind="request")
    assert held["action"] == "hold" and held["rule_id"] == "stale"
    rel, = [e for e in evs if e["f"] == "hold_released"]
    assert rel["frame_seq"] == held["seq"] and rel["how"] == "control"
    assert any(e["f"] == "frame_released" and e["frame_seq"] == held["seq"] for e in evs)


def test_capture_forwards_and_replay_resends_on_a_connection_of_its_own(tmp_path: Path) -> None:
    """The captured LeaderAndIsr reaches the broker at once, and again when replayed: on a new
    upstream connection, its answer read and logged; request and answer cite the captured frame."""
    rules = [{"id": "cap", "match": {"api": "LeaderAndIsr", "kind": "request"}, "action": "capture",
              "budget": {"times": 1}}]

    async def sc(proxy: KafkaProxy, broker: FakeBroker, c: Client) -> None:
        loop = asyncio.get_running_loop()
        with control_api(proxy, loop) as api:
            c.send(ks.frame(ks.leader_and_isr_v7(controller_epoch=3), 1))
            assert await c.response_id() == 1  # forwarded as it came
            c.send(ks.frame(ks.leader_and_isr_v7(controller_epoch=4), 2))  # past the budget: not captured
            assert await c.response_id() == 2
            (cap,) = await loop.run_in_executor(None, api.captured)
            assert (cap["rule_id"], cap["dir"], cap["listener"]) == ("cap", "c2s", 0)
            (out,) = await loop.run_in_executor(None, api.replay, "cap")
            assert out["replay_of"] == cap["frame_seq"] and out["error"] == "STALE_BROKER_EPOCH"
            assert broker.got == [(4, 1), (4, 2), (4, 1)]  # the first one, again
            assert await c.nothing_for(0.1)  # the client's connection carries no second answer
            assert len(await loop.run_in_executor(None, api.replay)) == 1  # the copy is kept: again
            msg = await loop.run_in_executor(None, lambda: _error_of(api.replay, "other"))
            assert "HTTP 400" in msg and "nothing captured by rule other" in msg

    evs = run(tmp_path, sc, rules)
    orig = frames(evs, action="capture")
    assert [(f["kind"], f["rule_id"], f["correlation_id"]) for f in orig] == [("request", "cap", 1)]
    replays = frames(evs, action="replay")
    assert [(f["kind"], f["replay_of"]) for f in replays] == [("request", orig[0]["seq"]), ("response", orig[0]["seq"])] * 2
    req, resp = replays[:2]
    assert req["conn"] != orig[0]["conn"] and resp["req_seq"] == req["seq"] and resp["error"] == "STALE_BROKER_EPOCH"
    assert req["controller_epoch"] == 3 and req["dst_broker"] == 2
    opens = [e for e in evs if e["f"] == "conn_open" and e.get("replay")]
    closes = [e for e in evs if e["f"] == "conn_close" and e.get("replay")]
    assert [e["conn"] for e in opens] == [e["conn"] for e in closes] == [req["conn"], replays[2]["conn"]]
    assert all(e["client"] == "replay" for e in opens) and closes[0]["reason"] == "done"


def _error_of(fn: Callable[..., Any], *args: Any) -> str:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the message is the test's subject
        return str(e)
    return ""


def test_hold_ms_releases_by_itself_and_a_closed_connection_discards(tmp_path: Path) -> None:
    rules = [{"id": "h", "match": {"api": "UpdateMetadata", "kind": "request"}, "action": {"type": "hold", "hold_ms": 200}},
             {"id": "forever", "match": {"api": "LeaderAndIsr"}, "action": "hold"}]

    async def sc(proxy: KafkaProxy, broker: FakeBroker, c: Client) -> None:
        c.send(ks.frame(ks.update_metadata_v8(), 5))
        c.send(ks.frame(ks.leader_and_isr_v7(), 6))
        assert await c.nothing_for(0.1)
        assert await c.response_id() == 5
        c.w.close()
        await until(lambda: not proxy.held, "the held LeaderAndIsr to be discarded with its connection")

    evs = run(tmp_path, sc, rules)
    assert [e["how"] for e in evs if e["f"] == "hold_released"] == ["hold_ms"]
    assert [e["reason"] for e in evs if e["f"] == "frame_discarded"] == ["conn_closed"]


def test_drop_duplicate_and_delay(tmp_path: Path) -> None:
    rules = [{"id": "drop", "match": {"api": "LeaderAndIsr", "partition": 0}, "action": "drop",
              "budget": {"times": 1}},
             {"id": "dup", "match": {"api": "UpdateMetadata", "kind": "request"},
              "action": {"type": "duplicate", "copies": 1}, "budget": {"times": 1}},
             {"id": "slow", "match": {"api": "LeaderAndIsr", "kind": "response"},
              "action": {"type": "delay", "delay_ms": 150}}]

    async def sc(proxy: KafkaProxy, broker: FakeBroker, c: Client) -> None:
        c.send(ks.frame(ks.leader_and_isr_v7(), 1))
        c.send(ks.frame(ks.update_metadata_v8(), 2))
        assert [await c.response_id(), await c.response_id()] == [2, 2]
        assert broker.got == [(6, 2), (6, 2)]
        t0 = asyncio.get_running_loop().time()
        c.send(ks.frame(ks.leader_and_isr_v7(), 3))
        assert await c.response_id() == 3
        assert asyncio.get_running_loop().time() - t0 >= 0.14

    evs = run(tmp_path, sc, rules)
    assert [e["action"] for e in frames(evs, kind="request")] == ["drop", "duplicate", "forward"]
    assert frames(evs, kind="request", api="UpdateMetadata")[0]["copies"] == 1
    # both answers to the duplicated request are matched: the proxy queued its pending twice
    ums = frames(evs, kind="response", api="UpdateMetadata")
    assert len(ums) == 2 and all(e.get("parse_error") is None for e in ums)
    assert frames(evs, kind="response", api="LeaderAndIsr")[0]["delay_ms"] == 150


def malformed_stream(seed: int, n: int = 2100) -> bytes:
    """``n`` well-framed but malformed frames: random bodies, real frames with bytes flipped, cut short."""
    rng = random.Random(seed)
    seeds = [ks.frame(e, 9)[4:] for e in (ks.leader_and_isr_v7(), ks.update_metadata_v8(), ks.stop_replica_v3(),
                                          ks.fetch_v12(), ks.api_versions_v3(), ks.leader_and_isr_v1())]

    def body(i: int) -> bytes:
        if i % 3 == 0:
            return rng.randbytes(rng.randint(0, 80))
        b = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(0, 5)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b[: rng.randint(0, len(b))]) if i % 3 == 1 else bytes(b)

    return b"".join(struct.pack(">i", len(b)) + b for b in (body(i) for i in range(n)))


def test_malformed_frames_both_ways_leave_the_proxy_up(tmp_path: Path) -> None:
    """>= 2,000 malformed frames each way (random bodies, real frames mutated or cut, unknown keys)
    through an echo server: every frame comes back byte for byte, no connection dies of an internal
    error, bad size prefixes cost only their own connection, and the loop logs no exception."""
    wire = malformed_stream(42)
    evpath = tmp_path / "fuzz.jsonl"
    loop_errors: list[dict] = []

    async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        except ConnectionError:
            pass
        w.close()

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: loop_errors.append(ctx))
        srv = await asyncio.start_server(echo, "127.0.0.1", 0)
        ev = EventWriter(evpath, "kafkaproxy")
        proxy = KafkaProxy([ListenerSpec("127.0.0.1", 0, "127.0.0.1", srv.sockets[0].getsockname()[1])], ev)
        (_, port), = await proxy.start()
        try:
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(wire)
            got = await asyncio.wait_for(r.readexactly(len(wire)), 60)
            assert got == wire
            w.close()
            for bad in (struct.pack(">i", -1) + b"x", struct.pack(">i", 2**31 - 1) + b"x", struct.pack(">i", 16) + b"cut"):
                r, w = await asyncio.open_connection("127.0.0.1", port)
                w.write(bad)
                await w.drain()
                w.write_eof()
                assert await asyncio.wait_for(r.read(), TIMEOUT) == b""
                w.close()
            r, w = await asyncio.open_connection("127.0.0.1", port)  # still serving
            good = ks.frame(ks.api_versions_v3(), 1)
            w.write(good)
            assert await asyncio.wait_for(r.readexactly(len(good)), TIMEOUT) == good
            w.close()
            await until(lambda: not proxy.conns, "every connection to close")
        finally:
            await proxy.stop()
            srv.close()
            ev.close()

    asyncio.run(main())
    evs = events(evpath)
    assert len(frames(evs, dir="c2s")) >= 2000 and len(frames(evs, dir="s2c")) >= 2000
    assert not any("internal" in str(e.get("error", "")) for e in evs if e["f"] == "protocol_error")
    assert [e["error"][:10] for e in evs if e["f"] == "protocol_error"] == ["frame size"] * 2
    assert not any(str(e.get("reason", "")).startswith("internal") for e in evs if e["f"] == "conn_close")
    assert loop_errors == []


def test_control_api_refuses_an_unknown_api_name(tmp_path: Path) -> None:
    async def sc(proxy: KafkaProxy, broker: FakeBroker, c: Client) -> None:
        loop = asyncio.get_running_loop()
        with control_api(proxy, loop) as api:
            def bad() -> str:
                try:
                    api.add_rule({"match": {"api": "Nope"}, "action": "drop"})
                except Exception as e:  # noqa: BLE001
                    return str(e)
                return ""
            msg = await loop.run_in_executor(None, bad)
            assert "HTTP 400" in msg and "key 'match.api'" in msg
            assert await loop.run_in_executor(None, api.add_rule, {"id": "ok", "match": {"api": 4}, "action": "hold"}) == "ok"

    run(tmp_path, sc)


def test_the_proxy_process_survives_the_fuzz_with_no_traceback(tmp_path: Path) -> None:
    """The same fuzz, and a raw garbage stream, through ``python -m nemesis.kafkaproxy``: it stays up,
    answers its control API, and its log has no traceback."""
    wire = malformed_stream(7)

    class Echo(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with contextlib.suppress(OSError):
                while data := self.request.recv(65536):
                    self.request.sendall(data)

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo) as echo:
        echo.daemon_threads = True
        threading.Thread(target=echo.serve_forever, daemon=True).start()
        up = f"127.0.0.1:{echo.server_address[1]}"
        with KafkaProxyProcess([up], tmp_path / "ev.jsonl", tmp_path / "proxy") as pp:
            with socket.create_connection(("127.0.0.1", pp.ports[0]), 10) as s:
                s.sendall(wire)
                got = b""
                while len(got) < len(wire):
                    chunk = s.recv(1 << 16)
                    assert chunk, "the proxy closed a connection of well-framed frames"
                    got += chunk
                assert got == wire
            rng = random.Random(3)
            for _ in range(20):  # raw garbage: most of it has a size prefix no broker takes
                with socket.create_connection(("127.0.0.1", pp.ports[0]), 10) as s:
                    s.sendall(rng.randbytes(rng.randint(1, 4096)))
                    s.shutdown(socket.SHUT_WR)
                    s.settimeout(10)
                    while s.recv(65536):
                        pass
            assert pp.client.health()["ok"] and pp.process.poll() is None
        echo.shutdown()
    log = (tmp_path / "proxy" / "kafkaproxy.log").read_text()
    assert "Traceback" not in log and "internal error" not in (tmp_path / "ev.jsonl").read_text()
    evs = events(tmp_path / "ev.jsonl")
    assert len(frames(evs, dir="c2s")) >= 2000 and len(frames(evs, dir="s2c")) >= 2000
