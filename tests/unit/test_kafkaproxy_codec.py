"""nemesis.kafkaproxy.codec on plain bytes: every API version Kafka 2.0-3.9 speak of the
epoch-fencing APIs has a schema, real frames decode to the fields the events carry, and truncated
or random bytes come back undecoded (never an exception)."""

from __future__ import annotations

import random
import struct

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode

from nemesis.kafkaproxy.codec import (
    KAFKA_39_MAX_VERSIONS,
    api_key_of,
    api_name,
    broker_from_client_id,
    decode_request,
    decode_response,
    error_name,
    summarise,
    versions,
)
from tests import kafka_samples as ks


@pytest.mark.parametrize("key,top", sorted(KAFKA_39_MAX_VERSIONS.items()))
def test_every_version_kafka_2_0_to_3_9_speaks_has_a_schema(key: int, top: int) -> None:
    assert set(range(top + 1)) <= set(versions(key)), api_name(key)
    for v in range(top + 1):
        assert load_request_schema(key, v).__api_key__ == key
        assert load_response_schema(key, v).__version__ == v


def test_api_names_are_kafkas() -> None:
    assert [api_name(k) for k in (0, 1, 3, 4, 5, 6, 7, 18, 56)] == [
        "Produce", "Fetch", "Metadata", "LeaderAndIsr", "StopReplica", "UpdateMetadata", "ControlledShutdown",
        "ApiVersions", "AlterPartition"]
    assert api_key_of("LeaderAndIsr") == api_key_of("leader_and_isr") == api_key_of(4) == api_key_of("4") == 4
    assert api_key_of("AlterIsr") == 56
    with pytest.raises(KeyError):
        api_key_of("LeaderAndIsrr")
    with pytest.raises(KeyError):
        api_key_of(999)
    assert api_name(999) == "Unknown(999)"


def test_error_names() -> None:
    assert error_name(77) == "STALE_BROKER_EPOCH" and error_name(11) == "STALE_CONTROLLER_EPOCH"
    assert error_name(-12345) == "UNKNOWN_ERROR_-12345"


def test_leader_and_isr_v7_request_carries_epochs_leaders_and_isrs() -> None:
    d = decode_request(ks.frame(ks.leader_and_isr_v7(partitions=2), 41)[4:])
    assert (d.api_key, d.api_version, d.correlation_id, d.client_id, d.parse_error) == (4, 7, 41, "controller-1", None)
    s = summarise(d.body)
    assert s.scalars == {"controller_id": 1, "controller_epoch": 3, "broker_epoch": 4242}
    tid = "00000000-0000-0000-0000-00000000002a"  # named beside the topic's name: what maps an id-only frame
    assert [p.as_dict() for p in s.partitions] == [
        {"topic": "t", "topic_id": tid, "partition": 0, "leader": 1, "leader_epoch": 5, "isr": [1, 2],
         "partition_epoch": 1},
        {"topic": "t", "topic_id": tid, "partition": 1, "leader": 1, "leader_epoch": 6, "isr": [1, 2],
         "partition_epoch": 1}]


def test_kafka_2_0_leader_and_isr_has_no_broker_epoch() -> None:
    d = decode_request(ks.frame(ks.leader_and_isr_v1(), 1)[4:])
    s = summarise(d.body)
    assert d.api_version == 1 and "broker_epoch" not in s.scalars and s.scalars["controller_epoch"] == 2
    assert s.partitions[0].as_dict() == {"topic": "old", "partition": 0, "leader": 2, "leader_epoch": 7, "isr": [2, 3],
                                         "partition_epoch": 4}


def test_other_control_requests_and_a_fetch() -> None:
    s = summarise(decode_request(ks.frame(ks.update_metadata_v8(), 2)[4:]).body)
    assert s.scalars["broker_epoch"] == 4242 and s.partitions[0].isr == (1, 2)
    s = summarise(decode_request(ks.frame(ks.stop_replica_v3(), 3)[4:]).body)
    assert s.scalars["controller_epoch"] == 3 and s.partitions[0].leader_epoch == 6
    s = summarise(decode_request(ks.frame(ks.fetch_v12(replica_id=2), 4, "broker-2-fetcher-0")[4:]).body)
    assert s.scalars == {"replica_id": 2} and s.partitions[0].as_dict() == {"topic": "t", "partition": 0, "leader_epoch": 5,
                                                                             "fetch_offset": 10}


