"""The queue workload (Jepsen's Kafka queue test, on the broker agents): producers send unique values,
consumers assign a partition and poll it, and a final read takes every partition after the last heal.
On real Kafka brokers the same ops go through a Kafka client (``workloads.kafka_queue``).

* setup: ``create_topic`` {topic, replicas} with replication factor 3 (or the number of brokers),
  written to ZooKeeper as Kafka's admin tools do; the client then waits for every partition to
  have a leader.
* ``send`` {topic, partition, value, acks} → ``ok`` with ``offset`` and ``leader``; ``fail`` when
  the broker answered that it did not append (NOT_LEADER_OR_FOLLOWER after retries,
  NOT_ENOUGH_REPLICAS...); ``info`` when unknown.
* ``poll`` {topic, partition, offset} → ``ok`` with ``offsets``/``values`` read from ``offset``
  (the consumer's position: the end of its previous poll of that partition), ``hw``, ``leader``,
  ``leader_epoch``; ``fail`` with the broker's ``error_code``; ``info`` when no broker answered.
* ``final_read`` {topic, partition}: every record from offset 0 up to the leader's high watermark,
  after the engine's recovery phase: ``ok`` with ``offsets``/``values``/``hw``, ``fail``/``info``
  when it could not read the whole partition (the lost-write checker then says ``unknown``).

The generator is called by every client thread at once; its state (the ops handed to each process,
the throttle) is an ``OpCounter`` behind one lock. Process ``p``'s ``k``-th op is a send of
``"p<p>-<k>"`` to partition ``(k // 2 + p) % partitions`` when ``k`` is even, else a poll of partition
``p % partitions``: processes start on different partitions, so a stalled leader does not hold them
all at once. ``rate``
(ops/s across all processes) spaces a process's ops ``concurrency / rate`` seconds apart: the
generator returns a ``sleep`` op (``WorkloadRunner`` waits, nothing is recorded) until the next
op is due.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agent import znodes
from agent.client import AppendUnknown, FetchError, KafkaClient
from workloads.base import FAIL, INFO, OK, Op, OpCounter, Workload
from workloads.catalog import Option, WorkloadDef
from workloads.kafka import append_op
from workloads.kafka_queue import KafkaQueueClient

TOPIC = "queue"
PARTITIONS = 3
REPLICATION = 3
DEFAULT_CONCURRENCY = 12  # client processes: thousands of ops in a 20 s run, even on a busy 2-core machine
QUEUE_CHECKERS = ("queue_lost_write", "queue_inconsistent_offsets", "queue_duplicate", "queue_aborted_read",
                  "queue_poll_order", "queue_unseen", "queue_linearizable")


@dataclass
class QueueGenerator:
    """Thread-safe: the next op from (process, elapsed) and the ops already handed out (an
    ``OpCounter``, locked), nothing else."""

    topic: str = TOPIC
    partitions: int = PARTITIONS
    concurrency: int = DEFAULT_CONCURRENCY
    rate: float | None = None  # ops/s across all processes; None: as fast as the clients go
    acks: str = "all"
    _ops: OpCounter = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._ops = OpCounter(self.concurrency, self.rate)

    def next_op(self, process: int, elapsed: float) -> Op | None:
        k = self._ops.take(process, elapsed)
        if isinstance(k, Op):  # the throttle's sleep
            return k
        if k % 2 == 0:
            return Op("send", {"topic": self.topic, "partition": (k // 2 + process) % self.partitions,
                               "value": f"p{process}-{k}", "acks": self.acks})
        return Op("poll", {"topic": self.topic, "partition": process % self.partitions, "consumer": process})


def replicas(brokers: list[int], partitions: int, replication: int = REPLICATION) -> dict[int, list[int]]:
    """Partition p on ``replication`` brokers starting at the p-th (round robin)."""
    bs = sorted(brokers)
    rf = min(replication, len(bs))
    return {p: [bs[(p + i) % len(bs)] for i in range(rf)] for p in range(partitions)}


def setup_ops(topic: str = TOPIC, partitions: int = PARTITIONS) -> tuple[Op, ...]:
    return (Op("create_topic", {"topic": topic, "partitions": partitions}),)


def final_ops(topic: str = TOPIC, partitions: int = PARTITIONS) -> tuple[Op, ...]:
    return tuple(Op("final_read", {"topic": topic, "partition": p}) for p in range(partitions))


class QueueClient:
    """One process's producer and consumer (its consumer positions live here: a new process
    starts polling at offset 0)."""

    def __init__(self, timeout: float = 2.0, deadline_s: float = 4.0, final_deadline_s: float = 20.0) -> None:
        self.timeout = timeout
        self.deadline_s = deadline_s
        self.final_deadline_s = final_deadline_s
        self._kafka: KafkaClient | None = None
        self._ctx: Any = None
        self._positions: dict[tuple[str, int], int] = {}

    def open(self, ctx: Any, process: int | str) -> QueueClient:
        client = QueueClient(self.timeout, self.deadline_s, self.final_deadline_s)
        client._ctx = ctx
        client._kafka = KafkaClient({b: ctx.agent_address(b) for b in ctx.brokers}, timeout=self.timeout)
        return client

    def invoke(self, op: Op) -> Op:
        assert self._kafka is not None, "open() first"
        handler = {"send": self._send, "poll": self._poll, "final_read": self._final_read,
                   "create_topic": self._create_topic}.get(op.f)
        if handler is None:
            raise ValueError(f"queue: no operation {op.f!r}")
        return handler(op)

    def _create_topic(self, op: Op) -> Op:
        topic, n = op.value["topic"], int(op.value["partitions"])
        assignment = replicas(list(self._ctx.brokers), n)
        znodes.create_topic(self._ctx.zk(), topic, assignment)
        end = time.monotonic() + 30.0
        kafka = self._kafka
        assert kafka is not None
        while time.monotonic() < end:
            try:
                kafka.metadata()
            except AppendUnknown:
                pass
            if all(kafka._leaders.get((topic, p), -1) >= 0 for p in range(n)):
                return op.complete(OK, replicas={str(p): r for p, r in assignment.items()})
            time.sleep(0.2)
        return op.complete(INFO, replicas={str(p): r for p, r in assignment.items()},
                           error="no leader for every partition within 30 s")

    def _send(self, op: Op) -> Op:
        assert self._kafka is not None
        return append_op(self._kafka, op, self.deadline_s)

    def _poll(self, op: Op) -> Op:
        assert self._kafka is not None
        topic, part = op.value["topic"], int(op.value["partition"])
        pos = self._positions.get((topic, part), 0)
        op = Op(op.f, {**op.value, "offset": pos}, op.process, op.type)
        try:
            got = self._kafka.poll(topic, part, pos)
        except FetchError as e:
            return op.complete(FAIL, error_code=e.code, leader=e.leader, error=str(e))
        except AppendUnknown as e:  # a read changes nothing, but its answer is unknown
            return op.complete(INFO, error=str(e))
        offsets = [int(r["offset"]) for r in got.records]
        if offsets:
            self._positions[(topic, part)] = offsets[-1] + 1
        return op.complete(OK, offsets=offsets, values=[r.get("value") for r in got.records], hw=got.hw,
                           leader=got.leader, leader_epoch=got.leader_epoch)

    def _final_read(self, op: Op) -> Op:
        """Read the partition from 0 to the leader's high watermark (retrying errors until the
        deadline; a leader change restarts the read so one leader's log is read whole)."""
        assert self._kafka is not None
        topic, part = op.value["topic"], int(op.value["partition"])
        end = time.monotonic() + self.final_deadline_s
        offsets: list[int] = []
        values: list[Any] = []
        epoch, last = None, "no attempt"
        while time.monotonic() < end:
            try:
                got = self._kafka.fetch(topic, part, len(offsets), -1 if epoch is None else epoch)
            except (FetchError, AppendUnknown) as e:
                last = str(e)
                if isinstance(e, FetchError) and e.epoch_changed:
                    offsets, values, epoch = [], [], None  # another leader: start over
                time.sleep(0.2)
                continue
            epoch = got.leader_epoch
            offsets += [int(r["offset"]) for r in got.records]
            values += [r.get("value") for r in got.records]
            if len(offsets) >= got.hw:
                return op.complete(OK, offsets=offsets, values=values, hw=got.hw, leader=got.leader,
                                   leader_epoch=got.leader_epoch)
            if not got.records:
                time.sleep(0.1)
        return op.complete(FAIL, error=f"could not read the partition whole within {self.final_deadline_s:g}s: {last}")

    def close(self) -> None:
        self._kafka = None


