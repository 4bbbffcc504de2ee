"""The wire proxy as a process, in front of a real ZooKeeper, fed hostile frames (issue 46.4): a
nested multi and random garbage each close their connection promptly (EOF or reset on the client, a
``protocol_error`` event, gone from ``/connections``) and a fresh kazoo session still goes through.
Waits are bounded, never asserted as timings."""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

import zkwire as z
from nemesis.zkproxy import ProxyProcess
from tests import wire_samples as ws
from tests.integration.test_zkproxy_e2e import Proxy
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


@pytest.fixture
def proxy(zk_server, tmp_path: Path) -> Iterator[Proxy]:
    with ProxyProcess([zk_server.connect_string], tmp_path / "zkproxy.jsonl", tmp_path, seed=46) as pp:
        yield Proxy(pp)


def connect(proxy: Proxy, handshake: bool = True) -> socket.socket:
    host, port = proxy.pp.addresses[0].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    if handshake:
        s.sendall(z.encode_connect_request(z.ConnectRequest(timeout=4000)))
        assert z.ConnectResponse.decode(z.recv_frame(s)).session_id != 0
    return s


def closed_by_proxy(s: socket.socket) -> bool:
    """The proxy closed it: EOF (or a reset) before any reply, within the socket's timeout."""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
            assert not data, f"got bytes back: {data[:40]!r}"
    except ConnectionResetError:
        return True
    finally:
        s.close()


def fresh_kazoo_session_works(proxy: Proxy) -> None:
    zk = KazooClient(hosts=proxy.hosts, timeout=10)
    zk.start(timeout=15)
    try:
        assert zk.exists("/") is not None
    finally:
        zk.stop()
        zk.close()


def check_dropped(proxy: Proxy, n_errors: int, error: str) -> None:
    errs = wait_for(lambda: (lambda e: e if len(e) >= n_errors else None)(proxy.events("protocol_error")), 15,
                    f"{n_errors} protocol_error events")
    assert error in errs[-1]["error"], errs[-1]
    conn = errs[-1]["conn"]
    close = proxy.wait_event("conn_close", conn=conn)
    assert close["reason"] == "protocol_error" and close["closed_first"] == "proxy"
    assert conn not in [c["conn"] for c in proxy.api.connections()]


def test_nested_multi_closes_its_connection_and_the_proxy_serves_on(proxy: Proxy) -> None:
    bystander = connect(proxy)
    s = connect(proxy)
    s.sendall(z.frame(ws.nested_multi(100_000)))  # 900 KB of multi headers: a RecursionError before
    assert closed_by_proxy(s)
    check_dropped(proxy, 1, "nested multi")
    bystander.sendall(z.encode_request(1, z.OpCode.EXISTS, z.ExistsRequest("/")))
    assert z.ReplyHeader.decode(z.recv_frame(bystander)[:16]).xid == 1  # the other connection is fine
    bystander.close()
    fresh_kazoo_session_works(proxy)


@pytest.mark.parametrize("handshake", [False, True])
def test_random_garbage_closes_its_connection(proxy: Proxy, handshake: bool) -> None:
    rng = random.Random(46)
    for i in range(3):
        s = connect(proxy, handshake)
        # a length prefix the proxy refuses, then noise: deterministic, so never a frame ZooKeeper waits on
        s.sendall(struct.pack(">i", -rng.randrange(1, 2**31)) + rng.randbytes(rng.randrange(1, 4096)))
        assert closed_by_proxy(s)
        check_dropped(proxy, i + 1, "outside [0,")
    fresh_kazoo_session_works(proxy)
