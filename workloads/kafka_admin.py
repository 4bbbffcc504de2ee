"""A story's admin client for real Kafka brokers: ``workloads.kafka.AdminClient``'s ``create_topic``
(a topic with the replicas a story names) through confluent-kafka's Admin API.

The agents' admin client writes ``/brokers/topics/T`` itself (``agent.znodes.create_topic``, what
``kafka-topics --zookeeper`` did); a released broker is given its topics the way its users give
them: CreateTopics with an explicit replica assignment, so that the story knows which broker leads
(the first replica) and which follows. ``ok`` once the Metadata answer names a leader for every
partition, with the replicas the brokers report.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from workloads.base import Op
from workloads.kafka_queue import QUIET, create_topic


@dataclass
class KafkaAdminClient:
    # broker configs of a story's topic: min.insync.replicas 1 (Kafka's default, said here because a
    # story that acknowledges acks=all writes with its follower out of the ISR relies on it) and no
    # unclean election (a loss must come from a clean election)
    min_insync_replicas: int = 1
    timeout_s: float = 30.0

    def __post_init__(self) -> None:
        self._bootstrap = ""
        self._process: int | str = ""

    def open(self, ctx: Any, process: int | str) -> KafkaAdminClient:
        client = replace(self)
        client._bootstrap = ctx.kafka_bootstrap()
        client._process = process
        return client

    def invoke(self, op: Op) -> Op:
        if op.f != "create_topic":
            raise ValueError(f"admin (Kafka): no operation {op.f!r}")
        return self._create_topic(op)

    def _create_topic(self, op: Op) -> Op:
        from confluent_kafka.admin import AdminClient, NewTopic

        topic = op.value["topic"]
        replicas = {int(p): [int(b) for b in bs] for p, bs in op.value["replicas"].items()}
        if sorted(replicas) != list(range(len(replicas))):
            raise ValueError(f"admin (Kafka): partitions must be 0..n-1, got {sorted(replicas)}")
        admin = AdminClient({"bootstrap.servers": self._bootstrap, "client.id": f"zkfence-{self._process}", **QUIET})
        config = {"min.insync.replicas": str(self.min_insync_replicas), "unclean.leader.election.enable": "false"}
        assignment = [replicas[p] for p in range(len(replicas))]
        # librdkafka refuses an assignment whose length is not num_partitions
        return create_topic(op, admin, NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment,
                                                config=config),
                            len(replicas), timeout_s=self.timeout_s, poll_s=0.3)

    def close(self) -> None:
        pass
