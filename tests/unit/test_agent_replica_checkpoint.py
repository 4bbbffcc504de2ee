"""The replica manager keeps Kafka's one checkpoint per log directory: a restarted broker whose
first LeaderAndIsr names one partition rewrites the file without the others, and a partition the
file lacks is re-created at high watermark 0 and truncated to it on becoming a follower (KIP-380's
"overwrite the high watermark checkpoint file and may cause incorrect truncation").

The broker process is replaced by plain data: control requests touch no ZooKeeper and no network
(the fetcher threads are never started)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from agent import errors
from agent.config import AgentConfig
from agent.hwcheckpoint import HighWatermarkCheckpoint
from agent.replica import ReplicaManager

ME, LEADER = 2, 1


@dataclass
class Broker:
    cfg: AgentConfig
    broker_epoch: int
    stopping: threading.Event = field(default_factory=threading.Event)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def emit(self, f: str, type: str = "event", **value: Any) -> None:
        self.events.append((f, value))

    def of(self, f: str) -> list[dict[str, Any]]:
        return [v for g, v in self.events if g == f]


def leader_and_isr(epoch: int, *partitions: int, leader_epoch: int = 0) -> dict[str, Any]:
    return {"type": "LeaderAndIsr", "request_id": "r", "controller_id": 3, "controller_epoch": 1,
            "broker_epoch": epoch, "partitions": [
                {"topic": "t", "partition": p, "replicas": [LEADER, ME], "leader": LEADER,
                 "leader_epoch": leader_epoch, "isr": [LEADER, ME], "controller_epoch": 1, "zk_version": 0}
                for p in partitions]}


def broker(tmp_path, epoch: int, check: str = "off") -> tuple[Broker, ReplicaManager]:
    cfg = AgentConfig.from_dict({"broker_id": ME, "zk_connect": "", "session_timeout_ms": 3000,
                                 "events_path": str(tmp_path / "events.jsonl"), "data_dir": str(tmp_path)})
    cfg.toggles.broker_epoch_check = check
    b = Broker(cfg, epoch)
    return b, ReplicaManager(b)


def follow_with_records(tmp_path, n: int) -> None:
    """Incarnation 1 (epoch 10): follows t-0 and t-1, holds n records of t-0 at high watermark n."""
    _, rm = broker(tmp_path, 10)
    assert rm.handle_control(leader_and_isr(10, 0, 1))["error_code"] == errors.NONE
    lp = rm.partitions[("t", 0)]
    lp.log.append_records([{"offset": i, "value": f"v{i}", "leader_epoch": 0} for i in range(n)])
    lp.log.set_hw(n)
    rm.close()


def test_a_first_request_for_one_partition_drops_the_others_high_watermark(tmp_path):
    follow_with_records(tmp_path, 5)
    cp = HighWatermarkCheckpoint(tmp_path / "logs")
    assert cp.read() == {("t", 0): 5, ("t", 1): 0}
    b, rm = broker(tmp_path, 20)  # incarnation 2: holds nothing until a LeaderAndIsr arrives
    # the stale request for t-1 (broker epoch 10) is its first: applied without KIP-380
    assert rm.handle_control(leader_and_isr(10, 1))["error_code"] == errors.NONE
    assert cp.read() == {("t", 1): 0}
    assert b.of("hw_checkpoint")[-1]["dropped"] == ["t-0"] and b.of("hw_checkpoint")[-1]["dropped_hw"] == {"t-0": 5}
    # t-0 comes back (a new leader epoch): no checkpointed high watermark, so 0, and a follower
    # truncates to it: the five records are gone from this replica
    rm.handle_control(leader_and_isr(20, 0, leader_epoch=1))
    assert b.of("log_open")[-1] == {"topic": "t", "partition": 0, "leo": 5, "hw": 0, "checkpointed": False}
    assert rm.partitions[("t", 0)].log.leo == 0
    assert b.of("truncate")[-1]["dropped"] == 5
    rm.close()


def test_with_kip380_the_stale_request_is_refused_and_nothing_is_truncated(tmp_path):
    follow_with_records(tmp_path, 5)
    b, rm = broker(tmp_path, 20, check="on")
    assert rm.handle_control(leader_and_isr(10, 1))["error_code"] == errors.STALE_BROKER_EPOCH
    assert HighWatermarkCheckpoint(tmp_path / "logs").read() == {("t", 0): 5, ("t", 1): 0}
    rm.handle_control(leader_and_isr(20, 0, 1, leader_epoch=1))
    assert b.of("log_open")[0]["checkpointed"] is True and b.of("log_open")[0]["hw"] == 5
    assert rm.partitions[("t", 0)].log.leo == 5 and not b.of("truncate")
    rm.close()


def test_a_deleting_stop_replica_takes_the_partition_out_of_the_file(tmp_path):
    b, rm = broker(tmp_path, 10)
    rm.handle_control(leader_and_isr(10, 0, 1))
    rm.handle_control({"type": "StopReplica", "request_id": "s", "controller_id": 3, "controller_epoch": 1,
                       "broker_epoch": 10, "delete_partitions": True,
                       "partitions": [{"topic": "t", "partition": 0, "leader_epoch": -2}]})
    assert HighWatermarkCheckpoint(tmp_path / "logs").read() == {("t", 1): 0}
    rm.close()
