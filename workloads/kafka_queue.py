"""The queue workload's client for real Kafka brokers (`harness run --brokers kafka:VERSION --workload
queue`): the same ops as ``workloads.queue.QueueClient`` gives the agents, through confluent-kafka.

Why confluent-kafka: it wraps librdkafka, the C client behind most non-JVM Kafka users (Python,
Go's confluent-kafka-go, .NET, C/C++), maintained by Confluent and tested against every broker
release this project runs (2.0-3.9); kafka-python re-implements the protocol and is used far less.
The client runs on the control node; every connection goes through the clients' Toxiproxy links
(``client->b<N>``: each broker advertises its CLIENT listener as that link), so link faults on
those links reach the client too.

What each op records (the fields the queue checkers read, ``history.kinds.WRITTEN``):

* ``create_topic``: the Admin API's CreateTopics with ``partitions``, replication factor 3 (or the
  number of brokers), ``min.insync.replicas`` 2 (1 with fewer than 3 replicas) and unclean leader
  election off; ``ok`` once every partition has a leader in the Metadata answer, with the replicas
  the brokers assigned.
* ``send``: one produce, ``acks`` all or 1, waited for until the delivery report or the deadline.
  ``ok`` with the offset the broker assigned, ``leader_epoch`` when the client reports it, and
  ``leader`` null (the delivery report does not say which broker answered). With idempotence
  (``--idempotence auto`` and ``acks=all``, Kafka's producer default) librdkafka retries with
  sequence numbers the broker deduplicates; without it the producer is configured for one attempt
  (``retries`` 0), and a 3.9.1 run still had one batch land twice. Only an error raised before anything
  was sent is ``fail`` (``UNSENT_CODES``); every other outcome is ``info``: a timeout, a dropped
  connection, REQUEST_TIMED_OUT or NOT_ENOUGH_REPLICAS_AFTER_APPEND (appended on the leader,
  perhaps committed later), and even an error Kafka returns only before it appends (see
  ``UNSENT_CODES`` for the run that showed why). ``queue_aborted_read`` therefore has no failed
  send to judge on a real broker unless one was never sent.
* ``poll``: a consumer per process, assigned to the op's partition at the process's position;
  ``ok`` with the records one consume returned (possibly none), ``hw`` from the last fetch, the
  last record's ``leader_epoch``, ``leader`` null. ``auto.offset.reset`` is ``error``: a position
  the broker no longer has (a truncated log) is a ``fail`` naming OFFSET_OUT_OF_RANGE, never a
  silent jump back to offset 0.
* ``final_read``: a fresh consumer from offset 0 up to the high watermark the partition leader
  reports (ListOffsets); ``fail`` when it could not read that far within the deadline.

Every error is named with librdkafka's own name (``error``) and code (``error_code``: Kafka's
protocol codes, negative for librdkafka's local ones).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from workloads.base import FAIL, INFO, OK, Op

# librdkafka's local errors raised before a request is sent: _UNKNOWN_PARTITION, _UNKNOWN_TOPIC,
# _QUEUE_FULL, _INVALID_ARG. Every other error is ``info``, a broker's too: Kafka refuses
# NOT_ENOUGH_REPLICAS (19) before it appends, yet a 3.9.1 run (bounce) had a send end with 19 whose
# value a poll had already read at its offset (committed), so the client had sent it more than once
# even with ``retries`` 0; a broker's error is then no proof that the value is not in the log.
UNSENT_CODES = frozenset({-190, -188, -184, -186})
PARTITION_EOF = -191
QUIET = {"log_level": 0}  # librdkafka's own log lines would interleave with the run's live view



def create_topic(op: Op, admin: Any, new_topic: Any, partitions: int, *, timeout_s: float, poll_s: float,
                 **done: Any) -> Op:
    """``new_topic`` created through ``admin`` (one already there is fine), then ``ok`` once the
    Metadata answer names a leader for each of its ``partitions``, with the replicas the brokers
    report (and ``done``); a broker's refusal is its code's outcome, no leader in time ``info``."""
    from confluent_kafka import KafkaException

    topic = new_topic.topic
    try:
        admin.create_topics([new_topic], request_timeout=timeout_s)[topic].result(timeout=timeout_s)
    except KafkaException as e:
        err = e.args[0]
        if err.name() != "TOPIC_ALREADY_EXISTS":
            return op.complete(send_outcome(err.code()), **_error(err))
    end = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < end:
        try:
            meta = admin.list_topics(topic, timeout=5).topics[topic]
        except KafkaException as e:
            last = e.args[0]
            time.sleep(poll_s)
            continue
        parts = meta.partitions
        if meta.error is None and len(parts) == partitions and all(parts[p].leader >= 0 for p in parts):
            return op.complete(OK, replicas={str(p): list(parts[p].replicas) for p in sorted(parts)}, **done)
        last = meta.error
        time.sleep(poll_s)
    return op.complete(INFO, error=f"no leader for every partition within {timeout_s:g} s ({last})")


def send_outcome(code: int) -> str:
    """A produce that ended with error ``code``: ``fail`` when nothing was sent, else ``info``."""
    return FAIL if code in UNSENT_CODES else INFO


def _error(err: Any) -> dict[str, Any]:
    return {"error": err.name(), "error_code": err.code()}


def _take(msg: Any, offsets: list[int], values: list[str | None]) -> int | None:
    """Append a consumed record to ``offsets``/``values``; its leader epoch."""
    offsets.append(msg.offset())
    values.append(None if msg.value() is None else msg.value().decode())
    return msg.leader_epoch()


@dataclass
class KafkaQueueClient:
    """One process's producer and consumer of the real brokers (its consumer position lives here)."""

    idempotence: bool = False
    min_insync_replicas: int = 2
    request_timeout_s: float = 2.0
    deadline_s: float = 4.0
    poll_s: float = 0.3
    final_deadline_s: float = 30.0

    def __post_init__(self) -> None:
        self._bootstrap = ""
        self._brokers: list[int] = []
        self._process: int | str = ""
        self._producers: dict[str, Any] = {}
        self._consumer: Any = None
        self._assigned: tuple[str, int] | None = None
        self._positions: dict[tuple[str, int], int] = {}

    def open(self, ctx: Any, process: int | str) -> KafkaQueueClient:
        client = replace(self)  # the settings; ``__post_init__`` gives it no producer, consumer or position
        client._bootstrap = ctx.kafka_bootstrap()
        client._brokers = list(ctx.brokers)
        client._process = process
        return client

    def invoke(self, op: Op) -> Op:
        handler = {"send": self._send, "poll": self._poll, "final_read": self._final_read,
                   "create_topic": self._create_topic}.get(op.f)
        if handler is None:
            raise ValueError(f"queue: no operation {op.f!r}")
        return handler(op)

    # -- the clients ---------------------------------------------------------------------------------
    def _common(self) -> dict[str, Any]:
        return {"bootstrap.servers": self._bootstrap, "client.id": f"zkfence-{self._process}",
                "socket.timeout.ms": int(self.request_timeout_s * 1000), "reconnect.backoff.max.ms": 500,
                "topic.metadata.refresh.interval.ms": 1000, **QUIET}

    def _producer(self, acks: str) -> Any:
        if acks not in self._producers:
            from confluent_kafka import Producer

            conf = {**self._common(), "acks": "all" if acks in ("all", "-1") else acks, "linger.ms": 0,
                    "request.timeout.ms": int(self.request_timeout_s * 1000),
                    "message.timeout.ms": int(self.deadline_s * 1000), "enable.idempotence": self.idempotence}
            if not self.idempotence:
                conf["retries"] = 0  # one attempt asked for; a broker's error is still ``info`` (UNSENT_CODES)
            self._producers[acks] = Producer(conf)
        return self._producers[acks]

    def _new_consumer(self) -> Any:
        from confluent_kafka import Consumer

        # assign(), never subscribe(): no group membership, no commits; librdkafka still wants a group id
        return Consumer({**self._common(), "group.id": f"zkfence-{self._process}", "enable.auto.commit": False,
                         "auto.offset.reset": "error", "fetch.wait.max.ms": 100, "enable.partition.eof": False})

    # -- ops ---------------------------------------------------------------------------------------
    def _create_topic(self, op: Op) -> Op:
        from confluent_kafka.admin import AdminClient, NewTopic

        topic, n = op.value["topic"], int(op.value["partitions"])
        rf = min(3, len(self._brokers))
        config = {"min.insync.replicas": str(min(self.min_insync_replicas, rf)),
                  "unclean.leader.election.enable": "false"}
        return create_topic(op, AdminClient(self._common()), NewTopic(topic, num_partitions=n, replication_factor=rf,
                                                                      config=config),
                            n, timeout_s=60.0, poll_s=0.5, min_insync_replicas=int(config["min.insync.replicas"]))

    def _send(self, op: Op) -> Op:
        from confluent_kafka import KafkaException

        v = op.value
        report: dict[str, Any] = {}
        producer = self._producer(str(v.get("acks", "all")))
        try:
            producer.produce(v["topic"], value=str(v["value"]).encode(), partition=int(v["partition"]),
                             on_delivery=lambda err, msg: report.update(err=err, msg=msg))
        except (KafkaException, BufferError) as e:  # refused before anything was sent
            err = e.args[0] if isinstance(e, KafkaException) else None
            return op.complete(FAIL, **(_error(err) if err is not None else {"error": f"BufferError: {e}"}))
        end = time.monotonic() + self.deadline_s + 1.0
        while "err" not in report and time.monotonic() < end:
            producer.poll(0.05)
        if "err" not in report:
            return op.complete(INFO, error=f"no delivery report within {self.deadline_s + 1.0:g}s")
        err, msg = report["err"], report["msg"]
        if err is None:
            epoch = msg.leader_epoch()
            return op.complete(OK, offset=msg.offset(), leader=None, leader_epoch=epoch)
        return op.complete(send_outcome(err.code()), **_error(err))

    def _poll(self, op: Op) -> Op:
        from confluent_kafka import TopicPartition

        topic, part = op.value["topic"], int(op.value["partition"])
        pos = self._positions.get((topic, part), 0)
        op = Op(op.f, {**op.value, "offset": pos}, op.process, op.type)
        if self._consumer is None:
            self._consumer = self._new_consumer()
        if self._assigned != (topic, part):
            self._consumer.assign([TopicPartition(topic, part, pos)])
            self._assigned = (topic, part)
        offsets: list[int] = []
        values: list[str | None] = []
        epoch = None
        for msg in self._consumer.consume(num_messages=500, timeout=self.poll_s):
            err = msg.error()
            if err is not None and err.code() != PARTITION_EOF:
                self._assigned = None  # assigned again at the position on the next poll
                self._consumer.unassign()
                if offsets:  # records read before the error are still what this poll saw
                    break
                return op.complete(FAIL, **_error(err))
            if err is None:
                epoch = _take(msg, offsets, values)
        if offsets:
            self._positions[(topic, part)] = offsets[-1] + 1
        _, high = self._consumer.get_watermark_offsets(TopicPartition(topic, part), cached=True)
        return op.complete(OK, offsets=offsets, values=values, hw=high if high >= 0 else None, leader=None,
                           leader_epoch=epoch)

    def _final_read(self, op: Op) -> Op:
        from confluent_kafka import KafkaException, TopicPartition

        topic, part = op.value["topic"], int(op.value["partition"])
        end = time.monotonic() + self.final_deadline_s
        consumer = self._new_consumer()
        last = "no attempt"
        try:
            while time.monotonic() < end:
                try:
                    _, high = consumer.get_watermark_offsets(TopicPartition(topic, part), timeout=5, cached=False)
                except KafkaException as e:
                    last = e.args[0].name()
                    time.sleep(0.5)
                    continue
                got = self._read_to(consumer, topic, part, high, end)
                if isinstance(got, str):
                    last = got
                    continue
                offsets, values, epoch = got
                return op.complete(OK, offsets=offsets, values=values, hw=high, leader=None, leader_epoch=epoch)
        finally:
            consumer.close()
        return op.complete(FAIL, error=f"could not read the partition whole within {self.final_deadline_s:g}s: {last}")

    def _read_to(self, consumer: Any, topic: str, part: int, high: int,
                 end: float) -> tuple[list[int], list[str | None], int | None] | str:
        """Every record of the partition from offset 0 below ``high``, or why not (an error's name)."""
        from confluent_kafka import TopicPartition

        consumer.assign([TopicPartition(topic, part, 0)])
        offsets: list[int] = []
        values: list[str | None] = []
        epoch = None

        def reached() -> bool:
            return (offsets[-1] + 1 if offsets else 0) >= high

        try:
            while not reached() and time.monotonic() < end:
                for msg in consumer.consume(num_messages=1000, timeout=0.5):
                    err = msg.error()
                    if err is not None and err.code() != PARTITION_EOF:
                        return err.name()
                    if err is None and msg.offset() < high:
                        epoch = _take(msg, offsets, values)
            return (offsets, values, epoch) if reached() else "the high watermark not reached"
        finally:
            consumer.unassign()

    def close(self) -> None:
        for p in self._producers.values():
            p.purge()  # a message still queued after an ``info`` send is not sent later by a retired process
            p.flush(0)
        self._producers.clear()
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
