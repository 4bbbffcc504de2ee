"""KAFKA-14139's real-broker form (plain data): the Kafka proxy rules it installs, the proxy's frames
as it reads them while the proxy writes, and the scenario's test for a release."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from base.errors import UsageError
from harness.commands.repro import kafka_option
from harness.spec import ANOMALY, KafkaBrokers
from nemesis.kafkaproxy.rules import parse_rules
from nemesis.registry import HOLD_CAP_MS
from scenarios.kafka_7235 import WireFrames
from scenarios.kafka_7235_lost_write import SCENARIO as LOST_WRITE
from scenarios.kafka_14139 import SCENARIO, cut_fetch_rule, hold_alter_partition_rule
from workloads.kafka_admin import KafkaAdminClient
from workloads.kafka_queue import KafkaQueueClient


def test_the_hold_is_capped_below_the_leaders_request_timeout_and_both_rules_parse() -> None:
    hold = hold_alter_partition_rule(1, 90_000)
    assert hold["action"] == {"type": "hold", "hold_ms": HOLD_CAP_MS}
    assert hold["match"] == {"api": "AlterPartition", "kind": "request", "src_broker": 1}
    cut = cut_fetch_rule(3, 1)
    assert cut["match"]["src_broker"] == 3 and cut["match"]["dst_broker"] == 1 and cut["action"] == "drop"
    assert [r.id for r in parse_rules([hold, cut])] == [hold["id"], cut["id"]]


def test_frames_are_read_on_from_where_the_last_look_stopped(tmp_path: Path) -> None:
    path = tmp_path / "kafkaproxy.jsonl"
    wire = WireFrames(path)
    assert wire.poll() == [] and wire.find(lambda v: True) is None  # the proxy has written nothing yet

    def line(seq: int, **value: object) -> str:
        return json.dumps({"seq": seq, "f": "kafka_frame", "value": value}) + "\n"

    path.write_text(line(1, api="Fetch") + line(2, api="AlterPartition", action="hold") + '{"seq": 3, "f": "kaf')
    held = wire.find(lambda v: v.get("action") == "hold")
    assert held == {"api": "AlterPartition", "action": "hold", "seq": 2}
    assert wire.find(lambda v: v.get("action") == "hold", after=2) is None  # the torn line waits
    with path.open("a") as fh:
        fh.write('ka_frame", "value": {"api": "AlterPartition", "kind": "response"}}\n')
    assert wire.find(lambda v: v.get("kind") == "response", after=2) == {"api": "AlterPartition", "kind": "response",
                                                                         "seq": 3}
    assert len(wire.poll()) == 3


def test_the_real_broker_stories_read_each_frames_value_with_its_seq(tmp_path: Path) -> None:
    """What the KAFKA-7235 stories on released brokers poll (``BounceBase.frames``): run by nothing
    but the nightly real-broker tests, so it is held here, with plain data."""
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "kafkaproxy.jsonl").write_text(
        "".join(json.dumps({"seq": s, "f": f, "value": v}) + "\n" for s, f, v in [
            (1, "kafka_frame", {"api": "Fetch"}), (2, "proxy_start", {}),
            (3, "kafka_frame", {"api": "StopReplica", "kind": "request"})]))
    story, ctx = LOST_WRITE, SimpleNamespace(run_dir=tmp_path)
    assert story.frames(ctx) == [{"api": "Fetch", "seq": 1}, {"api": "StopReplica", "kind": "request", "seq": 3}]
    assert story.frames(ctx) == story.frames(ctx)  # read on, never twice


def test_on_a_release_the_story_runs_behind_the_proxy_with_kafka_clients_and_expects_the_loss() -> None:
    assert SCENARIO.not_on_kafka is None and SCENARIO.kafka_proxy and SCENARIO.kafka_fixed_in is None
    spec = SCENARIO.spec(False, kafka=KafkaBrokers("3.9.1"))
    assert spec.kafkaproxy and spec.script == SCENARIO.play_on_kafka
    assert spec.expect is not None and spec.expect.outcome == ANOMALY
    assert set(spec.expect.checkers) == {"isr_expansion", "queue_lost_write"}
    assert isinstance(spec.clients["admin"], KafkaAdminClient) and isinstance(spec.clients["queue"], KafkaQueueClient)
    agents = SCENARIO.spec(False)
    assert not isinstance(agents.clients["queue"], KafkaQueueClient)  # the agents keep their own protocol


def test_a_release_without_alter_isr_is_refused_in_one_line() -> None:
    args = argparse.Namespace(kafka="2.6.3", zk_socket=None, zk_hosts=None, fixed=False)
    with pytest.raises(UsageError, match=r"--kafka: KAFKA-14139 runs on Kafka 2.7.0 and later, not 2.6.3: before it"):
        kafka_option(args, SCENARIO)
    args.kafka = "2.7.0"
    assert kafka_option(args, SCENARIO).version == "2.7.0"
