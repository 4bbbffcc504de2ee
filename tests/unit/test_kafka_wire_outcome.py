"""A control request's answer as ``control_recv``'s outcome (``base.kafkawire.control_outcome``), from
frames built with the ``kio`` codec and written as the Kafka proxy writes them: a LeaderAndIsr or
StopReplica whose every partition was refused changed no partition's state and is ``rejected`` (Kafka
2.2.0 answers a replayed LeaderAndIsr v0 so: top-level NONE, each partition STALE_CONTROLLER_EPOCH),
some refused is ``applied`` with the refused ones listed, a top-level error refuses it all."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.leader_and_isr.v0 import response as lai0r
from kio.schema.leader_and_isr.v7 import response as lai7r
from kio.schema.stop_replica.v1 import response as sr1r
from kio.schema.update_metadata.v8 import response as um8r

from base.kafkawire import control_outcome, wire_events
from history import Event
from nemesis.kafkaproxy.codec import api_key_of, decode_response, encode_response, summarise
from nemesis.kafkaproxy.proxy import KafkaProxy

NONE, STALE_CE, STALE_BE = ErrorCode.none, ErrorCode.stale_controller_epoch, ErrorCode.stale_broker_epoch
TOPIC_ID = "5f8e6a0e-3c43-4a6e-9a8b-1b2c3d4e5f60"


def as_written(entity: Any, api: str, version: int) -> dict[str, Any]:
    """The response's ``kafka_frame`` value as the proxy writes it: encoded, decoded, summarised."""
    d = decode_response(encode_response(entity, 7)[4:], api_key_of(api), version)
    ev: dict[str, Any] = {}
    KafkaProxy._summary_fields(summarise(d.body), ev)
    return ev


def lai_v0(*codes: ErrorCode, top: ErrorCode = NONE) -> dict[str, Any]:
    return as_written(lai0r.LeaderAndIsrResponse(error_code=top, partition_errors=tuple(
        lai0r.LeaderAndIsrPartitionError(topic_name="queue", partition_index=i, error_code=c)
        for i, c in enumerate(codes))), "LeaderAndIsr", 0)


def lai_v7(*codes: ErrorCode, top: ErrorCode = NONE) -> dict[str, Any]:
    """v5+ group the partitions' errors by topic id."""
    import uuid

    return as_written(lai7r.LeaderAndIsrResponse(error_code=top, topics=(lai7r.LeaderAndIsrTopicError(
        topic_id=uuid.UUID(TOPIC_ID), partition_errors=tuple(
            lai7r.LeaderAndIsrPartitionError(partition_index=i, error_code=c) for i, c in enumerate(codes))),)),
        "LeaderAndIsr", 7)


def stop_v1(*codes: ErrorCode, top: ErrorCode = NONE) -> dict[str, Any]:
    return as_written(sr1r.StopReplicaResponse(error_code=top, partition_errors=tuple(
        sr1r.StopReplicaPartitionError(topic_name="queue", partition_index=i, error_code=c)
        for i, c in enumerate(codes))), "StopReplica", 1)


def outcome(answer: dict[str, Any]) -> tuple[str, int, list[tuple[Any, int, str]] | None] | None:
    got = control_outcome(answer)
    if got is None:
        return None
    o, code, refused = got
    return o, code, None if refused is None else [(p["topic"], p["partition"], p["error"]) for p in refused]


@pytest.mark.parametrize("build", [lai_v0, lai_v7, stop_v1])
def test_every_partition_refused_is_not_applied(build: Any) -> None:
    o, code, refused = outcome(build(STALE_CE, STALE_CE)) or ("?", 0, None)
    assert (o, code) == ("rejected", 11) and [r[1:] for r in refused or []] == [
        (0, "STALE_CONTROLLER_EPOCH"), (1, "STALE_CONTROLLER_EPOCH")]


def test_v5_and_later_name_the_refused_partitions_by_topic_id() -> None:
    assert outcome(lai_v7(STALE_CE)) == ("rejected", 11, [(TOPIC_ID, 0, "STALE_CONTROLLER_EPOCH")])


@pytest.mark.parametrize("build", [lai_v0, lai_v7, stop_v1])
def test_some_refused_is_applied_with_the_refused_ones_listed(build: Any) -> None:
    o, code, refused = outcome(build(NONE, STALE_CE, NONE)) or ("?", 0, None)
    assert (o, code) == ("applied", 0) and [r[1:] for r in refused or []] == [(1, "STALE_CONTROLLER_EPOCH")]


