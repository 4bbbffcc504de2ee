"""`harness run --brokers kafka:VERSION`: the test its flags describe, and bad input (no cluster
needed; the jars are resolved with Maven, cached under .local/kafka)."""

from __future__ import annotations

import pytest

from base.inventory import load_inventory
from harness.cli import build_parser, main
from harness.commands.kafkaflags import KAFKA_MARGIN_MS
from harness.commands.run import spec_from_args
from harness.spec import KafkaBrokers
from workloads.kafka_queue import KafkaQueueClient
from workloads.queue import QUEUE_CHECKERS, QueueClient

pytestmark = pytest.mark.integration


def test_real_brokers_run_the_registration_checkers_with_a_jvm_sized_margin():
    inv = load_inventory()
    args = build_parser().parse_args(["run", "--brokers", "kafka:3.9.1", "--zk-socket", "netty", "--zk-hosts", "2",
                                      "--seed", "7", "--faults", "kill,partition"])
    spec = spec_from_args(args, inv)
    assert spec.kafka == KafkaBrokers("3.9.1", "netty", 2)
    assert spec.checkers == ("registration_epochs", "registration_liveness") and spec.local_check
    assert spec.margin_ms == KAFKA_MARGIN_MS and spec.toggles == {} and spec.name == "isolate-broker-kafka-3.9.1"
    explicit = spec_from_args(build_parser().parse_args(["run", "--brokers", "kafka:3.9.1", "--margin-ms", "9000"]),
                              inv)
    assert explicit.margin_ms == 9000 and explicit.kafka == KafkaBrokers("3.9.1", "nio", None)
    agents = spec_from_args(build_parser().parse_args(["run"]), inv)
    assert agents.kafka is None and agents.margin_ms == 3000 and agents.checkers is None


def test_the_queue_workload_on_real_brokers_runs_through_its_kafka_client_and_the_queue_checkers():
    inv = load_inventory()
    spec = spec_from_args(build_parser().parse_args(
        ["run", "--brokers", "kafka:3.9.1", "--workload", "queue", "--acks", "1", "--idempotence", "off"]), inv)
    assert isinstance(spec.workload.client, KafkaQueueClient) and not spec.workload.client.idempotence
    assert spec.workload.generator.acks == "1"
    idempotent = spec_from_args(build_parser().parse_args(["run", "--brokers", "kafka:3.9.1", "--workload", "queue"]),
                                inv)
    assert idempotent.workload.client.idempotence  # auto: Kafka's producer default with acks=all
    assert spec.checkers == ("registration_epochs", "registration_liveness", *QUEUE_CHECKERS)
    assert not spec.local_check  # the queue checkers run on Spark
    agents = spec_from_args(build_parser().parse_args(["run", "--workload", "queue"]), inv)
    assert isinstance(agents.workload.client, QueueClient)


@pytest.mark.parametrize(("argv", "says"), [
    (["--brokers", "kafka:4.0.0"], "--brokers: Kafka 4.0.0: 4.0 and later have no ZooKeeper mode"),
    (["--brokers", "kafka:3.9.99"], "--brokers: Kafka 3.9.99: Maven could not resolve"),
    (["--brokers", "agents"], "--brokers: expected kafka:VERSION"),
    (["--brokers", "kafka:3.9.1", "--workload", "register"],
     "--workload: the register workload speaks the agents' protocol; with --brokers kafka:VERSION: none, queue"),
    (["--workload", "queue", "--idempotence", "on"],
     "--idempotence on: only with --brokers kafka:VERSION (the agents' queue client has no such mode)"),
    (["--brokers", "kafka:3.9.1", "--workload", "queue", "--acks", "1", "--idempotence", "on"],
     "--idempotence on needs --acks all"),
    (["--brokers", "kafka:3.9.1", "--toggle", "registration=3x"], "--toggle: agent toggles do not apply"),
    (["--brokers", "kafka:3.9.1", "--zk-hosts", "0"], "run: error: argument --zk-hosts: expected an integer in [1,"),
    (["--zk-socket", "netty"], "--zk-socket: only with --brokers kafka:VERSION"),
    (["--brokers", "kafka:3.9.1", "--faults", "kill,held_bounce"], "--faults held_bounce: these episodes act through"),
], ids=["kraft-only", "unresolvable", "not-kafka", "workload", "idempotence", "idempotent-acks-1", "toggle", "zero-hosts", "socket-alone", "episode"])
def test_bad_brokers_flags_are_one_line_exit_254(argv, says, capsys):
    try:
        code = main(["run", *argv])
    except SystemExit as e:  # a flag's bounds are argparse's: the same one line, exit 254
        code = e.code
    assert code == 254
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith((f"harness: {says}", f"harness {says}")), err


def test_lost_connect_runs_on_real_brokers_with_every_zookeeper_connection_on_the_wire_proxy():
    inv = load_inventory()
    spec = spec_from_args(build_parser().parse_args(
        ["run", "--brokers", "kafka:3.9.1", "--zk-socket", "netty", "--zk-hosts", "3", "--faults", "lost_connect,kill"]),
        inv)
    assert spec.zkproxy == "all" and spec.kafka.zk_socket == "netty" and spec.kafka.zk_hosts == 3
    assert any(step.op.f == "zk_rules" for step in spec.schedule.steps)
    plain = spec_from_args(build_parser().parse_args(["run", "--brokers", "kafka:3.9.1", "--faults", "kill"]), inv)
    assert plain.zkproxy == "off"


def test_the_shipped_nightly_kafka_campaign_plans_real_brokers_with_the_kafka_client():
    from harness.campaign import REPO_ROOT, load_campaign
    from harness.commands.campaign import plan_specs

    c = load_campaign(REPO_ROOT / "campaigns" / "nightly-kafka.toml")
    specs = plan_specs(c, load_inventory())  # fetches both releases' jars (cached under .local/kafka)
    assert {s.kafka.version for _, s in specs} == {"2.8.2", "3.9.1"}
    assert all(isinstance(s.workload.client, KafkaQueueClient) and s.margin_ms == KAFKA_MARGIN_MS
               and "queue_lost_write" in s.checkers for _, s in specs)
