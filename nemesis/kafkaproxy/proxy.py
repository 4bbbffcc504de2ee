"""The asyncio Kafka wire proxy: Kafka's framing and inspection on the shared proxy.

Role in the data path: it sits on each broker's inter-broker listener (the controller's channel to
every broker and every replica's fetches pass it; clients may use another listener). The shared
``nemesis.wireproxy.proxy.WireProxy`` owns listeners, connections, rule decisions, delivery,
holds, black holes and closes; this module reads Kafka frames (a 4-byte size, then the body),
decodes a *copy* of each with ``nemesis.kafkaproxy.codec``, matches responses to requests by
correlation id (a broker answers a connection's requests in order, and a client never reuses a
correlation id in flight), and writes one ``kafka_frame`` event per frame.

Replay (``capture`` rules, the control API's ``/replay``): the captured requests are written on a
new connection the proxy opens to the same listener's upstream (a broker takes a controller request
or a ControlledShutdown on any inter-broker connection: PLAINTEXT, no authentication), each
answer read before the next is sent; request and answer are ``kafka_frame`` events with
``action: replay`` and ``replay_of`` (the captured frame's seq), on a connection ordinal of their
own, between a ``conn_open`` and a ``conn_close`` marked ``replay``.

Total: an unknown API key or version, or bytes that do not decode, are forwarded untouched and
logged with ``decoded: false`` and a ``parse_error``; only a size prefix that is negative or over
``max_frame`` closes the connection (``protocol_error``), as a broker would.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from history import EventWriter
from nemesis.kafkaproxy.codec import (
    KAFKA_MAX_FRAME,
    MAX_PARTITIONS_IN_EVENT,
    Summary,
    api_name,
    broker_from_client_id,
    decode_request,
    decode_response,
    summarise,
)
from nemesis.kafkaproxy.rules import DIALECT, KafkaFrameInfo
from nemesis.wireproxy.conn import WireConn
from nemesis.wireproxy.proxy import BeforeWrite, Captured, ListenerSpec, ReplayError, WireProxy

MAX_PENDING = 10_000  # requests awaiting a response on one connection (acks=0 produces get none)
REPLAY_ANSWER_S = 15.0  # a replayed request's answer: a broker answers a control request in milliseconds


@dataclass(slots=True)
class PendingRequest:
    api_key: int | None
    api_version: int | None
    src_broker: int | None
    controller_id: int | None
    controller_epoch: int | None
    broker_epoch: int | None
    partitions: list[tuple[str | None, int]]
    req_seq: int = 0
    t_sent: float = 0.0


@dataclass
class KafkaConn(WireConn):
    broker_id: int | None = None  # the broker whose listener this connection reached
    pending: dict[int, deque[PendingRequest]] = field(default_factory=dict)  # correlation id -> requests
    npending: int = 0

    def summary(self) -> dict[str, Any]:
        return {**WireConn.summary(self), "broker_id": self.broker_id, "pending": self.npending}


class FrameSizeError(Exception):
    """A size prefix no broker accepts."""


class KafkaProxy(WireProxy):
    """The Kafka proxy. ``broker_ids[i]`` is the broker behind listener i (rules' ``dst_broker``)."""

    DIALECT = DIALECT
    conns: dict[int, KafkaConn]  # type: ignore[assignment]

    MAX_FRAME = KAFKA_MAX_FRAME

    def __init__(self, listeners: list[ListenerSpec], events: EventWriter, *,
                 broker_ids: list[int | None] | None = None, **options: Any) -> None:
        """``options``: ``WireProxy``'s (rules, seed, held_on_close, max_frame, connect_timeout_s)."""
        super().__init__(listeners, events, **options)
        ids = list(broker_ids or [])
        if len(ids) > len(listeners):
            raise ValueError(f"{len(ids)} broker ids for {len(listeners)} listeners")
        self.broker_ids: list[int | None] = ids + [None] * (len(listeners) - len(ids))

    # --- protocol hooks -----------------------------------------------------------------------

    def emit_frame(self, ev: dict[str, Any]) -> int:
        return self.emit("kafka_frame", **ev)

    def new_conn(self, ordinal: int, listener: int, upstream: str, client: str) -> KafkaConn:
        return KafkaConn(ordinal, listener, upstream, client, time.time(), broker_id=self.broker_ids[listener])

    def readers(self, c: WireConn) -> list[Coroutine[Any, Any, None]]:
        assert isinstance(c, KafkaConn)
        return [self._reader(c, "c2s"), self._reader(c, "s2c")]

    def close_fields(self, c: WireConn) -> dict[str, Any]:
        return {"pending": c.npending if isinstance(c, KafkaConn) else 0}

    def listeners_info(self) -> list[dict[str, Any]]:
        return [{**d, "broker_id": self.broker_ids[d["index"]]} for d in super().listeners_info()]

    # --- replay -------------------------------------------------------------------------------

    async def replay_frames(self, listener: int, frames: list[Captured]) -> list[dict[str, Any]]:
        spec = self.specs[listener]
        self._next_conn += 1
        c = self.new_conn(self._next_conn, listener, spec.upstream, "replay")
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(spec.upstream_host, spec.upstream_port),
                                          self.connect_timeout_s)
        except (TimeoutError, OSError) as e:
            self.emit("conn_open", conn=c.ordinal, upstream=c.upstream, listener=listener, client="replay",
                      replay=True, error=f"upstream connect failed: {e!r}")
            raise ReplayError(f"replay: cannot connect to {spec.upstream}: {e!r}") from None
        local = w.get_extra_info("sockname") or ("?", 0)
        self.emit("conn_open", conn=c.ordinal, upstream=c.upstream, listener=listener, client="replay", replay=True,
                  upstream_local=f"{local[0]}:{local[1]}")
        out: list[dict[str, Any]] = []
        reason = "done"
        try:
            for cap in frames:
                out.append(await self._replay_one(c, cap, r, w))
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            reason = f"{type(e).__name__}: {e}"[:200]
            out.append({"replay_of": None, "error": f"replay connection failed: {reason}"})
        finally:
            w.close()
            self.emit("conn_close", conn=c.ordinal, upstream=c.upstream, closed_first="proxy", reason=reason,
                      replay=True, frames=dict(c.frames), bytes=dict(c.nbytes), pending=c.npending)
        return out

    async def _replay_one(self, c: KafkaConn, cap: Captured, r: asyncio.StreamReader,
                          w: asyncio.StreamWriter) -> dict[str, Any]:
        """One captured request written again, and its answer read: both logged as the proxy logs any frame."""
        body = cap.data[4:]
        c.frames["c2s"] += 1
        c.nbytes["c2s"] += len(cap.data)
        info = KafkaFrameInfo(conn=c.ordinal, upstream=c.listener, upstream_addr=c.upstream, dir="c2s",
                              kind="request", dst_broker=c.broker_id)
        ev: dict[str, Any] = {"conn": c.ordinal, "upstream": c.upstream, "dir": "c2s", "kind": "request",
                              "bytes": len(cap.data), "dst_broker": c.broker_id}
        push, set_seq = self._request(c, body, info, ev)
        ev.update(action="replay", replay_of=cap.seq)
        if cap.rule_id is not None:
            ev["rule_id"] = cap.rule_id
        seq = self.emit_frame(ev)
        if set_seq is not None:
            set_seq(seq, True)
        if push is not None:
            push()
        w.write(cap.data)
        await w.drain()
        result: dict[str, Any] = {"replay_of": cap.seq, "request_seq": seq, "api": ev.get("api")}
        if push is None:  # no answer comes (acks=0)
            return result
        prefix = await asyncio.wait_for(r.readexactly(4), REPLAY_ANSWER_S)
        size = int.from_bytes(prefix, "big", signed=True)
        if size < 0 or size > self.max_frame:
            raise ConnectionError(f"answer frame size {size} outside [0, {self.max_frame}]")
        answer = await asyncio.wait_for(r.readexactly(size), REPLAY_ANSWER_S) if size else b""
        c.frames["s2c"] += 1
        c.nbytes["s2c"] += 4 + size
        rinfo = KafkaFrameInfo(conn=c.ordinal, upstream=c.listener, upstream_addr=c.upstream, dir="s2c",
                               kind="response", dst_broker=c.broker_id)
        rev: dict[str, Any] = {"conn": c.ordinal, "upstream": c.upstream, "dir": "s2c", "kind": "response",
                               "bytes": 4 + size, "dst_broker": c.broker_id}
        self._response(c, answer, rinfo, rev)
        rev.update(action="replay", replay_of=cap.seq)
        result.update(response_seq=self.emit_frame(rev), error=rev.get("error"), errors=rev.get("errors"))
        return result

    # --- reader -------------------------------------------------------------------------------

    async def _reader(self, c: KafkaConn, d: str) -> None:
        src = c.client_r if d == "c2s" else c.up_r
        assert src is not None
        try:
            while True:
                prefix = await src.readexactly(4)
                size = int.from_bytes(prefix, "big", signed=True)
                if size < 0 or size > self.max_frame:
                    raise FrameSizeError(f"frame size {size} outside [0, {self.max_frame}]")
                body = await src.readexactly(size) if size else b""
                self._on_frame(c, d, prefix + body, body)
        except FrameSizeError as e:
            self._protocol_error(c, d, str(e))
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            self._reader_eof(c, d, e)
        except Exception as e:  # noqa: BLE001 - a bug inspecting one frame closes its connection, no more
            self._protocol_error(c, d, f"internal error: {type(e).__name__}: {e}")

    # --- one frame ------------------------------------------------------------------------------

    def _on_frame(self, c: KafkaConn, d: str, raw: bytes, body: bytes) -> None:
        c.frames[d] += 1
        c.nbytes[d] += len(raw)
        info = KafkaFrameInfo(conn=c.ordinal, upstream=c.listener, upstream_addr=c.upstream, dir=d,
                              kind="request" if d == "c2s" else "response", dst_broker=c.broker_id)
        ev: dict[str, Any] = {"conn": c.ordinal, "upstream": c.upstream, "dir": d, "kind": info.kind,
                              "bytes": len(raw), "dst_broker": c.broker_id}
        if d == "c2s":
            before_write, after_emit = self._request(c, body, info, ev)
            self.deliver(c, d, raw, info, ev, before_write, after_emit)
        else:
            self._response(c, body, info, ev)
            self.deliver(c, d, raw, info, ev)

    @staticmethod
    def _summary_fields(s: Summary, ev: dict[str, Any]) -> None:
        if s.partitions:
            ev["partitions"] = [p.as_dict() for p in s.partitions[:MAX_PARTITIONS_IN_EVENT]]
            ev["partition_count"] = len(s.partitions)
            # over all of them, not the listed ones: whether an answer refused every partition
            # (base.kafkawire.control_outcome) must not depend on the cut
            ev["partition_error_count"] = sum(1 for p in s.partitions if p.error is not None)
        if s.errors:
            ev["errors"] = s.errors
        if s.error is not None:
            ev["error"] = s.error

    def _request(self, c: KafkaConn, body: bytes, info: KafkaFrameInfo,
                 ev: dict[str, Any]) -> tuple[BeforeWrite | None, Any]:
        dec = decode_request(body)
        info.api_key, info.api_version = dec.api_key, dec.api_version
        ev.update(api=api_name(dec.api_key), api_key=dec.api_key, api_version=dec.api_version,
                  correlation_id=dec.correlation_id, client_id=dec.client_id, decoded=dec.decoded)
        if dec.parse_error:
            ev["parse_error"] = dec.parse_error
        s = summarise(dec.body) if dec.decoded else Summary()
        sc = s.scalars
        src = next((sc[k] for k in ("controller_id", "replica_id", "broker_id") if sc.get(k, -1) >= 0), None)
        if src is None:
            src = broker_from_client_id(dec.client_id)
        info.src_broker, info.controller_id = src, sc.get("controller_id")
        info.partitions = [(p.topic, p.partition) for p in s.partitions]
        ev["src_broker"] = src
        for k in ("controller_id", "controller_epoch", "broker_epoch", "replica_id", "replica_epoch"):
            if k in sc:
                ev[k] = sc[k]
        self._summary_fields(s, ev)
        if dec.correlation_id is None or (dec.api_key == 0 and getattr(dec.body, "acks", None) == 0):
            return None, None  # no response will come (acks=0 produce, or not even a header)
        pend = PendingRequest(dec.api_key, dec.api_version, src, sc.get("controller_id"),
                              sc.get("controller_epoch"), sc.get("broker_epoch"), info.partitions)
        corr = dec.correlation_id

        def push() -> None:  # just before the request reaches the broker: its response can only follow
            pend.t_sent = time.monotonic()
            if c.npending >= MAX_PENDING:
                return
            c.pending.setdefault(corr, deque()).append(pend)
            c.npending += 1

        def set_seq(seq: int, forwarded: bool) -> None:
            pend.req_seq = seq

        return push, set_seq

    def _response(self, c: KafkaConn, body: bytes, info: KafkaFrameInfo, ev: dict[str, Any]) -> None:
        corr = int.from_bytes(body[:4], "big", signed=True) if len(body) >= 4 else None
        pend: PendingRequest | None = None
        q = c.pending.get(corr) if corr is not None else None
        if q:
            pend = q.popleft()
            c.npending -= 1
            if not q:
                del c.pending[corr]
        dec = decode_response(body, pend.api_key if pend else None, pend.api_version if pend else None)
        ev.update(api=api_name(dec.api_key), api_key=dec.api_key, api_version=dec.api_version,
                  correlation_id=dec.correlation_id, decoded=dec.decoded)
        if dec.parse_error:
            ev["parse_error"] = dec.parse_error
        s = summarise(dec.body) if dec.decoded else Summary()
        self._summary_fields(s, ev)
        info.api_key, info.api_version, info.errors = dec.api_key, dec.api_version, s.errors
        if pend is not None:
            info.src_broker, info.controller_id = pend.src_broker, pend.controller_id
            info.partitions = pend.partitions or [(p.topic, p.partition) for p in s.partitions]
            ev.update(src_broker=pend.src_broker, req_seq=pend.req_seq,
                      latency_ms=round((time.monotonic() - pend.t_sent) * 1000.0, 3))
            for k in ("controller_id", "controller_epoch", "broker_epoch"):
                v = getattr(pend, k)
                if v is not None:
                    ev[k] = v
