"""The ZK-mode controller (K37 ``KafkaController``, ``ControllerChannelManager``): election with a
CAS on /controller_epoch, every ZooKeeper write fenced by ``check(/controller_epoch, epochZkVersion)``,
broker changes (new / dead / bounced by czxid), failure-then-startup handling, topic creation,
AlterPartition, ControlledShutdown, KIP-39 preferred controller, and the channel manager that sends
LeaderAndIsr / UpdateMetadata / StopReplica with the target's broker epoch (or the max broker epoch).

Everything here runs on the agent's controller event thread, except the debug hooks and the
per-broker sender threads.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    RolledBackError,
)
from kazoo.protocol.states import ZnodeStat

from agent import errors
from agent import znodes as zn
from agent.controller_logic import (
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
)
from agent.znodes import PartitionState

if TYPE_CHECKING:
    from agent.main import BrokerAgent

TP = tuple[str, int]


class ControllerMoved(Exception):
    """A fenced write's check on /controller_epoch failed: another controller has taken over."""


def _retry(agent: BrokerAgent, fn: Any) -> Any:
    """retryRequestUntilConnected: resend on connection loss once reconnected."""
    while True:
        try:
            return fn()
        except (ConnectionLoss, OperationTimeoutError):
            agent.wait_connected()
            if agent.stopping.is_set():
                raise


class Sender(threading.Thread):
    """RequestSendThread: one per live broker; retries a request until answered or removed."""

    def __init__(self, ctl: Controller, target: int) -> None:
        super().__init__(name=f"send-{target}", daemon=True)
        self.ctl = ctl
        self.target = target
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self.running = True

    def run(self) -> None:
        agent = self.ctl.agent
        while self.running and not agent.stopping.is_set():
            try:
                body = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            while self.running and not agent.stopping.is_set():
                try:
                    reply = agent.request_broker(self.target, body, timeout=2.0)
                except OSError:
                    time.sleep(0.2)
                    continue
                agent.emit("control_response", request_id=body["request_id"], kind=body["type"],
                           target=self.target, error_code=reply.get("error_code"),
                           partition_errors=reply.get("partition_errors", {}))
                break

    def stop(self) -> None:
        self.running = False


