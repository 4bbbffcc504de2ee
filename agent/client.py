"""Workload and test clients for the agents' control plane (same TCP protocol as agent↔agent).

``append(addr, topic, partition, value, acks)`` produces to one broker; ``KafkaClient`` finds the
leader through any broker's metadata and retries NOT_LEADER; ``AgentAdmin`` calls the test hooks
documented in docs/agent.md.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
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


class FetchError(Exception):
    """A consumer fetch the broker answered with an error ``code`` (nothing was read)."""

    def __init__(self, code: int, leader: int = -1) -> None:
        super().__init__(f"{errors.name(code)} ({code}) from broker {leader}")
        self.code = code
        self.leader = leader

    @property
    def epoch_changed(self) -> bool:
        """FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH: the partition has another leader epoch."""
        return self.code in (errors.FENCED_LEADER_EPOCH, errors.UNKNOWN_LEADER_EPOCH)


@dataclass(frozen=True, slots=True)
class Fetched:
    """A consumer fetch's answer: ``records`` [{offset, value, leader_epoch}] below ``hw``."""

    records: list[dict[str, Any]]
    hw: int
    leader: int
    leader_epoch: int


def fetch_once(addr: str, topic: str, partition: int, offset: int, leader_epoch: int = -1, max_records: int = 500,
          timeout: float = 5.0) -> dict[str, Any]:
    """One consumer fetch (replica id -1) from the broker at ``addr``: the raw reply. ``OSError``
    when it does not answer."""
    msg = {"type": "fetch", "topic": topic, "partition": partition, "replica_id": -1, "fetch_offset": offset,
           "leader_epoch": leader_epoch, "max_records": max_records}
    return request(addr, msg, timeout=timeout)


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

    def fetch(self, topic: str, partition: int, offset: int, leader_epoch: int = -1,
                     max_records: int = 500) -> Fetched:
        """Assign ``topic``-``partition`` and poll from ``offset``: one fetch from the leader this client
        knows (metadata refreshed when it knows none). ``FetchError`` for an error answer (the leader
        cache is dropped so the next poll rediscovers it); ``AppendUnknown`` when no broker answers."""
        leader = self.leader(topic, partition)
        if leader < 0 or leader not in self.brokers:
            leader = self.leader(topic, partition, refresh=True)
        if leader < 0 or leader not in self.brokers:
            raise FetchError(errors.NOT_LEADER_OR_FOLLOWER, leader)
        try:
            reply = fetch_once(self.brokers[leader], topic, partition, offset, leader_epoch, max_records, self.timeout)
        except OSError as e:
            self._leaders.pop((topic, partition), None)
            raise AppendUnknown(f"fetch from broker {leader}: {type(e).__name__}: {e}") from e
        code = int(reply.get("error_code", -1))
        if code != errors.NONE:
            self._leaders.pop((topic, partition), None)
            raise FetchError(code, leader)
        return Fetched(list(reply.get("records", [])), int(reply.get("hw", 0)), leader, int(reply.get("leader_epoch", -1)))

    poll = fetch


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
