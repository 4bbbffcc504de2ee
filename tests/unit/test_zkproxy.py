"""nemesis.zkproxy against a scripted fake ZooKeeper (no JVM): ordering, FIFO matching, faults, control API."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import zkwire as z
from history import EventWriter
from nemesis.zkproxy import ListenerSpec, ZkProxy, ZkProxyClient, ZkProxyError, parse_rules
from nemesis.zkproxy.control import ControlServer

TIMEOUT = 10.0


class FakeZk:
    """Enough of a ZooKeeper server: sessions, FIFO replies, a notification before each multi reply."""

    def __init__(self) -> None:
        self.next_sid = 0x100
        self.received: list[tuple[int, int]] = []  # (xid, op) in arrival order
        self.connects: list[z.ConnectRequest] = []
        self.zxid = 0
        self.server: asyncio.base_events.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()

    async def _serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            first = await r.readexactly(4)
            if z.is_four_letter_word(first):
                w.write(b"imok")
                await w.drain()
                w.close()
                return
            creq = z.ConnectRequest.decode(await r.readexactly(z.frame_length(first)))
            self.connects.append(creq)
            self.next_sid += 1
            sid = creq.session_id or self.next_sid
            w.write(z.encode_connect_response(z.ConnectResponse(0, creq.timeout, sid)))
            while True:
                _, body = await z.read_frame(r)
                p = z.parse_request(body)
                self.received.append((p.xid, p.op))
                self.zxid += 1
                if p.op == z.OpCode.PING:
                    w.write(z.encode_reply(-2, self.zxid, 0))
                elif p.op == z.OpCode.MULTI:
                    assert isinstance(p.body, z.MultiRequest)
                    path = p.paths[0]
                    w.write(z.encode_notification(z.WatcherEvent(1, 3, path)))
                    res = z.MultiResponse([(1, z.PathResponse(path)), (5, z.StatResponse(z.Stat(czxid=self.zxid)))])
                    w.write(z.encode_reply(p.xid, self.zxid, 0, res))
                elif p.op == z.OpCode.GET_DATA:
                    w.write(z.encode_reply(p.xid, self.zxid, 0, z.GetDataResponse(b"d", z.Stat())))
                elif p.op == z.OpCode.CLOSE_SESSION:
                    w.write(z.encode_reply(p.xid, self.zxid, 0))
                    await w.drain()
                    w.close()
                    return
                else:
                    w.write(z.encode_reply(p.xid, self.zxid, -101))
                await w.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            w.close()


class Client:
    """A raw asyncio client through the proxy."""

    def __init__(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        self.r, self.w = r, w

    @classmethod
    async def open(cls, port: int) -> Client:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        return cls(r, w)

    def send(self, data: bytes) -> None:
        self.w.write(data)

    async def frame(self, timeout: float = TIMEOUT) -> bytes:
        _, body = await asyncio.wait_for(z.read_frame(self.r), timeout)
        return body

    async def handshake(self, timeout_ms: int = 4000) -> z.ConnectResponse:
        self.send(z.encode_connect_request(z.ConnectRequest(timeout=timeout_ms)))
        return z.ConnectResponse.decode(await self.frame())

    async def nothing_for(self, seconds: float) -> bool:
        """True if no byte and no EOF arrives within ``seconds``."""
        try:
            data = await asyncio.wait_for(self.r.read(1), seconds)
        except TimeoutError:
            return True
        return data is None  # pragma: no cover

    async def at_eof(self, timeout: float = TIMEOUT) -> bool:
        return await asyncio.wait_for(self.r.read(1), timeout) == b""


async def until(pred: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def events(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text().splitlines():
        d = json.loads(line)
        out.append({"f": d["f"], "seq": d["seq"], **d["value"]})
    return out


def frames(evs: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    return [e for e in evs if e["f"] == "frame" and all(e.get(k) == v for k, v in kw.items())]


Scenario = Callable[[ZkProxy, FakeZk, int], Awaitable[None]]


def run(tmp_path: Path, scenario: Scenario, rules: list[dict] | None = None, seed: int = 0,
        **kw: Any) -> list[dict[str, Any]]:
    evpath = tmp_path / "zkproxy.jsonl"

    async def main() -> None:
        fake = FakeZk()
        await fake.start()
        ev = EventWriter(evpath, "zkproxy")
        proxy = ZkProxy([ListenerSpec("127.0.0.1", 0, "127.0.0.1", fake.port)], ev,
                        rules=parse_rules(rules or []), seed=seed, **kw)
        (_, port), = await proxy.start()
        try:
            await asyncio.wait_for(scenario(proxy, fake, port), 20)
        finally:
            await proxy.stop()
            await fake.stop()
            ev.close()

    asyncio.run(main())
    return events(evpath)


# ---------------------------------------------------------------------------------------------


def test_forward_matches_replies_fifo_and_notifications_never_pop(tmp_path: Path) -> None:
    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        resp = await c.handshake()
        assert resp.session_id == 0x101
        c.send(z.encode_request(1, 14, z.registration_multi("/brokers/ids/1", b"x"))
               + z.encode_request(2, 4, z.GetDataRequest("/a")) + z.encode_request(-2, 11))
        bodies = [await c.frame() for _ in range(4)]
        assert [z.ReplyHeader.decode(b[:16]).xid for b in bodies] == [-1, 1, 2, -2]
        c.send(z.encode_request(3, -11))
        await c.frame()
        assert await c.at_eof()

    evs = run(tmp_path, scenario)
    multi_req, = frames(evs, dir="c2s", op=14)
    assert multi_req["sub_ops"][0] == {"type": 1, "op_name": "create", "path": "/brokers/ids/1", "flags": 1}
    assert multi_req["ephemeral"] is True and multi_req["session_id"] == 0x101
    note, = frames(evs, kind="notification")
    assert note["path"] == "/brokers/ids/1" and "req_seq" not in note
    multi_rep, = frames(evs, dir="s2c", kind="reply", op=14)
    assert multi_rep["req_seq"] == multi_req["seq"] and multi_rep["created_paths"] == ["/brokers/ids/1"]
    get_rep, = frames(evs, dir="s2c", op=4)
    assert get_rep["req_seq"] == frames(evs, dir="c2s", op=4)[0]["seq"]
    assert frames(evs, dir="s2c", kind="ping")[0]["xid"] == -2
    assert frames(evs, dir="s2c", kind="close")[0]["op_name"] == "closeSession"
    est, = [e for e in evs if e["f"] == "session_established"]
    assert est["session_id"] == 0x101 and est["new"] and est["forwarded_to_client"]
    close, = [e for e in evs if e["f"] == "conn_close"]
    assert close["closed_first"] == "server" and close["pending"] == 0
    assert not [e for e in evs if e["f"] in ("xid_mismatch", "protocol_error")]
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))


def test_delay_holds_later_frames_without_reordering(tmp_path: Path) -> None:
    rules = [{"id": "slow", "match": {"dir": "c2s", "op": "getData"}, "action": {"type": "delay", "delay_ms": 300},
              "budget": {"times": 1}}]

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        await c.handshake()
        c.send(z.encode_request(1, 4, z.GetDataRequest("/a")) + z.encode_request(2, 3, z.ExistsRequest("/b"))
               + z.encode_request(3, 4, z.GetDataRequest("/c")))
        xids = [z.ReplyHeader.decode((await c.frame())[:16]).xid for _ in range(3)]
        assert xids == [1, 2, 3]
        assert [x for x, _ in fake.received] == [1, 2, 3]

    evs = run(tmp_path, scenario, rules)
    delayed = frames(evs, dir="c2s", action="delay")
    assert len(delayed) == 1 and delayed[0]["xid"] == 1 and delayed[0]["rule_id"] == "slow"
    # the frames behind it were released after it, in order
    released = [e["frame_seq"] for e in evs if e["f"] == "frame_released"]
    assert released[0] == delayed[0]["seq"] and released == sorted(released) and len(released) == 3
    # ... and are logged as forwarded but held: each carries how long it waited (issue 12.6.1)
    behind = frames(evs, dir="c2s", action="forward", kind="request")
    assert [e["xid"] for e in behind] == [2, 3] and all(0 < e["held_ms"] <= 300 for e in behind)
    assert "held_ms" not in frames(evs, dir="s2c", kind="connect_resp")[0]


def test_drop_connect_response_then_blackhole_hides_the_session(tmp_path: Path) -> None:
    rules = [{"id": "orphan", "match": {"dir": "s2c", "kind": "connect_resp"},
              "action": {"type": "drop_then_blackhole", "mode": "s2c"}, "budget": {"times": 1}}]

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        c.send(z.build_pipelined_register("/brokers/ids/2", b"info", session_timeout_ms=3000))
        await until(lambda: fake.received == [(1, 14)], "the server to run the pipelined multi")
        await until(lambda: len(frames(events(tmp_path / "zkproxy.jsonl"), action="blackholed")) == 2,
                    "the hidden replies")
        assert await c.nothing_for(0.2)
        assert [s["session_id"] for s in proxy.sessions.values()] == [0x101]
        conn, = proxy.conns.values()
        assert conn.blackhole == {"c2s": False, "s2c": True}
        c.w.close()
        # budget spent: the next connection is untouched
        c2 = await Client.open(port)
        assert (await c2.handshake()).session_id == 0x102
        c2.w.close()

    evs = run(tmp_path, scenario, rules)
    resp, = frames(evs, kind="connect_resp", conn=1)
    assert resp["action"] == "drop_then_blackhole" and resp["session_id"] == 0x101
    est = [e for e in evs if e["f"] == "session_established"]
    assert [(e["session_id"], e["forwarded_to_client"]) for e in est] == [(0x101, False), (0x102, True)]
    bh, = [e for e in evs if e["f"] == "blackhole"]
    assert bh["dirs"] == ["s2c"] and bh["cause_seq"] == resp["seq"]
    hidden = frames(evs, conn=1, dir="s2c", action="blackholed")
    assert [h["kind"] for h in hidden] == ["notification", "reply"] and hidden[1]["multi_errs"] == [0, 0]


def test_drop_then_close_and_close_after(tmp_path: Path) -> None:
    rules = [
        {"id": "kill-multi", "match": {"dir": "s2c", "kind": "reply", "op": "multi", "conn": 1},
         "action": {"type": "drop_then_close", "after_ms": 50}},
        {"id": "close-after-get", "match": {"dir": "s2c", "op": "getData", "conn": 2},
         "action": {"type": "close", "when": "after"}},
    ]

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        await c.handshake()
        c.send(z.encode_request(1, 14, z.registration_multi("/p", b"")))
        note = await c.frame()  # the notification before the reply is forwarded...
        assert z.ReplyHeader.decode(note[:16]).xid == -1
        assert await c.at_eof()  # ...the reply is dropped and the proxy closes
        c2 = await Client.open(port)
        await c2.handshake()
        c2.send(z.encode_request(1, 4, z.GetDataRequest("/a")))
        assert z.ReplyHeader.decode((await c2.frame())[:16]).xid == 1  # delivered, then closed
        assert await c2.at_eof()

    evs = run(tmp_path, scenario, rules)
    closes = {e["conn"]: e for e in evs if e["f"] == "conn_close"}
    assert closes[1]["closed_first"] == "proxy" and closes[1]["reason"] == "rule:kill-multi"
    assert closes[2]["closed_first"] == "proxy"
    assert [e["f"] for e in evs if e["f"] in ("close_scheduled", "proxy_close")][:2] == ["close_scheduled",
                                                                                         "proxy_close"]


def test_blackhole_both_hides_client_frames_and_fins(tmp_path: Path) -> None:
    rules = [{"id": "part", "match": {"dir": "c2s", "kind": "ping"}, "action": {"type": "drop_then_blackhole",
                                                                                 "mode": "both"}}]

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        await c.handshake()
        c.send(z.encode_request(-2, 11) + z.encode_request(1, 4, z.GetDataRequest("/a")))
        assert await c.nothing_for(0.3)
        assert fake.received == []
        c.w.close()
        conn, = proxy.conns.values()
        await until(lambda: conn.closed_first == "client", "the proxy to see the client close")
        await asyncio.sleep(0.1)  # the client's FIN is not passed on: upstream stays open
        assert conn.closed_first == "client" and conn.up_w is not None and not conn.up_w.is_closing()

    evs = run(tmp_path, scenario, rules)
    assert [e["action"] for e in frames(evs, dir="c2s")] == ["forward", "drop_then_blackhole", "blackholed"]


def test_unsafe_drop_continues(tmp_path: Path) -> None:
    rules = [{"id": "d", "unsafe": True, "match": {"dir": "s2c", "op": "getData"}, "action": "drop",
              "budget": {"times": 1}}]

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        await c.handshake()
        c.send(z.encode_request(1, 4, z.GetDataRequest("/a")) + z.encode_request(2, 4, z.GetDataRequest("/b")))
        assert z.ReplyHeader.decode((await c.frame())[:16]).xid == 2

    evs = run(tmp_path, scenario, rules)
    assert [e["action"] for e in frames(evs, dir="s2c", op=4)] == ["drop", "forward"]


def test_four_letter_word_is_piped_raw(tmp_path: Path) -> None:
    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        c.send(b"ruok")
        assert await asyncio.wait_for(c.r.read(), TIMEOUT) == b"imok"

    evs = run(tmp_path, scenario, [{"action": {"type": "drop_then_close"}}])  # rules never see RAW
    assert [e["word"] for e in evs if e["f"] == "four_letter"] == ["ruok"]
    assert not frames(evs)


def test_protocol_error_on_oversized_frame(tmp_path: Path) -> None:
    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        c.send((z.JUTE_MAXBUFFER + z.JUTE_EXTRASIZE + 1).to_bytes(4, "big"))  # past the default limit
        assert await c.at_eof()

    evs = run(tmp_path, scenario)
    assert [e["f"] for e in evs if e["f"] == "protocol_error"] == ["protocol_error"]


def test_held_frames_discarded_when_client_closes(tmp_path: Path) -> None:
    rules = [{"id": "slow", "match": {"dir": "c2s", "kind": "connect_req"},
              "action": {"type": "delay", "delay_ms": 300}}]

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        c.send(z.build_pipelined_register("/brokers/ids/3", b"x"))
        await asyncio.sleep(0.05)
        c.w.close()
        await until(lambda: len([e for e in events(tmp_path / "zkproxy.jsonl")
                                 if e["f"] == "frame_discarded"]) == 2, "held frames to be discarded")
        assert fake.connects == [] and fake.received == []

    evs = run(tmp_path, scenario, rules, held_on_close="discard")
    assert len([e for e in evs if e["f"] == "frame_discarded"]) == 2


@pytest.mark.parametrize("held", ["connect_req", "connect_resp"])
def test_handshake_held_past_the_client_close_is_an_orphan(tmp_path: Path, held: str) -> None:
    rules = [{"id": "slow", "match": {"kind": held}, "action": {"type": "delay", "delay_ms": 300}}]

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        c.send(z.encode_connect_request(z.ConnectRequest(timeout=4000)))
        await asyncio.sleep(0.05)
        c.w.close()  # the client gives up while the proxy holds its ConnectRequest
        await until(lambda: [e for e in events(tmp_path / "zkproxy.jsonl") if e["f"] == "conn_close"],
                    "the connection to end")

    evs = run(tmp_path, scenario, rules)
    kinds = [e["f"] for e in evs]
    closed, = [e for e in evs if e["f"] == "client_close"]
    assert closed["reason"] == "eof" and closed["held_on_close"] == "deliver"
    assert kinds.index("client_close") < kinds.index("frame_released")
    resp, = frames(evs, kind="connect_resp")
    assert resp["connect_result"] == "new" and resp.get("client_closed", False) is (held == "connect_req")
    if held == "connect_req":
        assert 0 < closed["held_ms"] <= 300
    est, = [e for e in evs if e["f"] == "session_established"]
    assert est["session_id"] == 0x101 and est["forwarded_to_client"] is False
    orphan, = [e for e in evs if e["f"] == "session_orphaned"]
    assert orphan == {**orphan, "session_id": 0x101, "reason": "client_closed", "frame_seq": resp["seq"]}


def test_frame_limit_is_configurable(tmp_path: Path) -> None:
    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        c.send(z.frame(z.ConnectRequest(timeout=4000).encode()))  # 45 bytes: under the limit
        await c.frame()
        c.send(z.encode_request(1, 4, z.GetDataRequest("/" + "x" * 64)))  # over it
        assert await c.at_eof()

    evs = run(tmp_path, scenario, max_frame=64)
    assert evs[0]["max_frame"] == 64
    err, = [e for e in evs if e["f"] == "protocol_error"]
    assert err["dir"] == "c2s" and "outside [0, 64]" in err["error"]
    for bad in (0, -1, 2**31, True):
        with pytest.raises(ValueError, match="max_frame"):
            ZkProxy([], EventWriter(tmp_path / "x.jsonl", "zkproxy"), max_frame=bad)


def test_control_api_round_trip(tmp_path: Path) -> None:
    results: dict[str, Any] = {}

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        ctl = ControlServer(proxy, asyncio.get_running_loop())
        ctl.start()
        api = ZkProxyClient(ctl.host, ctl.port)
        c = await Client.open(port)
        await c.handshake()

        def blocking() -> None:
            results["health"] = api.health()
            results["ids"] = api.add_rules([
                {"id": "later", "match": {"dir": "s2c", "op": "getData"}, "action": "close",
                 "budget": {"arm": "p"}},
            ])
            with pytest.raises(ZkProxyError) as ei:
                api.add_rule({"id": "bad", "action": "nope"})
            results["err"] = str(ei.value)
            with pytest.raises(ZkProxyError):
                api.add_rule({"id": "later", "action": "forward"})
            results["conns"] = api.connections()
            results["sessions"] = api.sessions()
            api.arm("p")
            results["armed"] = api.armed()

        await asyncio.to_thread(blocking)
        c.send(z.encode_request(1, 4, z.GetDataRequest("/a")))
        assert await c.at_eof()  # the armed rule closed the connection

        def after() -> None:
            results["rules"] = api.rules()
            api.remove_rule("later")
            with pytest.raises(ZkProxyError) as ei:
                api.remove_rule("later")
            results["404"] = ei.value.status
            results["disarm"] = api.disarm("p")

        await asyncio.to_thread(after)
        await asyncio.to_thread(ctl.stop)

    evs = run(tmp_path, scenario)
    assert results["health"]["ok"] and results["ids"] == ["later"]
    assert "control API: rule 1 (bad): key 'action.type'" in results["err"]
    assert results["conns"][0]["state"] == "ESTABLISHED" and results["sessions"][0]["session_id"] == 0x101
    assert "p" in results["armed"] and results["404"] == 404 and results["disarm"] is True
    assert results["rules"][0]["applied"] == 1
    assert [e["f"] for e in evs if e["f"].startswith("rule_")] == ["rule_added", "rule_armed", "rule_removed",
                                                                    "rule_armed"]


def test_proxy_process_ready_file_and_sigterm(tmp_path: Path) -> None:
    from nemesis.zkproxy import ProxyProcess

    done = threading.Event()

    async def upstream() -> None:
        fake = FakeZk()
        await fake.start()
        holder["port"] = fake.port
        started.set()
        while not done.is_set():
            await asyncio.sleep(0.05)
        await fake.stop()

    holder: dict[str, int] = {}
    started = threading.Event()
    t = threading.Thread(target=lambda: asyncio.run(upstream()), daemon=True)
    t.start()
    assert started.wait(5)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"id": "x", "action": "forward"}]}))
    pp = ProxyProcess([f"127.0.0.1:{holder['port']}"], tmp_path / "ev.jsonl", tmp_path, rules=rules, seed=42)
    with pp:
        assert pp.ports[0] > 0 and pp.client.health()["seed"] == 42
        assert [r["id"] for r in pp.client.rules()] == ["x"]
        with z.RawSession(pp.addresses[0]) as s:
            assert s.session_id == 0x101
    assert pp.process is not None and pp.process.returncode == 0
    done.set()
    evs = events(tmp_path / "ev.jsonl")
    assert evs[0]["f"] == "proxy_start" and evs[0]["seed"] == 42 and evs[-1]["f"] == "proxy_stop"


def test_bad_rules_file_exits_254(tmp_path: Path) -> None:
    import subprocess
    import sys

    rules = tmp_path / "r.toml"
    rules.write_text('[[rules]]\nid = "x"\naction = "drop"\n')
    p = subprocess.run([sys.executable, "-m", "nemesis.zkproxy", "--listen", "127.0.0.1:0=127.0.0.1:1",
                        "--events", str(tmp_path / "e.jsonl"), "--rules", str(rules)],
                       capture_output=True, text=True, timeout=30, cwd=Path(__file__).resolve().parents[2])
    assert p.returncode == 254
    assert p.stderr.strip().count("\n") == 0 and "r.toml: rule 0 (x): key 'action.type'" in p.stderr
    p = subprocess.run([sys.executable, "-m", "nemesis.zkproxy", "--listen", "127.0.0.1:0=127.0.0.1:1",
                        "--events", str(tmp_path / "e.jsonl"), "--max-frame", "0"],
                       capture_output=True, text=True, timeout=30, cwd=Path(__file__).resolve().parents[2])
    assert p.returncode == 254 and "--max-frame: must be in [1, 2^31), got 0" in p.stderr
