"""The ZK-mode controller's decisions as pure functions (K37 ``controller/KafkaController.scala``,
``PartitionStateMachine``, ``ReplicaStateMachine``, ``Election``). The process glue in
``agent.controller`` reads ZooKeeper, calls these, and writes the results back fenced."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from agent import errors
from agent.znodes import NO_LEADER, PartitionState

BROKER_NOT_AVAILABLE = 8


@dataclass(frozen=True, slots=True)
class BrokerChange:
    live: dict[int, int]  # broker id -> epoch the controller caches after this change
    new: list[int] = field(default_factory=list)
    dead: list[int] = field(default_factory=list)
    bounced: list[int] = field(default_factory=list)


def classify_broker_change(cached: Mapping[int, int], current: Mapping[int, int], epoch_check: str) -> BrokerChange:
    """K37 ``processBrokerChange``: new = not cached, dead = cached but gone, bounced = in both with a
    larger czxid. With ``broker_epoch_check=off`` (pre-KIP-380) czxids are ignored, so a fast bounce
    is invisible and the cached epoch is not refreshed."""
    new = sorted(set(current) - set(cached))
    dead = sorted(set(cached) - set(current))
    if epoch_check == "off":
        bounced: list[int] = []
        live = {b: (cached[b] if b in cached else current[b]) for b in current}
    else:
        bounced = sorted(b for b in set(current) & set(cached) if current[b] > cached[b])
        live = dict(current)
    return BrokerChange(live=dict(sorted(live.items())), new=new, dead=dead, bounced=bounced)


def max_broker_epoch(live: Mapping[int, int]) -> int:
    return max(live.values(), default=-1)


def controlled_shutdown_error(
    epoch_check: str, request_epoch: int, cached_epoch: int | None, active: bool
) -> int:
    """K37 ``doControlledShutdown``: active controller only; unknown broker → BROKER_NOT_AVAILABLE;
    -1 accepts; request < cached → STALE_BROKER_EPOCH (skipped entirely with the check off)."""
    if not active:
        return errors.NOT_CONTROLLER
    if cached_epoch is None:
        return BROKER_NOT_AVAILABLE
    if epoch_check == "off" or request_epoch == -1:
        return errors.NONE
    if request_epoch < cached_epoch:
        return errors.STALE_BROKER_EPOCH
    return errors.NONE


def alter_partition_broker_error(epoch_check: str, request_epoch: int, cached_epoch: int | None) -> int:
    """The leader's own epoch on AlterPartition: unknown or ``!=`` cached → STALE_BROKER_EPOCH."""
    if cached_epoch is None:
        return errors.STALE_BROKER_EPOCH
    if epoch_check == "off":
        return errors.NONE
    if request_epoch != cached_epoch:
        return errors.STALE_BROKER_EPOCH
    return errors.NONE


def offline_leader(assignment: list[int], isr: Iterable[int], live: Iterable[int]) -> int:
    """OfflinePartitionLeaderElection (clean): first assigned replica that is live and in the ISR."""
    isr_s, live_s = set(isr), set(live)
    for r in assignment:
        if r in live_s and r in isr_s:
            return r
    return NO_LEADER


def remove_replica_from_isr(state: PartitionState, replica: int, controller_epoch: int) -> PartitionState:
    """K37 ``doRemoveReplicasFromIsr``: leader → -1 if it was the replica; the ISR never empties
    (size 1 stays as is). Bumps the leader epoch."""
    new_leader = NO_LEADER if state.leader == replica else state.leader
    isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
    return state.new_leader_and_isr(new_leader, isr, controller_epoch)


def after_broker_failure(
    state: PartitionState, assignment: list[int], dead: Iterable[int], live: Iterable[int], controller_epoch: int
) -> PartitionState | None:
    """New state after ``onBrokerFailure(dead)``, or None if the partition is untouched.

    Partitions led by a dead broker get an offline-partition election among live ISR members; the
    dead replicas then leave the ISR (never emptying it: a sole dead member stays, leader -1)."""
    dead_s, live_s = set(dead), set(live) - set(dead)
    if not (dead_s & (set(state.isr) | {state.leader})):
        return None
    new = state
    if state.leader in dead_s:
        leader = offline_leader(assignment, state.isr, live_s)
        if leader != NO_LEADER:
            return state.new_leader_and_isr(leader, [r for r in state.isr if r in live_s], controller_epoch)
    for r in sorted(dead_s):
        if r in new.isr or r == new.leader:
            new = remove_replica_from_isr(new, r, controller_epoch)
    # One bump per handled failure, like Kafka's single batched ISR update per partition.
    return replace(new, leader_epoch=state.leader_epoch + 1)


