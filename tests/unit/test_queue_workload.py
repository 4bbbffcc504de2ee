"""The queue workload's pure parts (generator, replica assignment, setup/final ops) and the
command line's bad input: an unknown workload or a rate ≤ 0 is a one-line error naming the flag,
exit 254, before any cluster starts."""

from __future__ import annotations

import pytest

from harness.cli import main
from workloads import WORKLOADS
from workloads.base import FAIL, INFO
from workloads.kafka_queue import KafkaQueueClient, send_outcome
from workloads.queue import QueueClient, QueueGenerator, final_ops, queue_workload, replicas, setup_ops


def test_generator_alternates_unique_sends_and_polls() -> None:
    g = QueueGenerator(partitions=3, concurrency=2)
    ops = [g.next_op(p, 0.0) for _ in range(4) for p in (0, 1)]
    sends = [o for o in ops if o is not None and o.f == "send"]
    polls = [o for o in ops if o is not None and o.f == "poll"]
    assert len(sends) == len(polls) == 4
    assert len({o.value["value"] for o in sends}) == 4, "every send's value is unique"
    assert {o.value["acks"] for o in sends} == {"all"}
    assert all(o.value["partition"] == o.value["consumer"] % 3 for o in polls), "a consumer polls its partition"
    assert {o.value["partition"] for o in sends if o.value["value"].startswith("p0-")} == {0, 1}


def test_rate_spaces_each_process_ops_with_sleep_ops() -> None:
    g = QueueGenerator(concurrency=2, rate=4.0)  # 2 ops/s per slot: one every 0.5 s
    assert g.next_op(0, 0.0).f == "send"
    nxt = g.next_op(0, 0.1)
    assert nxt is not None and nxt.f == "sleep" and nxt.value["s"] == pytest.approx(0.4)
    assert g.next_op(0, 0.5).f == "poll"
    first = g.next_op(1, 0.0)
    assert first is not None and first.f == "sleep", "slots are staggered over one period"


def test_replicas_round_robin_with_replication_capped_by_brokers() -> None:
    assert replicas([3, 1, 2], 3) == {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    assert replicas([1, 2], 2) == {0: [1, 2], 1: [2, 1]}


def test_setup_and_final_ops_cover_every_partition() -> None:
    (create,) = setup_ops("t", 4)
    assert create.f == "create_topic" and create.value == {"topic": "t", "partitions": 4}
    assert [o.value["partition"] for o in final_ops("t", 4)] == [0, 1, 2, 3]
    w = queue_workload(concurrency=3)
    assert w.concurrency == 3 and w.setup and len(w.final) == 3 and "queue_lost_write" in w.checkers
    assert "queue" in WORKLOADS


@pytest.mark.parametrize("args, flag", [
    (["--workload", "nosuch"], "--workload"),
    (["--rate", "0"], "--rate"),
    (["--rate", "-5"], "--rate"),
    (["--rate", "nan"], "--rate"),
    (["--concurrency", "0"], "--concurrency"),
])
def test_bad_workload_flags_exit_254_naming_the_flag(args: list[str], flag: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["run", *args])
    except SystemExit as e:  # a value its flag's type refuses: argparse's one line, exit 254
        code = e.code
    assert code == 254
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and (err.startswith(f"harness: {flag}:") or
                                           err.startswith(f"harness run: error: argument {flag}:")), err


def test_workload_builder_rejects_a_rate_at_or_below_zero() -> None:
    with pytest.raises(ValueError, match="rate"):
        queue_workload(rate=0)


@pytest.mark.parametrize(("code", "outcome"), [
    (-190, FAIL),  # _UNKNOWN_PARTITION: refused by the client, nothing sent
    (-184, FAIL),  # _QUEUE_FULL
    (19, INFO),  # NOT_ENOUGH_REPLICAS: refused before an append, but the client may have sent it twice
    (6, INFO),  # NOT_LEADER_OR_FOLLOWER: likewise
    (20, INFO),  # NOT_ENOUGH_REPLICAS_AFTER_APPEND: on the leader's log, perhaps committed later
    (7, INFO),  # REQUEST_TIMED_OUT: appended, replication not awaited in time
    (-192, INFO),  # _MSG_TIMED_OUT: perhaps sent
    (-195, INFO),  # _TRANSPORT: the connection dropped, perhaps after the append
], ids=["unknown-partition", "queue-full", "not-enough-replicas", "not-leader", "after-append", "request-timeout",
        "msg-timeout", "transport"])
def test_a_kafka_produce_error_is_fail_only_when_nothing_was_sent(code, outcome) -> None:
    assert send_outcome(code) == outcome


def test_the_queue_workload_brings_a_kafka_client_and_idempotence_is_for_real_brokers_only() -> None:
    w = queue_workload(idempotence="off")
    assert isinstance(w.client, QueueClient) and isinstance(w.kafka_client, KafkaQueueClient)
    assert not w.kafka_client.idempotence
    idem = queue_workload(idempotence="on")
    assert idem.client is None and idem.kafka_client.idempotence  # the agents' producer has no idempotence
    assert queue_workload().kafka_client.idempotence and not queue_workload(acks="1").kafka_client.idempotence  # auto
    assert queue_workload().client is not None  # auto on the agents: their producer, which has none
    with pytest.raises(ValueError, match="needs --acks all"):
        queue_workload(acks="1", idempotence="on")
    with pytest.raises(ValueError, match="idempotence is auto, on, off"):
        queue_workload(idempotence="yes")
