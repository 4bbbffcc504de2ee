"""Workload and test clients for the agents' control plane (same TCP protocol as agent↔agent).

``append(addr, topic, partition, value, acks)`` produces to one broker; ``KafkaClient`` finds the
leader through any broker's metadata and retries NOT_LEADER; ``AgentAdmin`` calls the test hooks
documented in docs/agent.md.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from agent import errors
from agent.net import request, use_token

__all__ = ["AgentAdmin", "AppendError", "AppendUnknown", "KafkaClient", "append", "use_token"]


class AppendError(Exception):
    """A definite failure: the broker answered with ``code`` (the record was not acknowledged)."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(f"{errors.name(code)} ({code}){': ' + message if message else ''}")
        self.code = code


class AppendUnknown(Exception):
    """Outcome unknown: no reply, or a timeout after the leader appended (Jepsen ``info``)."""


def append(addr: str, topic: str, partition: int, value: Any, acks: str | int = "all",
           timeout: float = 5.0) -> int:
    """Produce ``value`` to the broker at ``addr`` (which must lead the partition); returns the offset."""
    msg = {"type": "produce", "topic": topic, "partition": partition, "value": value, "acks": acks,
           "timeout_ms": int(timeout * 1000)}
    try:
        reply = request(addr, msg, timeout=timeout + 1.0)
    except OSError as e:
        raise AppendUnknown(f"{addr}: {type(e).__name__}: {e}") from e
    code = int(reply.get("error_code", -1))
    if code == errors.NONE:
        return int(reply["offset"])
    if reply.get("appended"):
        # The leader wrote it but could not confirm replication (timeout, lost leadership).
        raise AppendUnknown(f"{addr}: {errors.name(code)} after appending at offset {reply.get('offset')}")
    raise AppendError(code, str(reply.get("error", "")))


class KafkaClient:
    """Leader-discovering producer. ``brokers``: {broker_id: "host:port"} (or a list of addresses).

    With ``events`` (a ``history.events.EventWriter``) every append is an invoke followed by
    ok / fail / info, Jepsen style (docs/events.md ``append``)."""

    def __init__(self, brokers: dict[int, str] | list[str], timeout: float = 5.0, events: Any = None,
                 process: int | str | None = None) -> None:
        self.brokers = dict(brokers) if isinstance(brokers, dict) else dict(enumerate(brokers))
        self.timeout = timeout
        self.events = events
        self.process = process
        self._leaders: dict[tuple[str, int], int] = {}
        self._rr = itertools.cycle(sorted(self.brokers))

    def metadata(self) -> dict[str, Any]:
        last: Exception | None = None
        for _ in range(len(self.brokers)):
            bid = next(self._rr)
            try:
                md = request(self.brokers[bid], {"type": "metadata"}, timeout=self.timeout)
            except OSError as e:
                last = e
                continue
            for p in md.get("partitions", []):
                self._leaders[(p["topic"], int(p["partition"]))] = int(p["leader"])
            return md
        raise AppendUnknown(f"no broker answered metadata: {last}")

    def leader(self, topic: str, partition: int, refresh: bool = False) -> int:
        if refresh or (topic, partition) not in self._leaders:
            self.metadata()
        return self._leaders.get((topic, partition), -1)

    def append(self, topic: str, partition: int, value: Any, acks: str | int = "all",
               deadline_s: float = 10.0) -> int:
        ev = dict(topic=topic, partition=partition, value=value, acks=acks)
        if self.events is not None:
            self.events.emit("append", type="invoke", process=self.process, **ev)
        end = time.monotonic() + deadline_s
        refresh = False
        last: Exception | None = None
        while time.monotonic() < end:
            try:
                leader = self.leader(topic, partition, refresh=refresh)
            except AppendUnknown as e:
                last = e
                time.sleep(0.2)
                refresh = True
                continue
            if leader < 0 or leader not in self.brokers:
                time.sleep(0.2)
                refresh = True
                continue
            try:
                offset = append(self.brokers[leader], topic, partition, value, acks, timeout=self.timeout)
            except AppendError as e:
                last = e
                if e.code in (errors.NOT_LEADER_OR_FOLLOWER, errors.UNKNOWN_TOPIC_OR_PARTITION,
                              errors.NOT_ENOUGH_REPLICAS):
                    time.sleep(0.1)
                    refresh = True
                    continue
                if self.events is not None:
                    self.events.emit("append", type="fail", process=self.process, error_code=e.code, **ev)
                raise
            except AppendUnknown as e:
                if self.events is not None:
                    self.events.emit("append", type="info", process=self.process, error=str(e), **ev)
                raise
            if self.events is not None:
                self.events.emit("append", type="ok", process=self.process, offset=offset, leader=leader, **ev)
            return offset
        # Only definite "not appended" answers got us here, so the op failed.
        if self.events is not None:
            self.events.emit("append", type="fail", process=self.process, error=str(last), **ev)
        raise AppendError(getattr(last, "code", errors.REQUEST_TIMED_OUT), f"gave up: {last}")


class AgentAdmin:
    """Test/admin hooks on one agent's control-plane listener (docs/agent.md)."""

    def __init__(self, addr: str, timeout: float = 10.0) -> None:
        self.addr = addr
        self.timeout = timeout

    def call(self, type: str, **fields: Any) -> dict[str, Any]:
        return request(self.addr, {"type": type, **fields}, timeout=self.timeout)

    def state(self) -> dict[str, Any]:
        return self.call("state")

    def hold(self) -> dict[str, Any]:
        return self.call("hold")

    def release(self) -> dict[str, Any]:
        return self.call("release")
