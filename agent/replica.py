"""Broker side (K37 ``ReplicaManager``, ``Partition``, ``KafkaApis``): control requests with
broker-epoch and controller-epoch fencing, leader/follower replicas with file logs, follower
fetching with the broker epoch (KIP-903 ``ReplicaState.ReplicaEpoch``), ISR changes proposed to the
controller with AlterPartition ``NewIsrWithEpochs``, and acks=all produce."""

from __future__ import annotations

import itertools
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import errors
from agent.broker_api import BrokerApi
from agent.fencing import (
    broker_epoch_error,
    controller_epoch_error,
    leader_and_isr_partition_error,
    stop_replica_partition_error,
)
from agent.hwcheckpoint import HighWatermarkCheckpoint, dropped_partitions
from agent.plog import PartitionLog
from agent.znodes import NO_LEADER, PartitionState

TP = tuple[str, int]


@dataclass
class FollowerInfo:
    leo: int = -1  # unknown until its first fetch under this leadership
    epoch: int = -1  # broker epoch from its latest fetch
    last_caught_up: float = 0.0
    fetch_event: str | None = None  # id of the last `fetch` event for it
    last_key: tuple[int, int] | None = None


@dataclass
class LocalPartition:
    topic: str
    partition: int
    log: PartitionLog
    replicas: list[int] = field(default_factory=list)
    state: PartitionState | None = None
    role: str = "none"  # leader | follower | stopped | none
    followers: dict[int, FollowerInfo] = field(default_factory=dict)
    alter_inflight: bool = False


