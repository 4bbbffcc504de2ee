"""Real Kafka frames for the Kafka proxy's tests, built with the codec's own schemas (kio): the
controller's requests, the brokers' answers (with STALE_* errors), a replica's fetch."""

from __future__ import annotations

import datetime
import uuid

from kio.schema.alter_partition.v3 import request as ap3q
from kio.schema.alter_partition.v3 import response as ap3
from kio.schema.api_versions.v3 import request as av3q
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as f12
from kio.schema.fetch.v17 import request as f17
from kio.schema.leader_and_isr.v1 import request as lai1
from kio.schema.leader_and_isr.v7 import request as lai7
from kio.schema.leader_and_isr.v7 import response as lai7r
from kio.schema.stop_replica.v1 import request as sr1
from kio.schema.stop_replica.v3 import request as sr3
from kio.schema.update_metadata.v8 import request as um8
from kio.schema.update_metadata.v8 import response as um8r

from nemesis.kafkaproxy.codec import encode_request, encode_response

TOPIC_ID = uuid.UUID("00000000-0000-0000-0000-00000000002a")


def leader_and_isr_v7(controller_id: int = 1, controller_epoch: int = 3, broker_epoch: int = 4242,
                      partitions: int = 1, topic: str = "t", isr: tuple[int, ...] = (1, 2)) -> lai7.LeaderAndIsrRequest:
    states = tuple(lai7.LeaderAndIsrPartitionState(
        partition_index=p, controller_epoch=controller_epoch, leader=isr[0], leader_epoch=5 + p, isr=isr,
        partition_epoch=1, replicas=isr) for p in range(partitions))
    return lai7.LeaderAndIsrRequest(
        controller_id=controller_id, controller_epoch=controller_epoch, broker_epoch=broker_epoch, type_=0,
        topic_states=(lai7.LeaderAndIsrTopicState(topic_name=topic, topic_id=TOPIC_ID, partition_states=states),),
        live_leaders=(lai7.LeaderAndIsrLiveLeader(broker_id=isr[0], host_name="127.0.0.1", port=9092),))


def leader_and_isr_v1(controller_id: int = 1, controller_epoch: int = 2) -> lai1.LeaderAndIsrRequest:
    """Kafka 2.0's version: no broker epoch, partitions not grouped by topic."""
    return lai1.LeaderAndIsrRequest(
        controller_id=controller_id, controller_epoch=controller_epoch,
        ungrouped_partition_states=(lai1.LeaderAndIsrPartitionState(
            topic_name="old", partition_index=0, controller_epoch=controller_epoch, leader=2, leader_epoch=7,
            isr=(2, 3), partition_epoch=4, replicas=(2, 3)),),
        live_leaders=(lai1.LeaderAndIsrLiveLeader(broker_id=2, host_name="h", port=1),))


def leader_and_isr_v7_response(error: ErrorCode = ErrorCode.none,
                               partition_error: ErrorCode = ErrorCode.none) -> lai7r.LeaderAndIsrResponse:
    return lai7r.LeaderAndIsrResponse(error_code=error, topics=(lai7r.LeaderAndIsrTopicError(
        topic_id=TOPIC_ID, partition_errors=(lai7r.LeaderAndIsrPartitionError(
            partition_index=0, error_code=partition_error),)),))


def update_metadata_v8(controller_epoch: int = 3, broker_epoch: int = 4242) -> um8.UpdateMetadataRequest:
    return um8.UpdateMetadataRequest(
        controller_id=1, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
        topic_states=(um8.UpdateMetadataTopicState(topic_name="t", topic_id=TOPIC_ID, partition_states=(
            um8.UpdateMetadataPartitionState(partition_index=0, controller_epoch=controller_epoch, leader=1,
                                             leader_epoch=5, isr=(1, 2), zk_version=1, replicas=(1, 2)),)),),
        live_brokers=(um8.UpdateMetadataBroker(id_=1, endpoints=(um8.UpdateMetadataEndpoint(
            port=9092, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0),), rack=None),))


