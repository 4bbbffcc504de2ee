"""The ZK-mode controller's event handlers (K37 ``controller/KafkaController.scala``): election with a
CAS on /controller_epoch, failover, broker changes (new / dead / bounced by czxid), failure-then-
startup handling, topic creation, AlterPartition, ControlledShutdown and KIP-39's preferred
controller. The decisions are pure functions in ``agent.controller_logic``; ZooKeeper access (every
write fenced) is ``agent.controller_zk``; requests to brokers go through ``agent.channel``.

Everything here runs on the agent's controller event thread, except the debug hooks.
"""

from __future__ import annotations

from typing import Any

from kazoo.exceptions import NoNodeError, RolledBackError
from kazoo.protocol.states import ZnodeStat

from agent import errors
from agent import znodes as zn
from agent.broker_api import BrokerApi
from agent.channel import ChannelManager
from agent.controller_context import TP, ControllerContext
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
)
from agent.controller_zk import ControllerMoved, ControllerZk
from agent.znodes import PartitionState

__all__ = ["Controller", "ControllerMoved"]


class Controller:
    def __init__(self, broker: BrokerApi) -> None:
        self.broker = broker
        self.zk = broker.zk
        self.me = broker.cfg.broker_id
        self.toggles = broker.cfg.toggles
        self.ctx = ControllerContext(me=self.me, toggles=self.toggles)
        self.zkc = ControllerZk(broker, self.ctx)
        self.channel = ChannelManager(broker, self.ctx)

    def emit(self, f: str, type: str = "event", **value: Any) -> Any:
        return self.broker.emit(f, type=type, **value)

    # -- election ---------------------------------------------------------------------------
    def elect(self) -> None:
        if not self.broker.registered:
            return
        pref = self.zkc.preferred_elsewhere()
        if pref is not None:
            self.emit("election_skipped", preferred=pref)
            return
        if self.zkc.read_controller_id() is not None:
            return
        epoch, version = self.zkc.read_epoch()
        new_epoch = epoch + 1
        self.emit("controller_election", type="invoke", expected_epoch=epoch, epoch_zk_version=version,
                  session_id=self.broker.session_id())

        def attempt() -> list[Any]:
            txn = self.zk.transaction()
            txn.create(zn.CONTROLLER, zn.controller_payload(self.me), ephemeral=True)
            txn.set_data(zn.CONTROLLER_EPOCH, zn.controller_epoch_payload(new_epoch), version=version)
            return txn.commit()

        results = self.zkc.retry(attempt)
        if isinstance(results[1], ZnodeStat):
            new_version = results[1].version
        else:
            # NODEEXISTS / BADVERSION: won if our own earlier multi landed (lost reply).
            cid = self.zkc.read_controller_id()
            e2, v2 = self.zkc.read_epoch()
            if not election_won_after_conflict(cid, e2, self.me, new_epoch):
                self.emit("controller_election", type="fail", controller_epoch=e2, controller_id=cid,
                          error=type(next(r for r in results if isinstance(r, Exception)
                                          and not isinstance(r, RolledBackError))).__name__)
                self.maybe_resign("lost election race")
                return
            new_version = v2
        self.ctx.epoch, self.ctx.epoch_zk_version = new_epoch, new_version
        self.ctx.active = True
        self.emit("controller_elected", controller_epoch=new_epoch, epoch_zk_version=new_version,
                  session_id=self.broker.session_id())
        try:
            self.on_failover()
        except ControllerMoved:
            self.resign("controller moved during failover")

    def maybe_resign(self, reason: str) -> None:
        was = self.ctx.active
        cid = self.zkc.read_controller_id()
        if was and cid != self.me:
            self.resign(reason)

    def resign(self, reason: str) -> None:
        if not self.ctx.active:
            return
        self.ctx.active = False
        self.channel.clear()
        self.ctx.shutting_down.clear()
        self.emit("controller_resigned", controller_epoch=self.ctx.epoch, reason=reason)

    def move_controller(self, reason: str) -> None:
        """triggerControllerMove: resign, then delete /controller fenced by our epoch version."""
        if not self.ctx.active:
            return
        version = self.ctx.epoch_zk_version
        self.resign(reason)
        try:
            self.zkc.zk_write("delete", zn.CONTROLLER, lambda t: t.delete(zn.CONTROLLER), epoch_zk_version=version)
        except (ControllerMoved, NoNodeError):
            pass

    # -- failover / broker changes -----------------------------------------------------------
    def on_failover(self) -> None:
        current = self.zkc.read_live_brokers()
        change = classify_broker_change({}, current, "on")
        self.ctx.live = change.live
        self.emit("broker_change", controller_epoch=self.ctx.epoch, live=self.ctx.live, new=sorted(self.ctx.live),
                  dead=[], bounced=[], reason="failover")
        for b in self.ctx.live:
            self.channel.add_sender(b)
        self.load_topics()
        changed = self._repair_partitions()
        self.channel.send_update_metadata(sorted(self.ctx.live), full=True)
        for b in self.ctx.live:
            self.channel.send_leader_and_isr_for_broker(b, full=True)
        if changed:
            self.channel.send_update_metadata(sorted(self.ctx.live), partitions=changed)

    def load_topics(self) -> list[TP]:
        """Read /brokers/topics and every partition state; create the missing ones. Returns new TPs."""
        created: list[TP] = []
        topics = self.zkc.retry(lambda: self.zk.get_children(zn.BROKER_TOPICS))
        for topic in sorted(topics):
            if topic not in self.ctx.assignments:
                data, _ = self.zkc.retry(lambda t=topic: self.zk.get(zn.topic_path(t)))
                self.ctx.assignments[topic] = zn.parse_topic_assignment(data)
            for part, replicas in sorted(self.ctx.assignments[topic].items()):
                tp = (topic, part)
                path = zn.partition_state_path(topic, part)
                try:
                    data, stat = self.zkc.retry(lambda p=path: self.zk.get(p))
                    self.ctx.states[tp] = PartitionState.parse(data, stat.version)
                except NoNodeError:
                    st = initial_state(replicas, self.ctx.live, self.ctx.epoch)
                    if self.zkc.write_state(tp, st, create=True) is not None:
                        created.append(tp)
        return created

    def _repair_partitions(self) -> list[TP]:
        changed = []
        for tp, st in sorted(self.ctx.states.items()):
            assignment = self.ctx.assignments[tp[0]][tp[1]]
            dead = [r for r in assignment if r not in self.ctx.live]
            new = after_broker_failure(st, assignment, dead, self.ctx.live, self.ctx.epoch) if dead else None
            if new is not None:
                st = self.zkc.write_state(tp, new) or self.ctx.states[tp]
                changed.append(tp)
            new = after_broker_startup(st, assignment, self.ctx.live, self.ctx.epoch)
            if new is not None and self.zkc.write_state(tp, new) is not None:
                changed.append(tp)
        return changed

    def on_broker_change(self) -> None:
        if not self.ctx.active:
            return
        current = self.zkc.read_live_brokers()
        change = classify_broker_change(self.ctx.live, current, self.toggles.broker_epoch_check)
        self.emit("broker_change", controller_epoch=self.ctx.epoch, live=change.live, new=change.new,
                  dead=change.dead, bounced=change.bounced, reason="watch")
        for b in change.dead + change.bounced:
            self.channel.remove_sender(b)
            self.ctx.shutting_down.discard(b)
        for b in change.dead + change.bounced:
            self.ctx.live.pop(b, None)
        if change.new:
            for b in change.new:
                self.ctx.live[b] = change.live[b]
                self.channel.add_sender(b)
            self.on_broker_startup(change.new)
        if change.bounced:
            self.on_broker_failure(change.bounced)
            for b in change.bounced:
                self.ctx.live[b] = change.live[b]
                self.channel.add_sender(b)
            self.on_broker_startup(change.bounced, bounced=True)
        if change.dead:
            self.on_broker_failure(change.dead)
        self.ctx.live = dict(sorted(change.live.items()))

    def on_broker_failure(self, brokers: list[int]) -> None:
        changed = []
        for tp, st in sorted(self.ctx.states.items()):
            new = after_broker_failure(st, self.ctx.assignments[tp[0]][tp[1]], brokers, self.ctx.live, self.ctx.epoch)
            if new is not None and self.zkc.write_state(tp, new) is not None:
                changed.append(tp)
        self.emit("broker_failure_handled", controller_epoch=self.ctx.epoch, brokers=brokers,
                  partitions=[f"{t}-{p}" for t, p in changed])
        self._propagate(changed)

    def on_broker_startup(self, brokers: list[int], bounced: bool = False) -> None:
        self.channel.send_update_metadata(brokers, full=True)
        others = [b for b in self.ctx.live if b not in brokers]
        if others:
            self.channel.send_update_metadata(others, partitions=[])
        for b in brokers:
            self.channel.send_leader_and_isr_for_broker(b, full=True)
        changed = []
        for tp, st in sorted(self.ctx.states.items()):
            new = after_broker_startup(st, self.ctx.assignments[tp[0]][tp[1]], self.ctx.live, self.ctx.epoch)
            if new is not None and self.zkc.write_state(tp, new) is not None:
                changed.append(tp)
        self.emit("broker_startup_handled", controller_epoch=self.ctx.epoch, brokers=brokers, bounced=bounced,
                  epochs={b: self.ctx.live.get(b) for b in brokers}, partitions=[f"{t}-{p}" for t, p in changed])
        self._propagate(changed)

    def _propagate(self, changed: list[TP]) -> None:
        """LeaderAndIsr to the live replicas of changed partitions, UpdateMetadata to everyone."""
        if not changed:
            return
        by_broker: dict[int, list[TP]] = {}
        for tp in changed:
            for r in self.ctx.assignments[tp[0]][tp[1]]:
                if r in self.ctx.live:
                    by_broker.setdefault(r, []).append(tp)
        for b, tps in sorted(by_broker.items()):
            self.channel.send("LeaderAndIsr", b, tps)
        self.channel.send_update_metadata(sorted(self.ctx.live), partitions=changed)

    def on_topic_change(self) -> None:
        if not self.ctx.active:
            return
        created = self.load_topics()
        if created:
            self.emit("topics_created", controller_epoch=self.ctx.epoch,
                      partitions=[f"{t}-{p}" for t, p in created])
            self._propagate(created)

    # -- requests from brokers ------------------------------------------------------------
    def handle_alter_partition(self, req: dict[str, Any]) -> dict[str, Any]:
        tp = (req["topic"], int(req["partition"]))
        leader = int(req["broker_id"])
        base = dict(request_id=req.get("request_id"), topic=tp[0], partition=tp[1], live=dict(self.ctx.live),
                    new_isr_with_epochs=req.get("new_isr_with_epochs"), leader=leader,
                    broker_epoch=req.get("broker_epoch"))
        if not self.ctx.active:
            self.emit("alter_partition_handled", outcome="rejected", error_code=errors.NOT_CONTROLLER, **base)
            return {"error_code": errors.NOT_CONTROLLER}
        code = alter_partition_broker_error(self.toggles.broker_epoch_check, int(req.get("broker_epoch", -1)),
                                            self.ctx.live.get(leader))
        d = None
        if code == errors.NONE:
            live = self.ctx.live
            if self.toggles.isr_epoch_check == "kip903":
                # KRaft checks the epochs against its own registrations, which a broker must renew
                # with the controller before it fetches again. Here brokers register with ZooKeeper, and
                # the controller's live map lags it (a held AlterPartition reaches the controller
                # before the BrokerChange of the restart it predates), so the check reads them.
                live = self.zkc.read_live_brokers()
                base["live"] = dict(live)
            d = alter_partition_decision(
                self.ctx.states.get(tp), int(req["leader_epoch"]), int(req["partition_epoch"]),
                req.get("new_isr_with_epochs", []), live, self.toggles.isr_epoch_check, self.ctx.epoch,
                self.ctx.shutting_down)
            code = d.error
        st = None
        if d is not None and d.new_state is not None:
            st = self.zkc.write_state(tp, d.new_state)
            if st is None:
                code = errors.INVALID_UPDATE_VERSION
            else:
                self.channel.send_update_metadata(sorted(self.ctx.live), partitions=[tp])
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
        cached = self.ctx.live.get(b)
        code = controlled_shutdown_error(self.toggles.broker_epoch_check, be, cached, self.ctx.active)
        moves: list[dict[str, Any]] = []
        stops: list[str] = []
        if code == errors.NONE:
            self.ctx.shutting_down.add(b)
            changed: list[TP] = []
            stop_tps: list[TP] = []
            for tp, st in sorted(self.ctx.states.items()):
                new, stop = controlled_shutdown_moves(st, self.ctx.assignments[tp[0]][tp[1]], b, self.ctx.live, self.ctx.epoch)
                if new is not None:
                    written = self.zkc.write_state(tp, new)
                    if written is not None:
                        changed.append(tp)
                        if st.leader == b:
                            moves.append({"partition": f"{tp[0]}-{tp[1]}", "from": b, "to": written.leader})
                if stop:
                    stop_tps.append(tp)
            others = {}
            for tp in changed:
                for r in self.ctx.assignments[tp[0]][tp[1]]:
                    if r in self.ctx.live and r != b:
                        others.setdefault(r, []).append(tp)
            for r, tps in sorted(others.items()):
                self.channel.send("LeaderAndIsr", r, tps)
            if stop_tps:
                self.channel.send("StopReplica", b, stop_tps, delete_partitions=False)
                stops = [f"{t}-{p}" for t, p in stop_tps]
            if changed:
                self.channel.send_update_metadata(sorted(self.ctx.live), partitions=changed)
        remaining = [f"{t}-{p}" for (t, p), st in sorted(self.ctx.states.items()) if st.leader == b]
        self.emit("controlled_shutdown_handled", request_id=req.get("request_id"), broker_id=b, broker_epoch=be,
                  cached_epoch=cached, outcome="accepted" if code == errors.NONE else "rejected",
                  error_code=code, leader_moves=moves, stop_replicas=stops, remaining_leaders=remaining)
        return {"error_code": code, "remaining_partitions": remaining}

    # -- KIP-39 preferred controller ---------------------------------------------------------------
    def on_ready_to_serve(self, data: bytes | None) -> None:
        if data is None:
            if self.zkc.read_controller_id() is None:
                self.elect()
            return
        try:
            pref = int(data.decode())
        except ValueError:
            return
        if self.ctx.active and pref != self.me:
            self.emit("preferred_controller_handover", controller_epoch=self.ctx.epoch, preferred=pref)
            self.move_controller(f"preferred controller is {pref}")

    # -- debug hooks (docs/agent.md) ------------------------------------------------------------
    def debug_write(self, topic: str, partition: int, leader: int | None = None,
                    isr: list[int] | None = None) -> dict[str, Any]:
        """Write a partition state as this broker's controller believes itself to be (even a zombie)."""
        tp = (topic, partition)
        path = zn.partition_state_path(topic, partition)
        data, stat = self.zkc.retry(lambda: self.zk.get(path))
        cur = PartitionState.parse(data, stat.version)
        new = cur.new_leader_and_isr(cur.leader if leader is None else leader,
                                     cur.isr if isr is None else isr, self.ctx.epoch)
        try:
            written = self.zkc.write_state(tp, new)
        except ControllerMoved:
            return {"ok": False, "error": "CONTROLLER_MOVED", "controller_epoch": self.ctx.epoch,
                    "epoch_zk_version": self.ctx.epoch_zk_version}
        return {"ok": written is not None, "state": written.to_dict() if written else None,
                "controller_epoch": self.ctx.epoch, "epoch_zk_version": self.ctx.epoch_zk_version}

    def snapshot(self) -> dict[str, Any]:
        return {
            "active": self.ctx.active,
            "controller_epoch": self.ctx.epoch,
            "epoch_zk_version": self.ctx.epoch_zk_version,
            "live": {str(k): v for k, v in self.ctx.live.items()},
            "shutting_down": sorted(self.ctx.shutting_down),
            "states": {f"{t}-{p}": s.to_dict() for (t, p), s in sorted(self.ctx.states.items())},
        }

    def stop(self) -> None:
        self.channel.stop_all()
