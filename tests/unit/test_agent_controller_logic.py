from hypothesis import given
from hypothesis import strategies as st

from agent import errors
from agent.controller_logic import (
    BROKER_NOT_AVAILABLE,
    after_broker_failure,
    after_broker_startup,
    alter_partition_broker_error,
    alter_partition_decision,
    classify_broker_change,
    controlled_shutdown_error,
    controlled_shutdown_moves,
    election_won_after_conflict,
    initial_state,
    max_broker_epoch,
    remove_replica_from_isr,
)
from agent.znodes import NO_LEADER, PartitionState


def test_classify_new_dead_bounced():
    bc = classify_broker_change({1: 10, 2: 20, 3: 30}, {1: 10, 2: 25, 4: 40}, "on")
    assert (bc.new, bc.dead, bc.bounced) == ([4], [3], [2])
    assert bc.live == {1: 10, 2: 25, 4: 40}


def test_fast_bounce_invisible_without_kip380():
    bc = classify_broker_change({1: 10, 2: 20}, {1: 10, 2: 25}, "off")
    assert (bc.new, bc.dead, bc.bounced) == ([], [], [])
    assert bc.live == {1: 10, 2: 20}  # the controller never learns the new czxid


def test_max_broker_epoch():
    assert max_broker_epoch({1: 10, 2: 25}) == 25
    assert max_broker_epoch({}) == -1


def test_controlled_shutdown_epoch_check():
    assert controlled_shutdown_error("on", 10, 20, True) == errors.STALE_BROKER_EPOCH  # KAFKA-7235 (c)
    assert controlled_shutdown_error("off", 10, 20, True) == errors.NONE
    assert controlled_shutdown_error("on", -1, 20, True) == errors.NONE
    assert controlled_shutdown_error("on", 20, 20, True) == errors.NONE
    assert controlled_shutdown_error("on", 20, 20, False) == errors.NOT_CONTROLLER
    assert controlled_shutdown_error("on", 20, None, True) == BROKER_NOT_AVAILABLE


def test_alter_partition_leader_epoch_is_not_equal_rule():
    assert alter_partition_broker_error("on", 21, 20) == errors.STALE_BROKER_EPOCH
    assert alter_partition_broker_error("on", 19, 20) == errors.STALE_BROKER_EPOCH
    assert alter_partition_broker_error("on", 20, 20) == errors.NONE
    assert alter_partition_broker_error("on", 20, None) == errors.STALE_BROKER_EPOCH


CUR = PartitionState(1, 3, (1,), 2, zk_version=5)
LIVE = {1: 100, 2: 250}  # broker 2 re-registered: its epoch is now 250


def _dec(entries, mode, leader_epoch=3, partition_epoch=5, live=LIVE, shutting=()):
    return alter_partition_decision(CUR, leader_epoch, partition_epoch, entries, live, mode, 2, shutting)


def test_kafka_14139_stale_replica_epoch():
    stale = [{"id": 1, "epoch": 100}, {"id": 2, "epoch": 200}]
    off = _dec(stale, "off")
    assert off.error == errors.NONE and off.new_state.isr == (1, 2)  # ZK mode ignores the epochs
    kip = _dec(stale, "kip903")
    assert kip.error == errors.INELIGIBLE_REPLICA and kip.ineligible == (2,)
    ok = _dec([{"id": 1, "epoch": 100}, {"id": 2, "epoch": 250}], "kip903")
    assert ok.error == errors.NONE
    unknown = _dec([{"id": 1, "epoch": -1}, {"id": 2, "epoch": -1}], "kip903")
    assert unknown.error == errors.NONE  # -1 skips the epoch check