def after_broker_startup(
    state: PartitionState, assignment: list[int], live: Iterable[int], controller_epoch: int
) -> PartitionState | None:
    """``triggerOnlinePartitionStateChange`` after brokers come up: an offline partition (leader -1)
    whose ISR now has a live member elects it (the KAFKA-14139 path when that member was wiped)."""
    if state.leader != NO_LEADER:
        return None
    live_s = set(live)
    leader = offline_leader(assignment, state.isr, live_s)
    if leader == NO_LEADER:
        return None
    return state.new_leader_and_isr(leader, [r for r in state.isr if r in live_s], controller_epoch)


def initial_state(assignment: list[int], live: Iterable[int], controller_epoch: int) -> PartitionState:
    """NewPartition → OnlinePartition: leader = first live assigned replica, ISR = live assigned."""
    live_s = set(live)
    isr = tuple(r for r in assignment if r in live_s)
    if not isr:
        return PartitionState(NO_LEADER, 0, tuple(assignment[:1]), controller_epoch)
    return PartitionState(isr[0], 0, isr, controller_epoch)


def controlled_shutdown_moves(
    state: PartitionState, assignment: list[int], broker: int, live: Iterable[int], controller_epoch: int
) -> tuple[PartitionState | None, bool]:
    """For a broker in controlled shutdown: (new state, send StopReplica to it?).

    Led by it and others in the ISR: ControlledShutdownPartitionLeaderElection (first assigned live ISR
    member other than it). Followed by it: StopReplica(delete=false) and removal from the ISR."""
    live_s = set(live) - {broker}
    if len(assignment) <= 1:
        return None, False
    if state.leader == broker:
        isr = [r for r in state.isr if r != broker and r in live_s]
        leader = next((r for r in assignment if r in isr), NO_LEADER)
        if leader == NO_LEADER:
            return None, False
        return state.new_leader_and_isr(leader, isr, controller_epoch), False
    if broker in state.isr:
        return remove_replica_from_isr(state, broker, controller_epoch), True
    return None, broker in assignment


@dataclass(frozen=True, slots=True)
class AlterPartitionDecision:
    error: int
    new_state: PartitionState | None = None  # to write (conditional on current.zk_version)
    current: PartitionState | None = None  # already current: reply with it
    ineligible: tuple[int, ...] = ()


def alter_partition_decision(
    current: PartitionState | None,
    leader_epoch: int,
    partition_epoch: int,
    new_isr_with_epochs: list[dict[str, int]],
    live: Mapping[int, int],
    isr_epoch_check: str,
    controller_epoch: int,
    shutting_down: Iterable[int] = (),
) -> AlterPartitionDecision:
    """K37 ``tryProcessAlterPartition`` per partition, plus the KIP-903 epoch check under
    ``isr_epoch_check=kip903`` (entries with epoch -1 skip it, as in KRaft)."""
    if current is None:
        return AlterPartitionDecision(errors.UNKNOWN_TOPIC_OR_PARTITION)
    if leader_epoch > current.leader_epoch:
        return AlterPartitionDecision(errors.NOT_CONTROLLER)
    if leader_epoch < current.leader_epoch:
        return AlterPartitionDecision(errors.FENCED_LEADER_EPOCH)
    new_isr = tuple(int(e["id"]) for e in new_isr_with_epochs)
    if new_isr == current.isr:
        return AlterPartitionDecision(errors.NONE, current=current)
    if partition_epoch < current.zk_version:
        return AlterPartitionDecision(errors.INVALID_UPDATE_VERSION)
    ineligible = [r for r in new_isr if r not in live]
    if isr_epoch_check == "kip903":
        down = set(shutting_down)
        for e in new_isr_with_epochs:
            rid, ep = int(e["id"]), int(e.get("epoch", -1))
            if rid in live and (rid in down or (ep != -1 and ep != live[rid])):
                ineligible.append(rid)
    if ineligible:
        return AlterPartitionDecision(errors.INELIGIBLE_REPLICA, ineligible=tuple(sorted(set(ineligible))))
    if not new_isr:
        return AlterPartitionDecision(errors.INVALID_REQUEST)
    return AlterPartitionDecision(errors.NONE, new_state=replace(current, isr=new_isr, controller_epoch=controller_epoch))


def election_won_after_conflict(
    controller_in_zk: int | None, epoch_in_zk: int, my_id: int, expected_epoch: int
) -> bool:
    """After NODEEXISTS/BADVERSION on the election multi: success only if /controller names me and
    /controller_epoch is the value I tried to write (our own earlier multi landed; lost reply)."""
    return controller_in_zk == my_id and epoch_in_zk == expected_epoch
