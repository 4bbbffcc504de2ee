"""Broker-side fencing decisions for control requests, as pure functions (K37 ``ZkBrokerEpochManager``,
``ReplicaManager``). Each returns a Kafka error code (0 = accept)."""

from __future__ import annotations

from agent import errors
from agent.znodes import PartitionState

NO_EPOCH = -1


def broker_epoch_error(
    mode: str,
    request_epoch: int,
    own_epoch: int | None,
    max_broker_epoch: int = NO_EPOCH,
) -> int:
    """Broker epoch check on LeaderAndIsr / UpdateMetadata / StopReplica.

    ``mode`` is the ``broker_epoch_check`` toggle: ``on`` (KIP-380, K37: stale iff request < own),
    ``off`` (pre-2.2: never checked), ``strict`` (2.2-2.5.0: request > own is an error too).
    ``max_broker_epoch`` != -1 (LinkedIn's fork, KAFKA-7186): stale iff M < own; per-broker otherwise.
    """
    if mode == "off":
        return errors.NONE
    own = NO_EPOCH if own_epoch is None else own_epoch
    if max_broker_epoch != NO_EPOCH:
        return errors.STALE_BROKER_EPOCH if max_broker_epoch < own else errors.NONE
    if request_epoch == NO_EPOCH:
        return errors.NONE
    if request_epoch < own:
        return errors.STALE_BROKER_EPOCH
    if mode == "strict" and request_epoch > own:
        return errors.UNKNOWN_SERVER_ERROR  # 2.2-2.5.0 threw IllegalStateException (KAFKA-9839)
    return errors.NONE


def controller_epoch_error(request_epoch: int, max_seen: int) -> int:
    """STALE_CONTROLLER_EPOCH when a request comes from an older controller than one already seen."""
    return errors.STALE_CONTROLLER_EPOCH if request_epoch < max_seen else errors.NONE


def leader_and_isr_partition_error(request: PartitionState, current: PartitionState | None) -> int:
    """Per partition: apply a higher leader epoch, or the same leader epoch with a newer partition
    epoch (zk_version, KIP-841); otherwise the partition is skipped with STALE_CONTROLLER_EPOCH."""
    if current is None:
        return errors.NONE
    if request.leader_epoch > current.leader_epoch:
        return errors.NONE
    if request.leader_epoch == current.leader_epoch and request.zk_version > current.zk_version:
        return errors.NONE
    return errors.STALE_CONTROLLER_EPOCH


def stop_replica_partition_error(request_leader_epoch: int, current_leader_epoch: int | None) -> int:
    """KIP-570 leader-epoch fence for StopReplica (-1 = no epoch, -2 = deletion sentinel)."""
    if current_leader_epoch is None or request_leader_epoch in (-1, -2):
        return errors.NONE
    if request_leader_epoch < current_leader_epoch:
        return errors.FENCED_LEADER_EPOCH
    return errors.NONE