class ReplicaManager:
    def __init__(self, broker: BrokerApi) -> None:
        self.broker = broker
        self.cfg = broker.cfg
        self.me = broker.cfg.broker_id
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.partitions: dict[TP, LocalPartition] = {}
        # one high-watermark checkpoint for the log directory, as Kafka's replication-offset-checkpoint
        self.checkpoint = HighWatermarkCheckpoint(Path(self.cfg.data_dir) / "logs")
        self._checkpointed: dict[TP, int] = self.checkpoint.read()  # the file's content, last read or written
        self.max_controller_epoch_seen = 0
        self.controller_id: int | None = None
        self.metadata: dict[TP, dict[str, Any]] = {}
        self.live_brokers: dict[int, dict[str, Any]] = {}
        self.held_alters: list[dict[str, Any]] = []
        self.hold_alters = False
        self._ids = itertools.count(1)
        extra = self.cfg.extra
        self.fetch_interval = float(extra.get("fetch_interval_ms", 100)) / 1000.0
        self.lag_max = float(extra.get("replica_lag_time_max_ms", 3000)) / 1000.0
        self.min_insync = int(extra.get("min_insync_replicas", 1))
        self.threads = [
            threading.Thread(target=self._fetch_loop, name="fetcher", daemon=True),
            threading.Thread(target=self._isr_loop, name="isr", daemon=True),
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def next_id(self, kind: str) -> str:
        return f"b{self.me}-{kind}-{next(self._ids)}"

    def _local(self, topic: str, partition: int) -> LocalPartition:
        key = (topic, partition)
        lp = self.partitions.get(key)
        if lp is None:
            # Partition.getOrCreateReplica: the high watermark comes from the checkpoint file; a
            # partition the file does not hold starts at 0
            saved = self.checkpoint.read()
            log = PartitionLog(self.cfg.data_dir, topic, partition, hw=saved.get(key, 0),
                               on_hw=self.checkpoint_high_watermarks)
            lp = LocalPartition(topic, partition, log)
            self.partitions[key] = lp
            self.broker.emit("log_open", topic=topic, partition=partition, leo=log.leo, hw=log.hw,
                             checkpointed=key in saved)
        return lp

    def checkpoint_high_watermarks(self) -> None:
        """ReplicaManager.checkpointHighWatermarks: rewrite the log directory's checkpoint from the
        partitions held in memory, and only those (see ``agent.hwcheckpoint``)."""
        with self.lock:
            hws = {key: lp.log.hw for key, lp in self.partitions.items()}
            if not hws:
                return
            self.checkpoint.write(hws)
            before, self._checkpointed = self._checkpointed, hws
        dropped = dropped_partitions(before, hws)
        if dropped or set(hws) != set(before):
            # only when the file's partition set changes: a write per high-watermark move would flood
            self.broker.emit("hw_checkpoint", partitions={f"{t}-{p}": hw for (t, p), hw in sorted(hws.items())},
                             dropped=[f"{t}-{p}" for t, p in dropped],
                             dropped_hw={f"{t}-{p}": before[(t, p)] for t, p in dropped})

    # -- control requests ------------------------------------------------------------------
    def handle_control(self, req: dict[str, Any]) -> dict[str, Any]:
        kind = req["type"]
        toggles = self.broker.cfg.toggles
        own = self.broker.broker_epoch
        with self.lock:
            seen_before = self.max_controller_epoch_seen
            code = broker_epoch_error(
                toggles.broker_epoch_check,
                int(req.get("broker_epoch", -1)),
                own,
                int(req.get("max_broker_epoch", -1)) if toggles.max_broker_epoch else -1,
            )
            if code == errors.NONE:
                code = controller_epoch_error(int(req["controller_epoch"]), seen_before)
            partition_errors: dict[str, int] = {}
            if code == errors.NONE:
                self.max_controller_epoch_seen = max(seen_before, int(req["controller_epoch"]))
                self.controller_id = int(req.get("controller_id", -1))
                if kind == "LeaderAndIsr":
                    partition_errors = self._apply_leader_and_isr(req)
                elif kind == "UpdateMetadata":
                    self._apply_update_metadata(req)
                elif kind == "StopReplica":
                    partition_errors = self._apply_stop_replica(req)
                if kind in ("LeaderAndIsr", "StopReplica"):
                    # Kafka's first checkpoint runs right after the first LeaderAndIsr, the next
                    # ones periodically; a deleting StopReplica takes the partition out of the file
                    self.checkpoint_high_watermarks()
                self.cond.notify_all()
        self.broker.emit(
            "control_recv",
            request_id=req.get("request_id"),
            kind=kind,
            **{"from": req.get("controller_id")},
            controller_epoch=req.get("controller_epoch"),
            broker_epoch=req.get("broker_epoch", -1),
            max_broker_epoch=req.get("max_broker_epoch", -1),
            own_epoch=own,
            max_controller_epoch_seen=seen_before,
            outcome="applied" if code == errors.NONE else "rejected",
            error_code=code,
            full=bool(req.get("full", False)),
            partitions=[f"{p['topic']}-{p['partition']}" for p in req.get("partitions", [])],
            partition_errors=partition_errors,
        )
        return {"error_code": code, "partition_errors": partition_errors}

    def _apply_leader_and_isr(self, req: dict[str, Any]) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in req.get("partitions", []):
            topic, part = p["topic"], int(p["partition"])
            new = PartitionState.from_dict(p)
            lp = self._local(topic, part)
            current = lp.state if lp.role != "stopped" else None
            err = leader_and_isr_partition_error(new, current)
            out[f"{topic}-{part}"] = err
            if err != errors.NONE:
                continue
            lp.replicas = [int(r) for r in p.get("replicas", lp.replicas)]
            lp.state = new
            if new.leader == self.me:
                lp.role = "leader"
                now = time.monotonic()
                lp.followers = {r: FollowerInfo(last_caught_up=now) for r in lp.replicas if r != self.me}
                lp.alter_inflight = False
            else:
                if lp.role != "follower" or current is None or current.leader != new.leader:
                    dropped = lp.log.truncate(lp.log.hw)
                    if dropped:
                        self.broker.emit("truncate", topic=topic, partition=part, to_offset=lp.log.hw,
                                         dropped=dropped, reason="become_follower")
                lp.role = "follower"
                lp.followers = {}
            self._emit_replica_state(lp, req.get("request_id"))
        return out

    def _apply_update_metadata(self, req: dict[str, Any]) -> None:
        for p in req.get("partitions", []):
            self.metadata[(p["topic"], int(p["partition"]))] = dict(p)
        if "live_brokers" in req:
            self.live_brokers = {int(b["id"]): b for b in req["live_brokers"]}

    def _apply_stop_replica(self, req: dict[str, Any]) -> dict[str, int]:
        out: dict[str, int] = {}
        delete = bool(req.get("delete_partitions", False))
        for p in req.get("partitions", []):
            topic, part = p["topic"], int(p["partition"])
            lp = self.partitions.get((topic, part))
            cur = lp.state.leader_epoch if lp and lp.state else None
            err = stop_replica_partition_error(int(p.get("leader_epoch", -1)), cur)
            out[f"{topic}-{part}"] = err
            if err != errors.NONE or lp is None:
                continue
            lp.role = "stopped"
            lp.followers = {}
            if delete:
                lp.log.close()
                shutil.rmtree(lp.log.dir, ignore_errors=True)
                del self.partitions[(topic, part)]
            self.broker.emit("replica_state", topic=topic, partition=part, role="stopped", deleted=delete,
                             request_id=req.get("request_id"))
        return out

    def _emit_replica_state(self, lp: LocalPartition, request_id: Any) -> None:
        st = lp.state
        self.broker.emit(
            "replica_state", topic=lp.topic, partition=lp.partition, role=lp.role,
            leader=st.leader if st else None, leader_epoch=st.leader_epoch if st else None,
            isr=list(st.isr) if st else [], zk_version=st.zk_version if st else None,
            leo=lp.log.leo, hw=lp.log.hw, request_id=request_id,
        )

    # -- leader side -----------------------------------------------------------------------
    def handle_fetch(self, req: dict[str, Any]) -> dict[str, Any]:
        topic, part = req["topic"], int(req["partition"])
        rid, repoch = int(req["replica_id"]), int(req.get("replica_epoch", -1))
        offset = int(req["fetch_offset"])
        if rid < 0:
            return self.handle_consumer_fetch(topic, part, offset, int(req.get("leader_epoch", -1)),
                                              int(req.get("max_records", 500)))
        with self.lock:
            lp = self.partitions.get((topic, part))
            if lp is None or lp.role != "leader" or lp.state is None:
                return {"error_code": errors.NOT_LEADER_OR_FOLLOWER}
            le = lp.state.leader_epoch
            if int(req.get("leader_epoch", -1)) < le:
                return {"error_code": errors.FENCED_LEADER_EPOCH, "leader_epoch": le}
            if int(req.get("leader_epoch", -1)) > le:
                return {"error_code": errors.UNKNOWN_LEADER_EPOCH, "leader_epoch": le}
            if offset > lp.log.leo:
                return {"error_code": errors.OFFSET_OUT_OF_RANGE, "leo": lp.log.leo, "leader_epoch": le}
            fi = lp.followers.setdefault(rid, FollowerInfo(last_caught_up=time.monotonic()))
            fi.leo, fi.epoch = offset, repoch
            if offset >= lp.log.leo:
                fi.last_caught_up = time.monotonic()
            if fi.last_key != (offset, repoch):
                fi.last_key = (offset, repoch)
                ev = self.broker.emit(
                    "fetch", topic=topic, partition=part, replica=rid, replica_epoch=repoch,
                    fetch_offset=offset, leader=self.me, leader_epoch=le, request_id=req.get("request_id"),
                )
                fi.fetch_event = ev.id if ev is not None else None
            self._advance_hw(lp)
            records = lp.log.read(offset)
            return {"error_code": errors.NONE, "records": records, "hw": lp.log.hw, "leader_epoch": le,
                    "leo": lp.log.leo}

    def handle_consumer_fetch(self, topic: str, part: int, offset: int, leader_epoch: int,
                              max_records: int) -> dict[str, Any]:
        """A consumer's fetch (replica id -1): served by the leader only, up to the high watermark.
        Fencing as a Kafka broker: NOT_LEADER_OR_FOLLOWER when this broker does not lead; with a
        leader epoch (>= 0), FENCED_LEADER_EPOCH below ours and UNKNOWN_LEADER_EPOCH above it."""
        with self.lock:
            lp = self.partitions.get((topic, part))
            if lp is None or lp.role != "leader" or lp.state is None:
                return {"error_code": errors.NOT_LEADER_OR_FOLLOWER}
            le = lp.state.leader_epoch
            if 0 <= leader_epoch < le:
                return {"error_code": errors.FENCED_LEADER_EPOCH, "leader_epoch": le}
            if leader_epoch > le:
                return {"error_code": errors.UNKNOWN_LEADER_EPOCH, "leader_epoch": le}
            hw = lp.log.hw
            if offset < 0 or offset > hw:
                return {"error_code": errors.OFFSET_OUT_OF_RANGE, "hw": hw, "leader_epoch": le}
            records = lp.log.read(offset, max(0, min(max_records, hw - offset)))
            return {"error_code": errors.NONE, "records": records, "hw": hw, "leader_epoch": le,
                    "leader": self.me}

    def _advance_hw(self, lp: LocalPartition) -> None:
        assert lp.state is not None
        leos = [lp.log.leo]
        for r in lp.state.isr:
            if r != self.me:
                fi = lp.followers.get(r)
                leos.append(fi.leo if fi and fi.leo >= 0 else 0)
        hw = min(leos)
        if hw > lp.log.hw:
            lp.log.set_hw(hw)
            self.cond.notify_all()

    def handle_produce(self, req: dict[str, Any]) -> dict[str, Any]:
        topic, part = req["topic"], int(req["partition"])
        acks = req.get("acks", "all")
        timeout = float(req.get("timeout_ms", 5000)) / 1000.0
        with self.lock:
            lp = self.partitions.get((topic, part))
            if lp is None or lp.role != "leader" or lp.state is None:
                return {"error_code": errors.NOT_LEADER_OR_FOLLOWER}
            if acks in ("all", -1) and len(lp.state.isr) < self.min_insync:
                return {"error_code": errors.NOT_ENOUGH_REPLICAS}
            le = lp.state.leader_epoch
            offset = lp.log.append(req.get("value"), le)
            self._advance_hw(lp)
            code = errors.NONE
            if acks in ("all", -1):
                end = time.monotonic() + timeout
                while lp.log.hw <= offset:
                    if lp.role != "leader" or lp.state is None or lp.state.leader_epoch != le:
                        code = errors.NOT_LEADER_OR_FOLLOWER
                        break
                    left = end - time.monotonic()
                    if left <= 0:
                        code = errors.REQUEST_TIMED_OUT
                        break
                    self.cond.wait(min(left, 0.2))
                    if (topic, part) not in self.partitions:
                        code = errors.NOT_LEADER_OR_FOLLOWER
                        break
            hw = lp.log.hw
        self.broker.emit("produce_handled", topic=topic, partition=part, offset=offset, value=req.get("value"),
                         acks=acks, leader_epoch=le, hw=hw, error_code=code)
        return {"error_code": code, "offset": offset, "leader_epoch": le, "appended": True}

    def metadata_reply(self) -> dict[str, Any]:
        with self.lock:
            parts = [{"topic": t, "partition": p, **{k: v for k, v in md.items() if k not in ("topic", "partition")}}
                     for (t, p), md in sorted(self.metadata.items())]
            return {"error_code": 0, "controller_id": self.controller_id, "partitions": parts,
                    "brokers": sorted(self.live_brokers)}

    # -- ISR changes (leader → controller) ---------------------------------------------------
    def _isr_loop(self) -> None:
        while not self.broker.stopping.is_set():
            time.sleep(self.fetch_interval)
            for lp, new_isr, state in self._isr_proposals():
                self.send_alter_partition(lp, new_isr, proposed_on=state)

    def _isr_proposals(self) -> list[tuple[LocalPartition, list[int], PartitionState]]:
        """(partition, ISR to propose, the state it was judged on) for each leader whose ISR should change."""
        out = []
        now = time.monotonic()
        with self.lock:
            for lp in self.partitions.values():
                if lp.role != "leader" or lp.state is None or lp.alter_inflight:
                    continue
                isr = list(lp.state.isr)
                for r, fi in lp.followers.items():
                    if r not in isr and r in lp.replicas and fi.leo >= 0 and fi.leo >= lp.log.hw \
                            and fi.leo >= lp.log.leo:
                        isr.append(r)
                for r in list(isr):
                    fi = lp.followers.get(r)
                    if r != self.me and fi is not None and now - fi.last_caught_up > self.lag_max:
                        isr.remove(r)
                if tuple(isr) != lp.state.isr and isr:
                    out.append((lp, isr, lp.state))
        return out

    def build_alter_partition(self, lp: LocalPartition, isr_with_epochs: list[dict[str, int]]) -> dict[str, Any]:
        assert lp.state is not None
        return {
            "type": "AlterPartition",
            "request_id": self.next_id("alter"),
            "broker_id": self.me,
            "broker_epoch": self.broker.broker_epoch if self.broker.broker_epoch is not None else -1,
            "topic": lp.topic,
            "partition": lp.partition,
            "leader_epoch": lp.state.leader_epoch,
            "partition_epoch": lp.state.zk_version,
            "new_isr_with_epochs": isr_with_epochs,
        }

    def isr_with_epochs(self, lp: LocalPartition, isr: list[int]) -> list[dict[str, int]]:
        """ZK mode: every entry -1. KIP-903 mode: the epoch from each replica's latest fetch."""
        kip903 = self.cfg.toggles.isr_epoch_check == "kip903"
        out = []
        for r in isr:
            if not kip903:
                ep = -1
            elif r == self.me:
                ep = self.broker.broker_epoch if self.broker.broker_epoch is not None else -1
            else:
                fi = lp.followers.get(r)
                ep = fi.epoch if fi else -1
            out.append({"id": r, "epoch": ep})
        return out

    def send_alter_partition(self, lp: LocalPartition, isr: list[int],
                             isr_with_epochs: list[dict[str, int]] | None = None,
                             force_send: bool = False,
                             proposed_on: PartitionState | None = None) -> dict[str, Any] | None:
        """``proposed_on``: the state a proposal was judged on. Kafka's leader decides and sends an
        ISR change under one partition lock (Partition.maybeExpandIsr); here the loop judges all
        partitions first, so a LeaderAndIsr may land in between, resetting what the followers
        fetched: a proposal judged on another state is dropped (the next round judges the new one),
        never sent with the new state's epochs."""
        with self.lock:
            if lp.state is None or (proposed_on is not None and lp.state is not proposed_on):
                return None
            entries = isr_with_epochs if isr_with_epochs is not None else self.isr_with_epochs(lp, isr)
            req = self.build_alter_partition(lp, entries)
            based = {str(r): lp.followers[r].fetch_event for r in isr if r in lp.followers}
            lp.alter_inflight = True
            held = self.hold_alters and not force_send
            if held:
                self.held_alters.append(req)
        self.broker.emit(
            "alter_partition", request_id=req["request_id"], topic=lp.topic, partition=lp.partition,
            leader=self.me, leader_epoch=req["leader_epoch"], partition_epoch=req["partition_epoch"],
            new_isr_with_epochs=entries, based_on_fetch=based, broker_epoch=req["broker_epoch"], held=held,
        )
        if held:
            return None
        return self.deliver_alter_partition(req)

    def deliver_alter_partition(self, req: dict[str, Any]) -> dict[str, Any]:
        reply = self.broker.send_to_controller(req)
        key = (req["topic"], int(req["partition"]))
        code = int(reply.get("error_code", -1))
        with self.lock:
            lp = self.partitions.get(key)
            if lp is not None:
                lp.alter_inflight = False
                if code == errors.NONE and lp.state is not None and lp.role == "leader" \
                        and int(reply.get("leader_epoch", -1)) == lp.state.leader_epoch \
                        and int(reply.get("partition_epoch", -1)) >= lp.state.zk_version:
                    lp.state = PartitionState(
                        leader=lp.state.leader, leader_epoch=lp.state.leader_epoch,
                        isr=tuple(int(x) for x in reply["isr"]), controller_epoch=lp.state.controller_epoch,
                        zk_version=int(reply["partition_epoch"]),
                    )
                    self._advance_hw(lp)
                    self._emit_replica_state(lp, req["request_id"])
        self.broker.emit("alter_partition_response", request_id=req["request_id"], topic=req["topic"],
                         partition=req["partition"], error_code=code, isr=reply.get("isr"),
                         partition_epoch=reply.get("partition_epoch"))
        return reply

    def release_alters(self) -> list[dict[str, Any]]:
        with self.lock:
            held, self.held_alters, self.hold_alters = self.held_alters, [], False
        return [{"request_id": r["request_id"], **self.deliver_alter_partition(r)} for r in held]

    def debug_alter_partition(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The ``debug_alter_partition`` hook: send this AlterPartition now, bypassing any hold."""
        with self.lock:
            lp = self.partitions.get((msg["topic"], int(msg["partition"])))
            if lp is None or lp.role != "leader":
                return {"error_code": errors.NOT_LEADER_OR_FOLLOWER}
        entries = msg.get("new_isr_with_epochs")
        isr = [int(e["id"]) for e in entries] if entries else [int(x) for x in msg["isr"]]
        reply = self.send_alter_partition(lp, isr, isr_with_epochs=entries, force_send=True)
        return reply or {"error_code": errors.UNKNOWN_SERVER_ERROR}

    # -- follower side -------------------------------------------------------------------
    def _fetch_loop(self) -> None:
        """Fetch every followed partition each ``fetch_interval``; after a fetch that returned records,
        fetch again at once (as a Kafka follower does), so the leader learns the new log end offset
        and an acks=all produce waits about one interval, not two."""
        got = False
        while not self.broker.stopping.is_set():
            if not got:
                time.sleep(self.fetch_interval)
            with self.lock:
                todo = [(lp, lp.state.leader, lp.state.leader_epoch, lp.log.leo)
                        for lp in self.partitions.values()
                        if lp.role == "follower" and lp.state is not None
                        and lp.state.leader not in (NO_LEADER, self.me)]
            got = False
            for lp, leader, le, leo in todo:
                got = self._fetch_once(lp, leader, le, leo) or got

    def _fetch_once(self, lp: LocalPartition, leader: int, leader_epoch: int, leo: int) -> bool:
        """One fetch from the leader; True when it appended records."""
        req = {"type": "fetch", "topic": lp.topic, "partition": lp.partition, "replica_id": self.me,
               "replica_epoch": self.broker.broker_epoch if self.broker.broker_epoch is not None else -1,
               "fetch_offset": leo, "leader_epoch": leader_epoch, "request_id": self.next_id("fetch")}
        try:
            reply = self.broker.request_broker(leader, req, timeout=1.0)
        except OSError:
            return False
        code = int(reply.get("error_code", -1))
        with self.lock:
            if lp.role != "follower" or lp.state is None or lp.state.leader_epoch != leader_epoch \
                    or lp.log.leo != leo:
                return False
            if code == errors.OFFSET_OUT_OF_RANGE:
                to = int(reply.get("leo", 0))
                dropped = lp.log.truncate(to)
                self.broker.emit("truncate", topic=lp.topic, partition=lp.partition, to_offset=to,
                                 dropped=dropped, reason="offset_out_of_range")
                return False
            if code != errors.NONE:
                return False
            recs = reply.get("records", [])
            if recs:
                lp.log.append_records(recs)
            lp.log.set_hw(min(int(reply.get("hw", 0)), lp.log.leo))
            return bool(recs)

    # -- introspection --------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                f"{lp.topic}-{lp.partition}": {
                    "role": lp.role,
                    "state": lp.state.to_dict() if lp.state else None,
                    "replicas": lp.replicas,
                    "leo": lp.log.leo,
                    "hw": lp.log.hw,
                    "followers": {str(r): {"leo": f.leo, "epoch": f.epoch} for r, f in lp.followers.items()},
                    "held_alters": len(self.held_alters),
                }
                for lp in self.partitions.values()
            }

    def close(self) -> None:
        with self.lock:
            self.checkpoint_high_watermarks()  # ReplicaManager.shutdown(checkpointHW = true)
            for lp in self.partitions.values():
                self.broker.emit("log_end", topic=lp.topic, partition=lp.partition, **lp.log.snapshot())
                lp.log.close()