def test_alter_partition_v3_and_fetch_v17_name_topics_by_id_and_carry_the_replicas_epochs() -> None:
    tid = str(ks.TOPIC_ID)
    s = summarise(decode_request(ks.frame(ks.alter_partition_v3(epochs=(4242, 77)), 5, "broker-1-alter")[4:]).body)
    assert s.scalars == {"broker_id": 1, "broker_epoch": 4242}
    assert [p.as_dict() for p in s.partitions] == [{"topic": tid, "partition": 0, "leader_epoch": 5, "isr": [1, 2],
                                                    "isr_epochs": [4242, 77], "partition_epoch": 2}]
    s = summarise(decode_request(ks.frame(ks.fetch_v17(), 6, "broker-2-fetcher-0")[4:]).body)
    assert s.scalars == {"replica_id": 2, "replica_epoch": 77}
    assert [p.as_dict() for p in s.partitions] == [{"topic": tid, "partition": 0, "leader_epoch": 5,
                                                    "fetch_offset": 10}]


def test_stop_replica_v1_names_each_partition_of_its_bare_indexes() -> None:
    """Kafka 2.2-2.6 send StopReplica v1/v2: topics with a list of partition indexes, no state each."""
    s = summarise(decode_request(ks.frame(ks.stop_replica_v1(), 5)[4:]).body)
    assert s.scalars["broker_epoch"] == 4242
    assert [p.as_dict() for p in s.partitions] == [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 2}]


def test_responses_name_their_errors() -> None:
    body = ks.answer(ks.leader_and_isr_v7_response(ErrorCode.stale_broker_epoch, ErrorCode.stale_controller_epoch), 9)
    d = decode_response(body[4:], 4, 7)
    s = summarise(d.body)
    assert d.correlation_id == 9 and s.error == "STALE_BROKER_EPOCH"
    assert s.errors == ["STALE_BROKER_EPOCH", "STALE_CONTROLLER_EPOCH"]
    s = summarise(decode_response(ks.answer(ks.alter_partition_v3_response(), 1)[4:], 56, 3).body)
    assert s.error is None and s.errors == ["FENCED_LEADER_EPOCH"] and s.partitions[0].isr == (1,)


def test_api_versions_response_uses_header_v0() -> None:
    """ApiVersions answers with response header v0 even in its flexible versions (KIP-511)."""
    from kio.schema.api_versions.v3 import response as av3

    resp = av3.ApiVersionsResponse(error_code=ErrorCode.none, api_keys=(av3.ApiVersion(
        api_key=4, min_version=0, max_version=7),), throttle_time=__import__("datetime").timedelta(0))
    d = decode_response(ks.answer(resp, 5)[4:], 18, 3)
    assert d.decoded and d.body.api_keys[0].max_version == 7


def test_unknown_keys_and_versions_pass_undecoded() -> None:
    body = struct.pack(">hhi", 999, 0, 77) + b"\x00\x03abc"
    d = decode_request(body)
    assert not d.decoded and d.correlation_id == 77 and "no schema for api key 999" in (d.parse_error or "")
    d = decode_request(struct.pack(">hhi", 4, 99, 78) + b"junk")
    assert not d.decoded and d.correlation_id == 78 and "version 99" in (d.parse_error or "")
    d = decode_response(struct.pack(">i", 5) + b"x", None, None)
    assert not d.decoded and d.correlation_id == 5 and d.parse_error == "no request with this correlation id"


def test_every_truncation_of_a_real_frame_is_undecoded_not_raised() -> None:
    full = ks.frame(ks.leader_and_isr_v7(partitions=3), 12)[4:]
    for n in range(len(full)):
        d = decode_request(full[:n])
        assert not d.decoded and d.parse_error, n
    assert decode_request(full).decoded
    assert not decode_request(full + b"\x00").decoded  # trailing bytes are not a LeaderAndIsr either
    resp = ks.answer(ks.leader_and_isr_v7_response(), 12)[4:]
    for n in range(len(resp)):
        assert not decode_response(resp[:n], 4, 7).decoded


def test_random_and_mutated_bytes_never_raise() -> None:
    rng = random.Random(7)
    seeds = [ks.frame(e, 3)[4:] for e in (ks.leader_and_isr_v7(), ks.update_metadata_v8(), ks.stop_replica_v3(),
                                          ks.fetch_v12(), ks.api_versions_v3())]
    for i in range(3000):
        if i % 2:
            b = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            body = bytes(b[: rng.randint(0, len(b))]) if i % 3 == 0 else bytes(b)
        else:
            body = rng.randbytes(rng.randint(0, 64))
        d = decode_request(body)
        if d.decoded:
            summarise(d.body)
        r = decode_response(body, rng.choice([0, 1, 3, 4, 5, 6, 7, 18, 56]), rng.randint(0, 12))
        if r.decoded:
            summarise(r.body)


def test_broker_from_client_id() -> None:
    assert broker_from_client_id("broker-2-fetcher-0") == 2
    assert broker_from_client_id("controller-1") == 1
    assert broker_from_client_id("rdkafka") is None and broker_from_client_id(None) is None
