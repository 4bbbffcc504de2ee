"""The wire proxy as a process between kazoo / the raw pipelining client and a real ZooKeeper.

Each fault is observed twice: on the server (``cons``/``dump``) and in the proxy's events.
Timings are bounded, never asserted.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NodeExistsError
from kazoo.protocol.states import KazooState

import zkwire
from base.components.zookeeper import parse_dump_sessions
from nemesis.zkproxy import ProxyProcess
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]





def events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if line.endswith("}"):
            d = json.loads(line)
            out.append({"f": d["f"], "seq": d["seq"], **d["value"]})
    return out


def tracked_sessions(zk_server) -> set[int]:
    """Every session the server's SessionTracker knows (``dump``)."""
    dump = zk_server.four_letter("dump")
    section = dump.split("ephemeral nodes dump:")[0]
    return {int(m, 16) for m in re.findall(r"^\s+(0x[0-9a-f]+)\s*$", section, re.M)}


def cons_sessions(zk_server) -> set[int]:
    return {int(m, 16) for m in re.findall(r"sid=(0x[0-9a-f]+)", zk_server.four_letter("cons"))}


def owner_of(zk_server, path: str) -> int | None:
    for sid, paths in parse_dump_sessions(zk_server.four_letter("dump")).items():
        if path in paths:
            return sid
    return None


class Proxy:
    def __init__(self, pp: ProxyProcess) -> None:
        self.pp = pp
        self.api = pp.client
        self.hosts = pp.connect_string
        self.events_path = pp.events

    def events(self, f: str | None = None, **kw: Any) -> list[dict[str, Any]]:
        return [e for e in events(self.events_path)
                if (f is None or e["f"] == f) and all(e.get(k) == v for k, v in kw.items())]

    def wait_event(self, f: str, timeout: float = 15.0, **kw: Any) -> dict[str, Any]:
        return wait_for(lambda: (self.events(f, **kw) or [None])[0], timeout, f"proxy event {f} {kw}")


@pytest.fixture
def proxy(zk_server, tmp_path: Path) -> Iterator[Proxy]:
    with ProxyProcess([zk_server.connect_string], tmp_path / "zkproxy.jsonl", tmp_path, seed=7) as pp:
        yield Proxy(pp)


@pytest.fixture
def kazoo_clients() -> Iterator[list[KazooClient]]:
    clients: list[KazooClient] = []
    yield clients
    for c in clients:
        try:
            c.stop()
            c.close()
        except Exception:  # noqa: BLE001 - best-effort teardown
            pass


def kazoo(clients: list[KazooClient], hosts: str, timeout: float, start: bool = True) -> KazooClient:
    c = KazooClient(hosts=hosts, timeout=timeout, connection_retry={"max_tries": -1, "max_delay": 0.5})
    clients.append(c)
    if start:
        c.start(timeout=20)
    return c


# (a) ------------------------------------------------------------------------------------------


def test_dropped_connect_response_leaves_a_session_the_client_never_learned(proxy, zk_server, kazoo_clients):
    proxy.api.add_rule({"id": "hide-resp", "match": {"dir": "s2c", "kind": "connect_resp"},
                        "action": {"type": "drop_then_blackhole", "mode": "s2c"}, "budget": {"times": 1}})
    zk = kazoo(kazoo_clients, proxy.hosts, timeout=3.0, start=False)
    zk.start_async()
    hidden = proxy.wait_event("session_established", forwarded_to_client=False)
    sid = hidden["session_id"]
    # the server has the session and a live connection for it; the client has nothing yet
    assert sid in tracked_sessions(zk_server)
    assert sid in cons_sessions(zk_server)
    assert zk.client_id is None or zk.client_id[0] != sid
    # kazoo times out on the connect, asks for a *new* session and gets a different one
    wait_for(lambda: zk.connected, 20, "kazoo to connect on its retry")
    assert zk.client_id[0] != sid
    est = proxy.events("session_established")
    assert [e["forwarded_to_client"] for e in est] == [False, True] and est[1]["session_id"] == zk.client_id[0]
    resp = proxy.events("frame", kind="connect_resp")[0]
    assert resp["action"] == "drop_then_blackhole" and resp["rule_id"] == "hide-resp"
    assert proxy.events("conn_close", conn=1)[0]["closed_first"] == "client"
    # nobody ever pings for the orphan, so the server expires it about T after the ConnectRequest
    wait_for(lambda: sid not in tracked_sessions(zk_server), 15, "the orphan session to expire")
    assert zk.client_id[0] in tracked_sessions(zk_server)


# (b) ------------------------------------------------------------------------------------------