def update_metadata_v8_response(error: ErrorCode = ErrorCode.none) -> um8r.UpdateMetadataResponse:
    return um8r.UpdateMetadataResponse(error_code=error)


def stop_replica_v3(broker_epoch: int = 4242) -> sr3.StopReplicaRequest:
    return sr3.StopReplicaRequest(controller_id=1, controller_epoch=3, broker_epoch=broker_epoch, topic_states=(
        sr3.StopReplicaTopicState(topic_name="t", partition_states=(
            sr3.StopReplicaPartitionState(partition_index=0, leader_epoch=6, delete_partition=True),)),))


def stop_replica_v1(broker_epoch: int = 4242, partitions: tuple[int, ...] = (0, 2)) -> sr1.StopReplicaRequest:
    """Kafka 2.2's version: a broker epoch, each topic's partitions as bare indexes."""
    return sr1.StopReplicaRequest(controller_id=1, controller_epoch=3, broker_epoch=broker_epoch, delete_partitions=False,
                                  topics=(sr1.StopReplicaTopicV1(name="t", partition_indexes=partitions),))


def fetch_v12(replica_id: int = 2) -> f12.FetchRequest:
    return f12.FetchRequest(replica_id=replica_id, max_wait=datetime.timedelta(milliseconds=500), min_bytes=1,
                            topics=(f12.FetchTopic(topic="t", partitions=(f12.FetchPartition(
                                partition=0, current_leader_epoch=5, fetch_offset=10, partition_max_bytes=1024),)),),
                            forgotten_topics_data=())


def fetch_v17(replica_id: int = 2, replica_epoch: int = 77, fetch_offset: int = 10) -> f17.FetchRequest:
    """A 3.5+ replica's fetch: its id and broker epoch in ReplicaState, the topic by id."""
    return f17.FetchRequest(replica_state=f17.ReplicaState(replica_id=replica_id, replica_epoch=replica_epoch),
                            max_wait=datetime.timedelta(milliseconds=500), min_bytes=1, max_bytes=1 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1,
                            topics=(f17.FetchTopic(topic_id=TOPIC_ID, partitions=(f17.FetchPartition(
                                partition=0, current_leader_epoch=5, fetch_offset=fetch_offset, last_fetched_epoch=5,
                                log_start_offset=0, partition_max_bytes=1024),)),),
                            forgotten_topics_data=(), rack_id="")


def alter_partition_v3(broker_id: int = 1, broker_epoch: int = 4242, isr: tuple[int, ...] = (1, 2),
                       epochs: tuple[int, ...] = (-1, -1)) -> ap3q.AlterPartitionRequest:
    """KIP-903's version: the new ISR with each replica's broker epoch; the topic by id."""
    return ap3q.AlterPartitionRequest(broker_id=broker_id, broker_epoch=broker_epoch, topics=(ap3q.TopicData(
        topic_id=TOPIC_ID, partitions=(ap3q.PartitionData(
            partition_index=0, leader_epoch=5, new_isr_with_epochs=tuple(
                ap3q.BrokerState(broker_id=b, broker_epoch=e) for b, e in zip(isr, epochs, strict=True)),
            leader_recovery_state=0, partition_epoch=2),)),))


def alter_partition_v3_response() -> ap3.AlterPartitionResponse:
    return ap3.AlterPartitionResponse(
        throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, topics=(ap3.TopicData(
            topic_id=TOPIC_ID, partitions=(ap3.PartitionData(
                partition_index=0, error_code=ErrorCode.fenced_leader_epoch, leader_id=1, leader_epoch=5,
                isr=(1,), partition_epoch=3),)),))


def api_versions_v3() -> av3q.ApiVersionsRequest:
    return av3q.ApiVersionsRequest(client_software_name="zkfence", client_software_version="1")


def frame(entity: object, correlation_id: int, client_id: str | None = "controller-1") -> bytes:
    return encode_request(entity, correlation_id, client_id)


def answer(entity: object, correlation_id: int) -> bytes:
    return encode_response(entity, correlation_id)
