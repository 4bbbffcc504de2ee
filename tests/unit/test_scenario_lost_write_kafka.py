"""KAFKA-7235-lost-write's real-broker form (plain data): the broker configuration a story passes to
its brokers (``Scenario.kafka_properties`` → ``KafkaBrokers.properties`` → ``server.properties``), the
checkers that judge it there, and the expectation per release."""

from __future__ import annotations

import pytest

from base.components.kafka import KafkaSettings, render_server_properties
from harness.spec import ANOMALY, VALID, KafkaBrokers
from scenarios.kafka_7235_lost_write import KAFKA_PROPERTIES, SCENARIO
from workloads.kafka_admin import KafkaAdminClient
from workloads.kafka_queue import KafkaQueueClient


def test_the_story_puts_its_brokers_below_leader_epochs_and_is_judged_by_the_data_loss() -> None:
    assert SCENARIO.not_on_kafka is None and SCENARIO.kafka_proxy and SCENARIO.kafka_fixed_in == "2.2.0"
    bug = SCENARIO.spec(False, kafka=KafkaBrokers("2.1.1"))
    assert bug.kafka is not None and dict(bug.kafka.properties) == KAFKA_PROPERTIES
    assert dict(bug.kafka.properties)["inter.broker.protocol.version"] == "0.10.2"  # below 0.11.0-IV2 (KIP-101)
    assert bug.kafkaproxy and bug.zkproxy == "all" and bug.script == SCENARIO.play_on_kafka
    # no broker epoch in any control request below 2.2-IV0: the data loss alone decides
    assert bug.checkers == ("queue_lost_write",)
    assert bug.expect is not None and bug.expect.outcome == ANOMALY and bug.expect.checkers == ("queue_lost_write",)
    fixed = SCENARIO.spec(False, kafka=KafkaBrokers("2.2.0"))
    assert fixed.expect is not None and fixed.expect.outcome == VALID
    queue = bug.clients["queue"]
    assert isinstance(bug.clients["admin"], KafkaAdminClient) and isinstance(queue, KafkaQueueClient)
    assert queue.idempotence is False  # the idempotent producer needs message format v2
    agents = SCENARIO.spec(False)  # the agents' story is unchanged: both checkers, no broker properties
    assert agents.kafka is None and agents.checkers == ("control_request_epochs", "queue_lost_write")


def test_a_storys_properties_come_after_the_flags_and_reach_server_properties() -> None:
    spec = SCENARIO.spec(False, kafka=KafkaBrokers("2.1.1", properties=(("num.io.threads", "4"),)))
    assert spec.kafka is not None and spec.kafka.properties[0] == ("num.io.threads", "4")
    text = render_server_properties(2, "127.0.0.22", 9092, "/d", KafkaSettings(
        "2.1.1", "zk:2181", extra={"zookeeper.clientCnxnSocket": "x", **dict(spec.kafka.properties)}))
    lines = text.splitlines()
    assert "inter.broker.protocol.version=0.10.2" in lines and "log.message.format.version=0.10.2" in lines
    assert "replica.high.watermark.checkpoint.interval.ms=1000" in lines and "num.io.threads=4" in lines
    assert "0.10.2" in spec.kafka.describe()


@pytest.mark.parametrize("bad", [("k",), ("k", ""), ("k", "a\nb=c"), ("k", 1)])
def test_a_property_that_is_not_a_one_line_pair_is_refused(bad: tuple) -> None:
    with pytest.raises(ValueError, match="properties are"):
        KafkaBrokers("2.1.1", properties=(bad,))  # type: ignore[arg-type]
