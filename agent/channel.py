"""The controller's channel manager (K37 ``controller/ControllerChannelManager.scala``).

One ``Sender`` thread per live broker (K37 ``RequestSendThread``) retries a request until that
broker answers or leaves. Every request carries the controller epoch and the target's cached broker
epoch, or ``broker_epoch=-1`` with the cluster-wide maximum under ``max_broker_epoch``. Built
requests are kept (the last 2000) so the debug hooks can list and resend them.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import OrderedDict
from typing import Any

from agent import errors
from agent.broker_api import BrokerApi
from agent.controller_context import TP, ControllerContext
from agent.controller_logic import max_broker_epoch

STORED_REQUESTS = 2000


def emit_send(broker: BrokerApi, target: int, body: dict[str, Any], live: dict[int, int], **extra: Any) -> None:
    """The ``control_send`` event: what was sent to whom, with the epoch map it was built from."""
    broker.emit("control_send", request_id=body["request_id"], kind=body["type"], target=target,
                controller_epoch=body["controller_epoch"], broker_epoch=body["broker_epoch"],
                max_broker_epoch=body["max_broker_epoch"], epoch_map=dict(live), full=body["full"],
                partitions=[f"{p['topic']}-{p['partition']}" for p in body["partitions"]], **extra)


def emit_response(broker: BrokerApi, target: int, body: dict[str, Any], reply: dict[str, Any]) -> None:
    broker.emit("control_response", request_id=body["request_id"], kind=body["type"], target=target,
                error_code=reply.get("error_code"), partition_errors=reply.get("partition_errors", {}))


class Sender(threading.Thread):
    """RequestSendThread: one per live broker; retries a request until answered or removed."""

    def __init__(self, broker: BrokerApi, target: int) -> None:
        super().__init__(name=f"send-{target}", daemon=True)
        self.broker = broker
        self.target = target
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self.running = True

    def run(self) -> None:
        broker = self.broker
        while self.running and not broker.stopping.is_set():
            try:
                body = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            while self.running and not broker.stopping.is_set():
                try:
                    reply = broker.request_broker(self.target, body, timeout=2.0)
                except OSError:
                    time.sleep(0.2)
                    continue
                emit_response(broker, self.target, body, reply)
                break

    def stop(self) -> None:
        self.running = False


class ChannelManager:
    def __init__(self, broker: BrokerApi, ctx: ControllerContext) -> None:
        self.broker = broker
        self.ctx = ctx
        self.senders: dict[int, Sender] = {}
        self.stored: OrderedDict[str, tuple[int, dict[str, Any]]] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    # -- senders ----------------------------------------------------------------------------
    def add_sender(self, b: int) -> None:
        if b not in self.senders:
            s = Sender(self.broker, b)
            self.senders[b] = s
            s.start()

    def remove_sender(self, b: int) -> None:
        s = self.senders.pop(b, None)
        if s is not None:
            s.stop()

    def stop_all(self) -> None:
        for s in self.senders.values():
            s.stop()

    def clear(self) -> None:
        """Resignation: stop every sender and forget them."""
        self.stop_all()
        self.senders.clear()

    # -- requests ---------------------------------------------------------------------------
    def partition_entry(self, tp: TP) -> dict[str, Any]:
        st = self.ctx.states[tp]
        return {"topic": tp[0], "partition": tp[1], "replicas": self.ctx.assignments[tp[0]][tp[1]],
                **st.to_dict()}

    def build(self, kind: str, target: int, tps: list[TP], full: bool = False,
              broker_epoch: int | None = None, shared_id: str | None = None, **fields: Any) -> dict[str, Any]:
        maxmode = self.ctx.toggles.max_broker_epoch
        body: dict[str, Any] = {
            "type": kind,
            "request_id": shared_id or f"c{self.ctx.me}-e{self.ctx.epoch}-{next(self._ids)}",
            "controller_id": self.ctx.me,
            "controller_epoch": self.ctx.epoch,
            "broker_epoch": -1 if maxmode else (
                self.ctx.live.get(target, -1) if broker_epoch is None else broker_epoch),
            "max_broker_epoch": max_broker_epoch(self.ctx.live) if maxmode else -1,
            "full": full,
            "partitions": [self.partition_entry(tp) for tp in tps if tp in self.ctx.states],
            **fields,
        }
        if kind == "UpdateMetadata":
            body["live_brokers"] = [{"id": b, **self.broker.endpoint_of(b)} for b in sorted(self.ctx.live)]
        return body

    def record(self, target: int, body: dict[str, Any], **extra: Any) -> None:
        with self._lock:
            self.stored[f"{body['request_id']}@{target}"] = (target, body)
            while len(self.stored) > STORED_REQUESTS:
                self.stored.popitem(last=False)
        emit_send(self.broker, target, body, self.ctx.live, **extra)

    def send(self, kind: str, target: int, tps: list[TP], full: bool = False, **fields: Any) -> dict[str, Any]:
        body = self.build(kind, target, tps, full=full, **fields)
        self.record(target, body)
        s = self.senders.get(target)
        if s is not None:
            s.queue.put(body)
        return body

    def send_update_metadata(self, targets: list[int], partitions: list[TP] | None = None,
                             full: bool = False) -> None:
        tps = sorted(self.ctx.states) if full or partitions is None else partitions
        if self.ctx.toggles.max_broker_epoch and targets:
            # LinkedIn's fork (KAFKA-7186): one cached payload for every broker, fenced by the
            # cluster-wide max broker epoch.
            shared = f"c{self.ctx.me}-e{self.ctx.epoch}-{next(self._ids)}"
            for b in targets:
                body = self.build("UpdateMetadata", b, tps, full=full, shared_id=shared)
                self.record(b, body, shared=True)
                s = self.senders.get(b)
                if s is not None:
                    s.queue.put(body)
            return
        for b in targets:
            self.send("UpdateMetadata", b, tps, full=full)

    def send_leader_and_isr_for_broker(self, b: int, full: bool = False) -> None:
        tps = [tp for tp in sorted(self.ctx.states) if b in self.ctx.assignments[tp[0]][tp[1]]]
        if tps or full:
            self.send("LeaderAndIsr", b, tps, full=full)

    # -- debug hooks (docs/agent.md) --------------------------------------------------------
    def debug_requests(self) -> list[dict[str, Any]]:
        """Every stored request, oldest first."""
        return [{"key": k, "target": t, "kind": b["type"], "request_id": b["request_id"],
                 "broker_epoch": b["broker_epoch"], "max_broker_epoch": b["max_broker_epoch"],
                 "controller_epoch": b["controller_epoch"]} for k, (t, b) in list(self.stored.items())]

    def debug_build(self, kind: str, target: int, topic: str | None = None, partition: int | None = None,
                    broker_epoch: int | None = None, delete_partitions: bool = False) -> dict[str, Any]:
        with self._lock:
            tps = [tp for tp in sorted(self.ctx.states)
                   if (topic is None or tp[0] == topic) and (partition is None or tp[1] == partition)
                   and (kind == "UpdateMetadata" or target in self.ctx.assignments[tp[0]][tp[1]])]
            fields = {"delete_partitions": delete_partitions} if kind == "StopReplica" else {}
            body = self.build(kind, target, tps, broker_epoch=broker_epoch, **fields)
            self.stored[f"{body['request_id']}@{target}"] = (target, body)
        return body

    def debug_send(self, request_id: str, target: int | None = None) -> dict[str, Any]:
        with self._lock:
            key = next((k for k in reversed(self.stored)
                        if k.split("@")[0] == request_id and (target is None or k.endswith(f"@{target}"))), None)
            if key is None:
                return {"error_code": errors.INVALID_REQUEST, "error": f"no stored request {request_id}"}
            tgt, body = self.stored[key]
        emit_send(self.broker, tgt, body, self.ctx.live, debug=True)
        try:
            reply = self.broker.request_broker(tgt, body, timeout=5.0)
        except OSError as e:
            return {"error_code": errors.NETWORK_EXCEPTION, "error": str(e)}
        emit_response(self.broker, tgt, body, reply)
        return {"target": tgt, **reply}