def test_connect_request_delayed_past_connect_timeout_makes_client_reconnect(proxy, zk_server, kazoo_clients):
    proxy.api.add_rule({"id": "slow-connect", "match": {"dir": "c2s", "kind": "connect_req"},
                        "action": {"type": "delay", "delay_ms": 4000}, "budget": {"times": 1}})
    zk = kazoo(kazoo_clients, proxy.hosts, timeout=2.0)  # connect timeout 2 s per host
    sid = zk.client_id[0]
    assert sid in cons_sessions(zk_server)
    delayed = proxy.events("frame", kind="connect_req", conn=1)[0]
    assert delayed["action"] == "delay" and delayed["delay_ms"] == 4000
    # kazoo gave up on conn 1; the proxy keeps it half-open while it holds the frame
    wait_for(lambda: [c for c in proxy.api.connections() if c["conn"] == 1 and c["closed_first"] == "client"],
             10, "conn 1 closed by the client")
    est = proxy.events("session_established", session_id=sid)[0]
    assert est["conn"] >= 2
    # the held ConnectRequest is still delivered after the client left (held_on_close=deliver), then
    # the client's FIN; whether the server answers before reading the FIN is a race, as on a real network
    proxy.wait_event("frame_released", frame_seq=delayed["seq"])
    assert proxy.wait_event("conn_close", conn=1)["closed_first"] == "client"
    closed = proxy.events("client_close", conn=1)[0]  # the client's close is in the log itself
    assert closed["seq"] < proxy.events("frame_released", frame_seq=delayed["seq"])[0]["seq"]
    # if the server did answer the late ConnectRequest, nobody received that session
    assert all(not e["forwarded_to_client"] for e in proxy.events("session_established", conn=1))


# (c) ------------------------------------------------------------------------------------------


def test_dropped_multi_reply_gives_connection_loss_but_the_znode_exists(proxy, zk_server, kazoo_clients):
    path = "/zkproxy-c/brokers/ids/1"
    direct = kazoo(kazoo_clients, zk_server.connect_string, timeout=4.0)
    direct.ensure_path("/zkproxy-c/brokers/ids")
    proxy.api.add_rule({"id": "lose-multi-reply",
                        "match": {"dir": "s2c", "kind": "reply", "op": "multi", "path_prefix": "/zkproxy-c/"},
                        "action": {"type": "drop_then_blackhole", "mode": "s2c"}, "budget": {"times": 1}})
    zk = kazoo(kazoo_clients, proxy.hosts, timeout=3.0)
    sid = zk.client_id[0]
    tx = zk.transaction()
    tx.create(path, b"", ephemeral=True)
    tx.set_data(path, b"broker-1", 0)
    with pytest.raises(ConnectionLoss):
        tx.commit_async().get(timeout=20)
    stat = direct.exists(path)
    assert stat is not None and stat.ephemeralOwner == sid  # the server committed it
    assert owner_of(zk_server, path) == sid
    lost = proxy.events("frame", dir="s2c", op=14, action="drop_then_blackhole")[0]
    assert lost["multi_errs"] == [0, 0] and lost["created_paths"] == [path] and lost["zxid"] == stat.czxid
    req = proxy.events("frame", seq=lost["req_seq"])[0]
    assert req["ephemeral"] is True and [s["path"] for s in req["sub_ops"]] == [path, path]
    # kazoo reconnects with the same session, so the node is its own (Kafka's O == C case)
    wait_for(lambda: zk.state == KazooState.CONNECTED, 20, "kazoo to reconnect")
    assert zk.client_id[0] == sid and direct.exists(path).ephemeralOwner == sid
    zk.delete(path)


# (d) ------------------------------------------------------------------------------------------


def test_client_to_server_blackhole_past_session_timeout_expires_the_session(proxy, zk_server, kazoo_clients):
    proxy.api.add_rule({"id": "partition", "match": {"dir": "c2s"},
                        "action": {"type": "drop_then_blackhole", "mode": "both"}, "budget": {"arm": "cut"}})
    zk = kazoo(kazoo_clients, proxy.hosts, timeout=2.0)
    sid = zk.client_id[0]
    states: list[str] = []
    zk.add_listener(lambda s: states.append(s))
    assert sid in tracked_sessions(zk_server)
    proxy.api.arm("cut")
    wait_for(lambda: sid not in tracked_sessions(zk_server), 20, "the server to expire the session")
    bh = proxy.events("blackhole")[0]
    assert bh["dirs"] == ["c2s", "s2c"] and bh["rule_id"] == "partition" and bh["session_id"] == sid
    proxy.api.disarm("cut")
    # healed: kazoo's reconnect with the old id is refused (timeOut 0) and it starts a fresh session
    rej = proxy.wait_event("session_rejected", timeout=20, requested_session_id=sid)
    assert rej["forwarded_to_client"] is True
    wait_for(lambda: zk.connected and zk.client_id[0] != sid, 20, "a fresh session")
    assert KazooState.LOST in states
    assert proxy.events("frame", kind="connect_resp", expired=True)


