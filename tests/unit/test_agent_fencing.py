import pytest

from agent import errors
from agent.fencing import (
    broker_epoch_error,
    controller_epoch_error,
    leader_and_isr_partition_error,
    stop_replica_partition_error,
)
from agent.znodes import PartitionState


@pytest.mark.parametrize(
    "mode,req,own,expected",
    [
        ("on", -1, 100, errors.NONE),
        ("on", 99, 100, errors.STALE_BROKER_EPOCH),
        ("on", 100, 100, errors.NONE),
        ("on", 101, 100, errors.NONE),  # KAFKA-9839: "less than", not "not equal"
        ("on", 5, None, errors.NONE),
        ("off", 1, 100, errors.NONE),  # pre-KIP-380
        ("strict", 101, 100, errors.UNKNOWN_SERVER_ERROR),  # 2.2-2.5.0
        ("strict", 99, 100, errors.STALE_BROKER_EPOCH),
        ("strict", 100, 100, errors.NONE),
    ],
)
def test_broker_epoch(mode, req, own, expected):
    assert broker_epoch_error(mode, req, own) == expected


def test_max_broker_epoch_overrides_per_broker_check():
    # Fork semantics: stale iff M < own; the per-broker field is ignored when M != -1.
    assert broker_epoch_error("on", -1, 100, max_broker_epoch=99) == errors.STALE_BROKER_EPOCH
    assert broker_epoch_error("on", -1, 100, max_broker_epoch=100) == errors.NONE
    assert broker_epoch_error("on", 1, 100, max_broker_epoch=150) == errors.NONE
    assert broker_epoch_error("on", 1, 100, max_broker_epoch=-1) == errors.STALE_BROKER_EPOCH
    assert broker_epoch_error("off", -1, 100, max_broker_epoch=5) == errors.NONE


def test_controller_epoch():
    assert controller_epoch_error(3, 4) == errors.STALE_CONTROLLER_EPOCH
    assert controller_epoch_error(4, 4) == errors.NONE
    assert controller_epoch_error(5, 4) == errors.NONE


def test_leader_and_isr_partition_rule():
    cur = PartitionState(1, 5, (1, 2), 3, zk_version=7)
    assert leader_and_isr_partition_error(PartitionState(2, 6, (2,), 3, 8), cur) == errors.NONE
    assert leader_and_isr_partition_error(PartitionState(1, 5, (1,), 3, 8), cur) == errors.NONE
    assert leader_and_isr_partition_error(PartitionState(1, 5, (1,), 3, 7), cur) == errors.STALE_CONTROLLER_EPOCH
    assert leader_and_isr_partition_error(PartitionState(1, 4, (1,), 3, 9), cur) == errors.STALE_CONTROLLER_EPOCH
    assert leader_and_isr_partition_error(cur, None) == errors.NONE


def test_stop_replica_leader_epoch_fence():
    assert stop_replica_partition_error(3, 4) == errors.FENCED_LEADER_EPOCH
    assert stop_replica_partition_error(4, 4) == errors.NONE
    assert stop_replica_partition_error(-1, 4) == errors.NONE
    assert stop_replica_partition_error(-2, 4) == errors.NONE
    assert stop_replica_partition_error(1, None) == errors.NONE