def test_alter_partition_other_rules():
    assert _dec([{"id": 1, "epoch": -1}, {"id": 3, "epoch": -1}], "off").error == errors.INELIGIBLE_REPLICA
    assert _dec([{"id": 1, "epoch": -1}, {"id": 2, "epoch": -1}], "off", leader_epoch=4).error \
        == errors.NOT_CONTROLLER
    assert _dec([{"id": 1, "epoch": -1}, {"id": 2, "epoch": -1}], "off", leader_epoch=2).error \
        == errors.FENCED_LEADER_EPOCH
    assert _dec([{"id": 1, "epoch": -1}, {"id": 2, "epoch": -1}], "off", partition_epoch=4).error \
        == errors.INVALID_UPDATE_VERSION
    same = _dec([{"id": 1, "epoch": -1}], "off")
    assert same.error == errors.NONE and same.current == CUR and same.new_state is None
    assert _dec([{"id": 1, "epoch": 100}, {"id": 2, "epoch": 250}], "kip903", shutting=[2]).error \
        == errors.INELIGIBLE_REPLICA
    assert alter_partition_decision(None, 0, 0, [], LIVE, "off", 1).error == errors.UNKNOWN_TOPIC_OR_PARTITION


def test_last_replica_in_isr_stays():
    st = PartitionState(2, 4, (2,), 1, 3)
    new = after_broker_failure(st, [1, 2], [2], [1], 5)
    assert new.leader == NO_LEADER and new.isr == (2,) and new.leader_epoch == 5
    # Wiped sole ISR member comes back: it is elected (the KAFKA-14139 / KIP-966 hole).
    back = after_broker_startup(new, [1, 2], [1, 2], 5)
    assert back.leader == 2 and back.isr == (2,) and back.leader_epoch == 6


def test_failure_elects_from_live_isr():
    st = PartitionState(1, 0, (1, 2, 3), 1, 0)
    new = after_broker_failure(st, [1, 2, 3], [1], [2, 3], 2)
    assert new.leader == 2 and new.isr == (2, 3) and new.leader_epoch == 1 and new.controller_epoch == 2
    follower_dead = after_broker_failure(st, [1, 2, 3], [3], [1, 2], 2)
    assert follower_dead.leader == 1 and follower_dead.isr == (1, 2)
    assert after_broker_failure(st, [1, 2, 3, 4], [4], [1, 2, 3], 2) is None


@given(st.lists(st.integers(1, 5), min_size=1, max_size=5, unique=True), st.sets(st.integers(1, 5)))
def test_isr_never_empty_and_leader_in_isr(assign, dead):
    live = [r for r in range(1, 6) if r not in dead]
    state = initial_state(assign, live, 1)
    for _ in range(2):
        nxt = after_broker_failure(state, assign, dead, live, 1) or state
        nxt = after_broker_startup(nxt, assign, live, 1) or nxt
        assert nxt.isr, nxt
        assert nxt.leader == NO_LEADER or nxt.leader in nxt.isr
        assert nxt.leader_epoch >= state.leader_epoch
        state = nxt


def test_remove_replica_from_isr():
    st = PartitionState(1, 0, (1, 2), 1, 0)
    assert remove_replica_from_isr(st, 2, 1).isr == (1,)
    assert remove_replica_from_isr(st, 1, 1).leader == NO_LEADER


def test_controlled_shutdown_moves():
    st = PartitionState(2, 0, (2, 1), 1, 0)
    new, stop = controlled_shutdown_moves(st, [2, 1], 2, [1, 2], 1)
    assert new.leader == 1 and new.isr == (1,) and not stop
    st2 = PartitionState(1, 0, (1, 2), 1, 0)
    new2, stop2 = controlled_shutdown_moves(st2, [1, 2], 2, [1, 2], 1)
    assert new2.isr == (1,) and stop2


def test_election_lost_reply():
    assert election_won_after_conflict(1, 5, 1, 5)
    assert not election_won_after_conflict(2, 5, 1, 5)
    assert not election_won_after_conflict(1, 6, 1, 5)
    assert not election_won_after_conflict(None, 5, 1, 5)