# (e) ------------------------------------------------------------------------------------------


def test_kafka_14845_orphaned_ephemeral(proxy, zk_server, kazoo_clients):
    path = "/zkproxy-e/brokers/ids/18"
    direct = kazoo(kazoo_clients, zk_server.connect_string, timeout=4.0)
    direct.ensure_path("/zkproxy-e/brokers/ids")
    proxy.api.add_rule({"id": "kafka-14845", "match": {"dir": "s2c", "kind": "connect_resp"},
                        "action": {"type": "drop_then_blackhole", "mode": "s2c"}, "budget": {"times": 1}})
    # The Netty client's behaviour: ConnectRequest + multi on one socket, no wait in between.
    res = zkwire.pipelined_register(proxy.pp.addresses[0], path, b'{"broker":18}', 2000,
                                    session_timeout_ms=4000)
    assert res.timed_out and res.session_id is None  # "session timed out ... for sessionid 0x0"
    orphan = proxy.events("session_established")[0]
    s1, t_ms = orphan["session_id"], orphan["negotiated_timeout_ms"]
    assert orphan["forwarded_to_client"] is False
    hidden = proxy.events("frame", dir="s2c", kind="reply", op=14)[0]
    assert hidden["action"] == "blackholed" and hidden["created_paths"] == [path]
    # on the server: the znode exists, owned by a session the client never learned
    stat = direct.exists(path)
    assert stat is not None and stat.ephemeralOwner == s1 and owner_of(zk_server, path) == s1
    assert direct.get(path)[0] == b'{"broker":18}'
    # the retry with a new session (kazoo, as the broker would) fails with NodeExists, owner S1
    zk = kazoo(kazoo_clients, proxy.hosts, timeout=4.0)
    s2 = zk.client_id[0]
    tx = zk.transaction()
    tx.create(path, b"", ephemeral=True)
    tx.set_data(path, b'{"broker":18}', 0)
    results = tx.commit()
    assert isinstance(results[0], NodeExistsError)
    assert zk.exists(path).ephemeralOwner == s1 != s2
    # ... and so does the raw pipelining client itself on a fresh session
    again = zkwire.pipelined_register(zk_server.connect_string, path, b"x", 5000, session_timeout_ms=4000)
    assert again.err == zkwire.Err.NODE_EXISTS and again.session_id not in (None, s1)
    # S1 expires about T after its last packet; then the node is gone
    wait_for(lambda: direct.exists(path) is None, t_ms / 1000.0 + 10, "the orphan ephemeral to vanish")
    assert s1 not in tracked_sessions(zk_server)


# (f) issue 12.6 ----------------------------------------------------------------------------------


def test_connect_response_held_past_the_client_close_is_an_orphan(proxy, zk_server):
    proxy.api.add_rule({"id": "slow-resp", "match": {"dir": "s2c", "kind": "connect_resp"},
                        "action": {"type": "delay", "delay_ms": 1500}, "budget": {"times": 1}})
    sock = socket.create_connection(("127.0.0.1", proxy.pp.ports[0]), timeout=5)
    sock.sendall(zkwire.encode_connect_request(zkwire.ConnectRequest(timeout=4000)))
    time.sleep(0.3)
    sock.close()  # gives up while the proxy holds the server's answer
    orphan = proxy.wait_event("session_orphaned")
    assert orphan["reason"] == "client_closed" and orphan["session_id"] in tracked_sessions(zk_server)
    est = proxy.events("session_established", session_id=orphan["session_id"])[0]
    assert est["forwarded_to_client"] is False and est["connect_result"] == "new"
    assert proxy.events("client_close", conn=1)[0]["seq"] < est["seq"]


def test_frames_behind_a_delayed_one_log_their_hold(proxy, kazoo_clients):
    zk = kazoo(kazoo_clients, proxy.hosts, timeout=4.0)
    zk.ensure_path("/zkproxy-f")
    proxy.api.add_rule({"id": "slow-get", "match": {"dir": "c2s", "op": "getData", "path_prefix": "/zkproxy-f"},
                        "action": {"type": "delay", "delay_ms": 600}, "budget": {"times": 1}})
    slow, behind = zk.get_async("/zkproxy-f"), zk.exists_async("/zookeeper")
    slow.get(10), behind.get(10)
    delayed = proxy.events("frame", action="delay")[0]
    held = proxy.events("frame", dir="c2s", op=3, path="/zookeeper")[0]
    assert held["seq"] > delayed["seq"] and held["action"] == "forward" and 0 < held["held_ms"] <= 600


