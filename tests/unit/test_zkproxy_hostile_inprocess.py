"""The proxy is total (issue 46.4): a frame it will not forward (a nested multi, either way; a bad
length; a frame that makes the inspector raise anything at all) costs that one connection, closed on
both sides with a ``protocol_error`` event and gone from the open list; the proxy keeps serving the
others. In-process against scripted servers; tests/integration/test_zkproxy_hostile.py does the
same against a real ZooKeeper."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

import pytest

import zkwire as z
from nemesis.zkproxy import ZkProxy
from tests import wire_samples as ws
from tests.unit.test_zkproxy import Client, FakeZk, events, run, until

TIMEOUT = 10.0


async def still_serves(port: int) -> None:
    """A fresh connection through the proxy completes a handshake and a getData."""
    c = await Client.open(port)
    await c.handshake()
    c.send(z.encode_request(7, z.OpCode.GET_DATA, z.GetDataRequest("/a")))
    assert z.ReplyHeader.decode((await c.frame())[:16]).xid == 7
    c.w.close()


async def closed(c: Client) -> bool:
    """EOF or a reset (a proxy that closes with the client's bytes unread resets) within TIMEOUT."""
    try:
        return await c.at_eof(TIMEOUT)
    except ConnectionResetError:
        return True


def check_closed(evs: list[dict[str, Any]], d: str, error: str) -> None:
    err, = [e for e in evs if e["f"] == "protocol_error"]
    assert err["dir"] == d and error in err["error"], err
    closes = {e["conn"]: e for e in evs if e["f"] == "conn_close"}
    assert closes[err["conn"]]["reason"] == "protocol_error" and closes[err["conn"]]["closed_first"] == "proxy"


@pytest.mark.parametrize("depth", [2, 110_000])  # 110,000 levels: just under the 1 MiB frame limit
def test_nested_multi_request_closes_its_connection_only(tmp_path: Path, depth: int) -> None:
    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        bystander = await Client.open(port)
        await bystander.handshake()
        c = await Client.open(port)
        await c.handshake()
        c.send(z.frame(ws.nested_multi(depth)))
        assert await closed(c)
        await until(lambda: len(proxy.conns) == 1, "the hostile connection to leave the open list")
        bystander.send(z.encode_request(1, z.OpCode.GET_DATA, z.GetDataRequest("/a")))
        assert z.ReplyHeader.decode((await bystander.frame())[:16]).xid == 1
        await still_serves(port)
        assert (z.OpCode.MULTI not in [op for _, op in fake.received])  # never forwarded

    check_closed(run(tmp_path, scenario), "c2s", "nested multi")


class HostileZk(FakeZk):
    """Answers the first request with a nested multi reply."""

    async def _serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            _, body = await z.read_frame(r)
            creq = z.ConnectRequest.decode(body)
            w.write(z.encode_connect_response(z.ConnectResponse(0, creq.timeout, 0x202)))
            _, body = await z.read_frame(r)
            w.write(z.frame(ws.nested_multi(5000, reply=True, xid=z.parse_request(body).xid)))
            await w.drain()
            await r.read()  # until the proxy closes this side
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        w.close()


def test_nested_multi_reply_closes_the_connection(tmp_path: Path) -> None:
    evpath = tmp_path / "zkproxy.jsonl"

    async def main() -> None:
        from history import EventWriter
        from nemesis.zkproxy import ListenerSpec

        fake = HostileZk()
        await fake.start()
        ev = EventWriter(evpath, "zkproxy")
        proxy = ZkProxy([ListenerSpec("127.0.0.1", 0, "127.0.0.1", fake.port)], ev)
        (_, port), = await proxy.start()
        try:
            c = await Client.open(port)
            await c.handshake()
            c.send(z.encode_request(1, z.OpCode.MULTI, z.registration_multi("/brokers/ids/1", b"x")))
            assert await closed(c)  # the client never sees the reply
            await until(lambda: not proxy.conns, "the connection to leave the open list")
        finally:
            await proxy.stop()
            await fake.stop()
            ev.close()

    asyncio.run(asyncio.wait_for(main(), 30))
    check_closed(events(evpath), "s2c", "nested multi")


def test_an_inspector_bug_closes_the_connection_not_the_proxy(tmp_path: Path, monkeypatch: Any) -> None:
    """Whatever the inspector raises (here RecursionError, as the codec did), the connection closes."""

    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        real = proxy.inspector.inspect

        def inspect(c: Any, d: str, body: bytes, *a: Any) -> Any:
            if body.endswith(b"/boom\x00"):
                raise RecursionError("maximum recursion depth exceeded")
            return real(c, d, body, *a)

        monkeypatch.setattr(proxy.inspector, "inspect", inspect)
        c = await Client.open(port)
        await c.handshake()
        c.send(z.encode_request(1, z.OpCode.GET_DATA, z.GetDataRequest("/boom")))
        assert await closed(c)
        await until(lambda: not proxy.conns, "the connection to leave the open list")
        await still_serves(port)

    check_closed(run(tmp_path, scenario), "c2s", "internal error: RecursionError")


@pytest.mark.parametrize("garbage", [
    b"\xde\xad\xbe\xef" * 8,  # a length of -559038737
    struct.pack(">i", z.JUTE_MAXBUFFER + z.JUTE_EXTRASIZE + 1) + b"x" * 16,
])
def test_garbage_after_the_handshake(tmp_path: Path, garbage: bytes) -> None:
    async def scenario(proxy: ZkProxy, fake: FakeZk, port: int) -> None:
        c = await Client.open(port)
        await c.handshake()
        c.send(garbage)
        assert await closed(c)
        await until(lambda: not proxy.conns, "the connection to leave the open list")
        await still_serves(port)

    check_closed(run(tmp_path, scenario), "c2s", "outside [0,")