IDEMPOTENCE = ("auto", "on", "off")


def queue_workload(concurrency: int = DEFAULT_CONCURRENCY, rate: float | None = None, acks: str = "all",
                   idempotence: str = "auto", partitions: int = PARTITIONS, topic: str = TOPIC) -> Workload:
    """``idempotence``: the real brokers' producer; ``auto`` is Kafka's own producer's default since
    3.0 (idempotent with ``acks=all``, not with ``acks=1``). The agents' producer has none: with
    ``idempotence`` on, the workload runs only on real Kafka brokers (its agent client is None)."""
    if concurrency <= 0:
        raise ValueError(f"concurrency must be > 0, got {concurrency}")
    if rate is not None and rate <= 0:
        raise ValueError(f"rate must be > 0 ops/s, got {rate}")
    if idempotence not in IDEMPOTENCE:
        raise ValueError(f"idempotence is {', '.join(IDEMPOTENCE)}, not {idempotence!r}")
    if idempotence == "on" and acks != "all":  # librdkafka refuses the pair, as Kafka's producer does
        raise ValueError(f"--idempotence on needs --acks all (the idempotent producer waits for every in-sync "
                         f"replica), not --acks {acks}")
    gen = QueueGenerator(topic, partitions, concurrency, rate, acks)
    return Workload("queue", None if idempotence == "on" else QueueClient(), gen, concurrency, QUEUE_CHECKERS,
                    setup=setup_ops(topic, partitions), final=final_ops(topic, partitions),
                    kafka_client=KafkaQueueClient(idempotence=idempotence == "on" or (idempotence == "auto"
                                                                                      and acks == "all")))


# `harness run --workload queue`: its options, and how the command line builds it (workloads.DEFINITIONS)
DEFINITION = WorkloadDef("queue", queue_workload, DEFAULT_CONCURRENCY, (
    Option("acks", "all", "producer acks of the queue workload", choices=("all", "1")),
    Option("idempotence", "auto", "the idempotent producer of the queue workload on real Kafka brokers "
           "(--brokers kafka:VERSION; the agents have none); auto: Kafka's producer default since 3.0, on with "
           "--acks all, off with --acks 1", choices=IDEMPOTENCE),))