def test_add_watch_reply_and_its_notifications_parse(proxy, zk_server, kazoo_clients):
    direct = kazoo(kazoo_clients, zk_server.connect_string, timeout=4.0)
    direct.ensure_path("/zkproxy-g")
    with zkwire.RawSession(proxy.pp.addresses[0], session_timeout_ms=4000) as s:
        rep = s.request(zkwire.OpCode.ADD_WATCH, zkwire.PathModeRequest("/zkproxy-g", 1))  # PERSISTENT_RECURSIVE
        assert rep.err == 0 and rep.body == zkwire.ErrorResponse(0) and rep.error is None
        direct.create("/zkproxy-g/a", b"x")
        proxy.wait_event("frame", kind="notification", path="/zkproxy-g/a")
    reply = proxy.events("frame", dir="s2c", op=106)[0]
    assert reply["err"] == 0 and "parse_error" not in reply
    assert not [e for e in proxy.events("frame") if "parse_error" in e]
    assert not proxy.events("notification_unparsed")
    direct.delete("/zkproxy-g", recursive=True)


def raw_connect(port: int, session_id: int = 0, timeout_ms: int = 4000) -> zkwire.ConnectResponse | None:
    """One ConnectRequest over a plain socket; the ConnectResponse, or None if the proxy closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(zkwire.encode_connect_request(zkwire.ConnectRequest(timeout=timeout_ms, session_id=session_id)))
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        return zkwire.ConnectResponse.decode(data[4:4 + int.from_bytes(data[:4], "big")])


def test_connect_result_match_tells_an_expired_session_from_a_new_one(proxy, zk_server):
    # a session id the server never issued: it answers "expired" (session id 0, timeOut 0)
    proxy.api.add_rule({"id": "cut-expired", "match": {"kind": "connect_resp", "connect_result": "expired"},
                        "action": {"type": "drop_then_close"}})
    assert raw_connect(proxy.pp.ports[0], session_id=0x7E57_0000_0001) is None  # the rule cut it
    fresh = raw_connect(proxy.pp.ports[0])  # a new session is not touched
    assert fresh is not None and fresh.session_id != 0
    expired, new = proxy.events("frame", kind="connect_resp")
    assert expired["connect_result"] == "expired" and expired["rule_id"] == "cut-expired"
    assert expired["action"] == "drop_then_close" and expired["session_id"] == 0
    assert new["connect_result"] == "new" and new["action"] == "forward" and "rule_id" not in new
    assert proxy.events("session_established", session_id=fresh.session_id)[0]["connect_result"] == "new"


def test_frame_limit_follows_the_servers_and_can_be_set(proxy, zk_server, kazoo_clients, tmp_path):
    direct = kazoo(kazoo_clients, zk_server.connect_string, timeout=4.0)
    # about the largest node a default server accepts (its setData request, 32 bytes + data, is at
    # most jute.maxbuffer): its getData reply (header, data, stat) is past 1 MiB, and a real client reads it
    data = b"z" * (zkwire.JUTE_MAXBUFFER - 64)
    direct.create("/zkproxy-big", b"")
    try:
        direct.set("/zkproxy-big", data)
        zk = kazoo(kazoo_clients, proxy.hosts, timeout=4.0)
        assert zk.get("/zkproxy-big")[0] == data
        reply = proxy.events("frame", dir="s2c", op=4)[0]
        assert reply["bytes"] > zkwire.JUTE_MAXBUFFER and not proxy.events("protocol_error")
        # a limit set on the command line is the one the proxy enforces
        with ProxyProcess([zk_server.connect_string], tmp_path / "small.jsonl", tmp_path / "small",
                          max_frame=4096) as small:
            evs = lambda: events(small.events)  # noqa: E731
            zk2 = kazoo(kazoo_clients, small.connect_string, timeout=4.0)
            zk2.get_async("/zkproxy-big")
            err = wait_for(lambda: [e for e in evs() if e["f"] == "protocol_error"], 15, "the frame limit")[0]
            assert err["dir"] == "s2c" and "4096" in err["error"]
            assert [e["max_frame"] for e in evs() if e["f"] == "proxy_start"] == [4096]
    finally:
        direct.delete("/zkproxy-big")