class Controller:
    def __init__(self, agent: BrokerAgent) -> None:
        self.agent = agent
        self.zk = agent.zk
        self.me = agent.cfg.broker_id
        self.toggles = agent.cfg.toggles
        self.active = False
        self.epoch = 0
        self.epoch_zk_version = -1
        self.live: dict[int, int] = {}
        self.shutting_down: set[int] = set()
        self.assignments: dict[str, dict[int, list[int]]] = {}
        self.states: dict[TP, PartitionState] = {}
        self.senders: dict[int, Sender] = {}
        self.stored: OrderedDict[str, tuple[int, dict[str, Any]]] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    # -- helpers ---------------------------------------------------------------------------
    def emit(self, f: str, type: str = "event", **value: Any) -> Any:
        return self.agent.emit(f, type=type, **value)

    def read_controller_id(self) -> int | None:
        try:
            data, _ = _retry(self.agent, lambda: self.zk.get(zn.CONTROLLER))
        except NoNodeError:
            return None
        return zn.parse_controller_id(data)

    def read_epoch(self) -> tuple[int, int]:
        """(controller epoch, its zkVersion), creating /controller_epoch as "0" when absent."""
        while True:
            try:
                data, stat = _retry(self.agent, lambda: self.zk.get(zn.CONTROLLER_EPOCH))
                return zn.parse_controller_epoch(data), stat.version
            except NoNodeError:
                try:
                    _retry(self.agent, lambda: self.zk.create(
                        zn.CONTROLLER_EPOCH, zn.controller_epoch_payload(zn.INITIAL_CONTROLLER_EPOCH)))
                except NodeExistsError:
                    pass

    def read_live_brokers(self) -> dict[int, int]:
        """getChildren(/brokers/ids) then each child's czxid (the broker epoch)."""
        out: dict[int, int] = {}
        for child in _retry(self.agent, lambda: self.zk.get_children(zn.BROKER_IDS)):
            try:
                data, stat = _retry(self.agent, lambda c=child: self.zk.get(f"{zn.BROKER_IDS}/{c}"))
            except NoNodeError:
                continue
            bid = int(child)
            out[bid] = stat.czxid
            self.agent.learn_broker_endpoint(bid, data)
        return dict(sorted(out.items()))

    # -- fenced ZooKeeper writes -----------------------------------------------------------------
    def zk_write(self, op: str, path: str, add_ops: Any, epoch: int | None = None,
                 epoch_zk_version: int | None = None) -> list[Any]:
        """multi[check(/controller_epoch, epochZkVersion), op...]; with controller_fencing=off the
        check is left out (KAFKA-6082). Raises ControllerMoved on a failed check."""
        fenced = self.toggles.controller_fencing == "on"
        version = self.epoch_zk_version if epoch_zk_version is None else epoch_zk_version
        cepoch = self.epoch if epoch is None else epoch

        def attempt() -> list[Any]:
            txn = self.zk.transaction()
            if fenced:
                txn.check(zn.CONTROLLER_EPOCH, version)
            add_ops(txn)
            return txn.commit()

        results = _retry(self.agent, attempt)
        ops = results[1:] if fenced else results
        err = next((r for r in ops if isinstance(r, Exception) and not isinstance(r, RolledBackError)), None)
        zxid = next((r.mzxid for r in ops if isinstance(r, ZnodeStat)), None)
        if fenced and isinstance(results[0], BadVersionError):
            self.emit("controller_zk_write", type="fail", controller_epoch=cepoch, checked_version=version,
                      op=op, path=path, zxid=None, error="CONTROLLER_MOVED")
            raise ControllerMoved(path)
        if fenced and isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
            err = results[0]
        self.emit("controller_zk_write", type="fail" if err else "ok", controller_epoch=cepoch,
                  checked_version=version if fenced else None, op=op, path=path, zxid=zxid,
                  error=type(err).__name__ if err else None)
        if err:
            raise err
        return ops

    def write_state(self, tp: TP, new: PartitionState, create: bool = False) -> PartitionState | None:
        """Conditional write of a partition state znode (expected version = new.zk_version)."""
        topic, part = tp
        path = zn.partition_state_path(topic, part)
        try:
            if create:
                for parent in (zn.partitions_path(topic), zn.partition_path(topic, part)):
                    try:
                        self.zk_write("create", parent, lambda t, p=parent: t.create(p, b""))
                    except NodeExistsError:
                        pass
                self.zk_write("create", path, lambda t: t.create(path, new.payload()))
                stat = _retry(self.agent, lambda: self.zk.exists(path))
                written = PartitionState(new.leader, new.leader_epoch, new.isr, new.controller_epoch,
                                         stat.version)
                zxid = stat.czxid
            else:
                ops = self.zk_write("set_data", path,
                                    lambda t: t.set_data(path, new.payload(), version=new.zk_version))
                stat = ops[0]
                written = PartitionState(new.leader, new.leader_epoch, new.isr, new.controller_epoch,
                                         stat.version)
                zxid = stat.mzxid
        except (BadVersionError, NodeExistsError):
            # Maybe our own write landed and only the reply was lost: re-read and compare.
            data, stat = _retry(self.agent, lambda: self.zk.get(path))
            cur = PartitionState.parse(data, stat.version)
            if (cur.leader, cur.leader_epoch, cur.isr, cur.controller_epoch) == \
                    (new.leader, new.leader_epoch, new.isr, new.controller_epoch):
                written, zxid = cur, stat.mzxid
            else:
                self.states[tp] = cur
                return None
        self.states[tp] = written
        self.emit("partition_state", topic=topic, partition=part, leader=written.leader,
                  leader_epoch=written.leader_epoch, isr=list(written.isr),
                  controller_epoch=written.controller_epoch, zk_version=written.zk_version, zxid=zxid)
        return written

    # -- election ---------------------------------------------------------------------------
    def preferred_elsewhere(self) -> int | None:
        """KIP-39: the broker named by /admin/ready_to_serve, if it is not me."""
        if not self.toggles.preferred_controller:
            return None
        try:
            data, _ = _retry(self.agent, lambda: self.zk.get(zn.READY_TO_SERVE))
        except NoNodeError:
            return None
        try:
            pref = int(data.decode())
        except (ValueError, AttributeError):
            return None
        return None if pref == self.me else pref

    def elect(self) -> None:
        if not self.agent.registered:
            return
        pref = self.preferred_elsewhere()
        if pref is not None:
            self.emit("election_skipped", preferred=pref)
            return
        if self.read_controller_id() is not None:
            return
        epoch, version = self.read_epoch()
        new_epoch = epoch + 1
        self.emit("controller_election", type="invoke", expected_epoch=epoch, epoch_zk_version=version,
                  session_id=self.agent.session_id())

        def attempt() -> list[Any]:
            txn = self.zk.transaction()
            txn.create(zn.CONTROLLER, zn.controller_payload(self.me), ephemeral=True)
            txn.set_data(zn.CONTROLLER_EPOCH, zn.controller_epoch_payload(new_epoch), version=version)
            return txn.commit()

        results = _retry(self.agent, attempt)
        if isinstance(results[1], ZnodeStat):
            new_version = results[1].version
        else:
            # NODEEXISTS / BADVERSION: won if our own earlier multi landed (lost reply).
            cid = self.read_controller_id()
            e2, v2 = self.read_epoch()
            if not election_won_after_conflict(cid, e2, self.me, new_epoch):
                self.emit("controller_election", type="fail", controller_epoch=e2, controller_id=cid,
                          error=type(next(r for r in results if isinstance(r, Exception)
                                          and not isinstance(r, RolledBackError))).__name__)
                self.maybe_resign("lost election race")
                return
            new_version = v2
        self.epoch, self.epoch_zk_version = new_epoch, new_version
        self.active = True
        self.emit("controller_elected", controller_epoch=new_epoch, epoch_zk_version=new_version,
                  session_id=self.agent.session_id())
        try:
            self.on_failover()
        except ControllerMoved:
            self.resign("controller moved during failover")

    def maybe_resign(self, reason: str) -> None:
        was = self.active
        cid = self.read_controller_id()
        if was and cid != self.me:
            self.resign(reason)

    def resign(self, reason: str) -> None:
        if not self.active:
            return
        self.active = False
        for s in self.senders.values():
            s.stop()
        self.senders.clear()
        self.shutting_down.clear()
        self.emit("controller_resigned", controller_epoch=self.epoch, reason=reason)

    def move_controller(self, reason: str) -> None:
        """triggerControllerMove: resign, then delete /controller fenced by our epoch version."""
        if not self.active:
            return
        version = self.epoch_zk_version
        self.resign(reason)
        try:
            self.zk_write("delete", zn.CONTROLLER, lambda t: t.delete(zn.CONTROLLER), epoch_zk_version=version)
        except (ControllerMoved, NoNodeError):
            pass

    # -- failover / broker changes -----------------------------------------------------------
    def on_failover(self) -> None:
        current = self.read_live_brokers()
        change = classify_broker_change({}, current, "on")
        self.live = change.live
        self.emit("broker_change", controller_epoch=self.epoch, live=self.live, new=sorted(self.live),
                  dead=[], bounced=[], reason="failover")
        for b in self.live:
            self._add_sender(b)
        self.load_topics()
        changed = self._repair_partitions()
        self.send_update_metadata(sorted(self.live), full=True)
        for b in self.live:
            self.send_leader_and_isr_for_broker(b, full=True)
        if changed:
            self.send_update_metadata(sorted(self.live), partitions=changed)

    def load_topics(self) -> list[TP]:
        """Read /brokers/topics and every partition state; create the missing ones. Returns new TPs."""
        created: list[TP] = []
        topics = _retry(self.agent, lambda: self.zk.get_children(zn.BROKER_TOPICS))
        for topic in sorted(topics):
            if topic not in self.assignments:
                data, _ = _retry(self.agent, lambda t=topic: self.zk.get(zn.topic_path(t)))
                self.assignments[topic] = zn.parse_topic_assignment(data)
            for part, replicas in sorted(self.assignments[topic].items()):
                tp = (topic, part)
                path = zn.partition_state_path(topic, part)
                try:
                    data, stat = _retry(self.agent, lambda p=path: self.zk.get(p))
                    self.states[tp] = PartitionState.parse(data, stat.version)
                except NoNodeError:
                    st = initial_state(replicas, self.live, self.epoch)
                    if self.write_state(tp, st, create=True) is not None:
                        created.append(tp)
        return created

    def _repair_partitions(self) -> list[TP]:
        changed = []
        for tp, st in sorted(self.states.items()):
            assignment = self.assignments[tp[0]][tp[1]]
            dead = [r for r in assignment if r not in self.live]
            new = after_broker_failure(st, assignment, dead, self.live, self.epoch) if dead else None
            if new is not None:
                st = self.write_state(tp, new) or self.states[tp]
                changed.append(tp)
            new = after_broker_startup(st, assignment, self.live, self.epoch)
            if new is not None and self.write_state(tp, new) is not None:
                changed.append(tp)
        return changed

    def on_broker_change(self) -> None:
        if not self.active:
            return
        current = self.read_live_brokers()
        change = classify_broker_change(self.live, current, self.toggles.broker_epoch_check)
        self.emit("broker_change", controller_epoch=self.epoch, live=change.live, new=change.new,
                  dead=change.dead, bounced=change.bounced, reason="watch")
        for b in change.dead + change.bounced:
            self._remove_sender(b)
            self.shutting_down.discard(b)
        for b in change.dead + change.bounced:
            self.live.pop(b, None)
        if change.new:
            for b in change.new:
                self.live[b] = change.live[b]
                self._add_sender(b)
            self.on_broker_startup(change.new)
        if change.bounced:
            self.on_broker_failure(change.bounced)
            for b in change.bounced:
                self.live[b] = change.live[b]
                self._add_sender(b)
            self.on_broker_startup(change.bounced, bounced=True)
        if change.dead:
            self.on_broker_failure(change.dead)
        self.live = dict(sorted(change.live.items()))

    def on_broker_failure(self, brokers: list[int]) -> None:
        changed = []
        for tp, st in sorted(self.states.items()):
            new = after_broker_failure(st, self.assignments[tp[0]][tp[1]], brokers, self.live, self.epoch)
            if new is not None and self.write_state(tp, new) is not None:
                changed.append(tp)
        self.emit("broker_failure_handled", controller_epoch=self.epoch, brokers=brokers,
                  partitions=[f"{t}-{p}" for t, p in changed])
        self._propagate(changed)

    def on_broker_startup(self, brokers: list[int], bounced: bool = False) -> None:
        self.send_update_metadata(brokers, full=True)
        others = [b for b in self.live if b not in brokers]
        if others:
            self.send_update_metadata(others, partitions=[])
        for b in brokers:
            self.send_leader_and_isr_for_broker(b, full=True)
        changed = []
        for tp, st in sorted(self.states.items()):
            new = after_broker_startup(st, self.assignments[tp[0]][tp[1]], self.live, self.epoch)
            if new is not None and self.write_state(tp, new) is not None:
                changed.append(tp)
        self.emit("broker_startup_handled", controller_epoch=self.epoch, brokers=brokers, bounced=bounced,
                  epochs={b: self.live.get(b) for b in brokers}, partitions=[f"{t}-{p}" for t, p in changed])
        self._propagate(changed)

    def _propagate(self, changed: list[TP]) -> None:
        """LeaderAndIsr to the live replicas of changed partitions, UpdateMetadata to everyone."""
        if not changed:
            return
        by_broker: dict[int, list[TP]] = {}
        for tp in changed:
            for r in self.assignments[tp[0]][tp[1]]:
                if r in self.live:
                    by_broker.setdefault(r, []).append(tp)
        for b, tps in sorted(by_broker.items()):
            self.send("LeaderAndIsr", b, tps)
        self.send_update_metadata(sorted(self.live), partitions=changed)

    def on_topic_change(self) -> None:
        if not self.active:
            return
        created = self.load_topics()
        if created:
            self.emit("topics_created", controller_epoch=self.epoch,
                      partitions=[f"{t}-{p}" for t, p in created])
            self._propagate(created)

    # -- channel manager -------------------------------------------------------------------------
    def _add_sender(self, b: int) -> None:
        if b not in self.senders:
            s = Sender(self, b)
            self.senders[b] = s
            s.start()

    def _remove_sender(self, b: int) -> None:
        s = self.senders.pop(b, None)
        if s is not None:
            s.stop()

    def partition_entry(self, tp: TP) -> dict[str, Any]:
        st = self.states[tp]
        return {"topic": tp[0], "partition": tp[1], "replicas": self.assignments[tp[0]][tp[1]], **st.to_dict()}

    def build(self, kind: str, target: int, tps: list[TP], full: bool = False,
              broker_epoch: int | None = None, shared_id: str | None = None, **fields: Any) -> dict[str, Any]:
        maxmode = self.toggles.max_broker_epoch
        body: dict[str, Any] = {
            "type": kind,
            "request_id": shared_id or f"c{self.me}-e{self.epoch}-{next(self._ids)}",
            "controller_id": self.me,
            "controller_epoch": self.epoch,
            "broker_epoch": -1 if maxmode else (self.live.get(target, -1) if broker_epoch is None else broker_epoch),
            "max_broker_epoch": max_broker_epoch(self.live) if maxmode else -1,
            "full": full,
            "partitions": [self.partition_entry(tp) for tp in tps if tp in self.states],
            **fields,
        }
        if kind == "UpdateMetadata":
            body["live_brokers"] = [{"id": b, **self.agent.endpoint_of(b)} for b in sorted(self.live)]
        return body

    def _record(self, target: int, body: dict[str, Any], **extra: Any) -> None:
        with self._lock:
            self.stored[f"{body['request_id']}@{target}"] = (target, body)
            while len(self.stored) > 2000:
                self.stored.popitem(last=False)
        self.emit("control_send", request_id=body["request_id"], kind=body["type"], target=target,
                  controller_epoch=body["controller_epoch"], broker_epoch=body["broker_epoch"],
                  max_broker_epoch=body["max_broker_epoch"], epoch_map=dict(self.live), full=body["full"],
                  partitions=[f"{p['topic']}-{p['partition']}" for p in body["partitions"]], **extra)

    def send(self, kind: str, target: int, tps: list[TP], full: bool = False, **fields: Any) -> dict[str, Any]:
        body = self.build(kind, target, tps, full=full, **fields)
        self._record(target, body)
        s = self.senders.get(target)
        if s is not None:
            s.queue.put(body)
        return body

    def send_update_metadata(self, targets: list[int], partitions: list[TP] | None = None,
                             full: bool = False) -> None:
        tps = sorted(self.states) if full or partitions is None else partitions
        if self.toggles.max_broker_epoch and targets:
            # Seed 001: one cached payload for every broker, fenced by the max broker epoch.
            shared = f"c{self.me}-e{self.epoch}-{next(self._ids)}"
            for b in targets:
                body = self.build("UpdateMetadata", b, tps, full=full, shared_id=shared)
                self._record(b, body, shared=True)
                s = self.senders.get(b)
                if s is not None:
                    s.queue.put(body)
            return
        for b in targets:
            self.send("UpdateMetadata", b, tps, full=full)

    def send_leader_and_isr_for_broker(self, b: int, full: bool = False) -> None:
        tps = [tp for tp in sorted(self.states) if b in self.assignments[tp[0]][tp[1]]]
        if tps or full:
            self.send("LeaderAndIsr", b, tps, full=full)

    # -- requests from brokers ------------------------------------------------------------
    def handle_alter_partition(self, req: dict[str, Any]) -> dict[str, Any]:
        tp = (req["topic"], int(req["partition"]))
        leader = int(req["broker_id"])
        base = dict(request_id=req.get("request_id"), topic=tp[0], partition=tp[1], live=dict(self.live),
                    new_isr_with_epochs=req.get("new_isr_with_epochs"), leader=leader,
                    broker_epoch=req.get("broker_epoch"))
        if not self.active:
            self.emit("alter_partition_handled", outcome="rejected", error_code=errors.NOT_CONTROLLER, **base)
            return {"error_code": errors.NOT_CONTROLLER}
        code = alter_partition_broker_error(self.toggles.broker_epoch_check, int(req.get("broker_epoch", -1)),
                                            self.live.get(leader))
        d = None
        if code == errors.NONE:
            d = alter_partition_decision(
                self.states.get(tp), int(req["leader_epoch"]), int(req["partition_epoch"]),
                req.get("new_isr_with_epochs", []), self.live, self.toggles.isr_epoch_check, self.epoch,
                self.shutting_down)
            code = d.error
        st = None
        if d is not None and d.new_state is not None:
            st = self.write_state(tp, d.new_state)
            if st is None:
                code = errors.INVALID_UPDATE_VERSION
            else:
                self.send_update_metadata(sorted(self.live), partitions=[tp])
        elif d is not None and d.current is not None:
            st = d.current
        self.emit("alter_partition_handled", outcome="accepted" if code == errors.NONE else "rejected",
                  error_code=code, isr=list(st.isr) if st else None,
                  leader_epoch=st.leader_epoch if st else None, partition_epoch=st.zk_version if st else None,
                  ineligible=list(d.ineligible) if d else [], **base)
        if code != errors.NONE or st is None:
            return {"error_code": code}
        return {"error_code": 0, "leader": st.leader, "leader_epoch": st.leader_epoch, "isr": list(st.isr),
                "partition_epoch": st.zk_version}

    def handle_controlled_shutdown(self, req: dict[str, Any]) -> dict[str, Any]:
        b, be = int(req["broker_id"]), int(req.get("broker_epoch", -1))
        cached = self.live.get(b)
        code = controlled_shutdown_error(self.toggles.broker_epoch_check, be, cached, self.active)
        moves: list[dict[str, Any]] = []
        stops: list[str] = []
        if code == errors.NONE:
            self.shutting_down.add(b)
            changed: list[TP] = []
            stop_tps: list[TP] = []
            for tp, st in sorted(self.states.items()):
                new, stop = controlled_shutdown_moves(st, self.assignments[tp[0]][tp[1]], b, self.live, self.epoch)
                if new is not None:
                    written = self.write_state(tp, new)
                    if written is not None:
                        changed.append(tp)
                        if st.leader == b:
                            moves.append({"partition": f"{tp[0]}-{tp[1]}", "from": b, "to": written.leader})
                if stop:
                    stop_tps.append(tp)
            others = {}
            for tp in changed:
                for r in self.assignments[tp[0]][tp[1]]:
                    if r in self.live and r != b:
                        others.setdefault(r, []).append(tp)
            for r, tps in sorted(others.items()):
                self.send("LeaderAndIsr", r, tps)
            if stop_tps:
                self.send("StopReplica", b, stop_tps, delete_partitions=False)
                stops = [f"{t}-{p}" for t, p in stop_tps]
            if changed:
                self.send_update_metadata(sorted(self.live), partitions=changed)
        remaining = [f"{t}-{p}" for (t, p), st in sorted(self.states.items()) if st.leader == b]
        self.emit("controlled_shutdown_handled", request_id=req.get("request_id"), broker_id=b, broker_epoch=be,
                  cached_epoch=cached, outcome="accepted" if code == errors.NONE else "rejected",
                  error_code=code, leader_moves=moves, stop_replicas=stops, remaining_leaders=remaining)
        return {"error_code": code, "remaining_partitions": remaining}

    # -- KIP-39 preferred controller ---------------------------------------------------------------
    def on_ready_to_serve(self, data: bytes | None) -> None:
        if data is None:
            if self.read_controller_id() is None:
                self.elect()
            return
        try:
            pref = int(data.decode())
        except ValueError:
            return
        if self.active and pref != self.me:
            self.emit("preferred_controller_handover", controller_epoch=self.epoch, preferred=pref)
            self.move_controller(f"preferred controller is {pref}")

    # -- debug hooks (docs/agent.md) -----------------------------------------------------------
    def debug_build(self, kind: str, target: int, topic: str | None = None, partition: int | None = None,
                    broker_epoch: int | None = None, delete_partitions: bool = False) -> dict[str, Any]:
        with self._lock:
            tps = [tp for tp in sorted(self.states)
                   if (topic is None or tp[0] == topic) and (partition is None or tp[1] == partition)
                   and (kind == "UpdateMetadata" or target in self.assignments[tp[0]][tp[1]])]
            fields = {"delete_partitions": delete_partitions} if kind == "StopReplica" else {}
            body = self.build(kind, target, tps, broker_epoch=broker_epoch, **fields)
            self.stored[f"{body['request_id']}@{target}"] = (target, body)
        return body

    def debug_send(self, request_id: str, target: int | None = None) -> dict[str, Any]:
        with self._lock:
            key = next((k for k in reversed(self.stored)
                        if k.split("@")[0] == request_id and (target is None or k.endswith(f"@{target}"))), None)
            if key is None:
                return {"error_code": errors.INVALID_REQUEST, "error": f"no stored request {request_id}"}
            tgt, body = self.stored[key]
        self.emit("control_send", request_id=body["request_id"], kind=body["type"], target=tgt,
                  controller_epoch=body["controller_epoch"], broker_epoch=body["broker_epoch"],
                  max_broker_epoch=body["max_broker_epoch"], epoch_map=dict(self.live), full=body["full"],
                  partitions=[f"{p['topic']}-{p['partition']}" for p in body["partitions"]], debug=True)
        try:
            reply = self.agent.request_broker(tgt, body, timeout=5.0)
        except OSError as e:
            return {"error_code": errors.NETWORK_EXCEPTION, "error": str(e)}
        self.emit("control_response", request_id=body["request_id"], kind=body["type"], target=tgt,
                  error_code=reply.get("error_code"), partition_errors=reply.get("partition_errors", {}))
        return {"target": tgt, **reply}

    def debug_write(self, topic: str, partition: int, leader: int | None = None,
                    isr: list[int] | None = None) -> dict[str, Any]:
        """Write a partition state as this broker's controller believes itself to be (even a zombie)."""
        tp = (topic, partition)
        path = zn.partition_state_path(topic, partition)
        data, stat = _retry(self.agent, lambda: self.zk.get(path))
        cur = PartitionState.parse(data, stat.version)
        new = cur.new_leader_and_isr(cur.leader if leader is None else leader,
                                     cur.isr if isr is None else isr, self.epoch)
        try:
            written = self.write_state(tp, new)
        except ControllerMoved:
            return {"ok": False, "error": "CONTROLLER_MOVED", "controller_epoch": self.epoch,
                    "epoch_zk_version": self.epoch_zk_version}
        return {"ok": written is not None, "state": written.to_dict() if written else None,
                "controller_epoch": self.epoch, "epoch_zk_version": self.epoch_zk_version}

    def snapshot(self) -> dict[str, Any]:
        return {
            "active": self.active,
            "controller_epoch": self.epoch,
            "epoch_zk_version": self.epoch_zk_version,
            "live": {str(k): v for k, v in self.live.items()},
            "shutting_down": sorted(self.shutting_down),
            "states": {f"{t}-{p}": s.to_dict() for (t, p), s in sorted(self.states.items())},
        }

    def stop(self) -> None:
        for s in self.senders.values():
            s.stop()