@pytest.mark.parametrize("build", [lai_v0, lai_v7, stop_v1])
def test_every_partition_none_is_applied(build: Any) -> None:
    assert outcome(build(NONE, NONE)) == ("applied", 0, None)


def test_an_update_metadata_answers_only_at_the_top() -> None:
    assert outcome(as_written(um8r.UpdateMetadataResponse(error_code=NONE), "UpdateMetadata", 8)) == (
        "applied", 0, None)
    assert outcome(as_written(um8r.UpdateMetadataResponse(error_code=STALE_BE), "UpdateMetadata", 8))[:2] == (
        "rejected", 77)


@pytest.mark.parametrize("build", [lai_v0, lai_v7, stop_v1])
def test_a_top_level_error_refuses_the_request(build: Any) -> None:
    assert outcome(build(NONE, top=STALE_BE)) == ("rejected", 77, None)
    # Kafka's error response repeats the top-level error for each partition
    assert outcome(build(STALE_CE, top=STALE_CE))[:2] == ("rejected", 11)


def test_a_cut_list_is_decided_by_the_count_of_all_refused() -> None:
    every = lai_v0(*[STALE_CE] * 60)
    assert len(every["partitions"]) == 50 and every["partition_error_count"] == 60
    assert outcome(every)[:2] == ("rejected", 11)
    some = lai_v0(*[STALE_CE] * 50, *[NONE] * 10)  # the accepted ones are past the cut
    assert len(some["partitions"]) == 50 and outcome(some)[:2] == ("applied", 0)
    # a frame written before the proxy counted: whether an unlisted partition was accepted is not known
    assert outcome({k: v for k, v in every.items() if k != "partition_error_count"}) is None


def frame(seq: int, t: float, **value: Any) -> Event:
    return Event("r", "kafkaproxy", seq, t, 0, "event", "kafka_frame", None, {"decoded": True, **value})


def test_a_replayed_pre_kip_380_leader_and_isr_refused_partition_by_partition_is_a_rejection() -> None:
    """The false invalid seen on 2.2.0: the replay of a LeaderAndIsr v0 built for broker 2's first
    incarnation (epoch 100) reaches its second (epoch 200); the broker refuses each partition. The
    receive is ``rejected`` (control_request_epochs judges only applied requests' epochs; a
    rejection it judges only for STALE_BROKER_EPOCH), and one that cannot be told maps to none."""
    lai = {"api": "LeaderAndIsr", "controller_id": 1, "dst_broker": 2, "src_broker": 1}
    parts = [{"topic": "queue", "partition": 0, "leader": 2, "leader_epoch": 3}]
    register = [Event("r", "kafka-2", i, t, 0, "ok", "register", 2, {"broker_id": 2, "epoch": ep})
                for i, (t, ep) in enumerate(((1.0, 100), (5.0, 200)), 1)]
    answer = lai_v0(STALE_CE)
    out = wire_events([
        frame(1, 2.0, dir="c2s", kind="request", conn=1, correlation_id=1, controller_epoch=1, partitions=parts, **lai),
        frame(2, 2.1, dir="s2c", kind="response", conn=1, correlation_id=1, req_seq=1, **lai),
        frame(3, 6.0, dir="c2s", kind="request", conn=9, correlation_id=1, controller_epoch=1, partitions=parts,
              replay_of=1, action="replay", **lai),
        frame(4, 6.1, dir="s2c", kind="response", conn=9, correlation_id=1, req_seq=3, **answer, **lai),
        frame(5, 7.0, dir="c2s", kind="request", conn=9, correlation_id=2, controller_epoch=1, partitions=parts,
              replay_of=1, action="replay", **lai),
        frame(6, 7.1, dir="s2c", kind="response", conn=9, correlation_id=2, req_seq=5, **lai,
              **{k: v for k, v in lai_v0(*[STALE_CE] * 60).items() if k != "partition_error_count"}),
    ], register)
    recv = [(e.value["request_id"], e.value["outcome"], e.value["error_code"], e.value["broker_epoch"],
             e.value["own_epoch"]) for e in out if e.f == "control_recv"]
    assert recv == [("1:1", "applied", 0, 100, 100), ("9:1", "rejected", 11, 100, 200)]
