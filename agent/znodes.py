"""ZNode paths and payloads exactly as Kafka 3.7 writes them (K37 ``zk/ZkData.scala``).

Pure: builds and parses bytes. The broker epoch is the czxid of ``/brokers/ids/N`` and a
partition's ``zk_version`` is the ``Stat.version`` of its state znode; neither is in the JSON.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
NEXT_CONTROLLER = "/admin/next_controller"  # KIP-39 (never implemented upstream)
READY_TO_SERVE = "/admin/ready_to_serve"  # KIP-39 ephemeral of the preferred broker

INITIAL_CONTROLLER_EPOCH = 0
NO_LEADER = -1


def now_ms() -> str:
    return str(int(time.time() * 1000))


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def broker_payload(host: str, port: int, rack: str | None = None) -> bytes:
    """BrokerIdZNode v5."""
    d: dict[str, Any] = {
        "version": 5,
        "host": host,
        "port": port,
        "endpoints": [f"PLAINTEXT://{host}:{port}"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "jmx_port": -1,
        "timestamp": now_ms(),
        "features": {},
    }
    if rack is not None:
        d["rack"] = rack
    return json.dumps(d).encode()


def parse_broker_payload(data: bytes) -> dict[str, Any]:
    return json.loads(data.decode())


def controller_payload(broker_id: int) -> bytes:
    """ControllerZNode v2."""
    return json.dumps(
        {"version": 2, "brokerid": broker_id, "timestamp": now_ms(), "kraftControllerEpoch": -1}
    ).encode()


def parse_controller_id(data: bytes | None) -> int | None:
    """Broker id in /controller (v1, v2, or the pre-0.9 plain integer), None if unreadable."""
    if not data:
        return None
    try:
        d = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if isinstance(d, int):
        return d
    if isinstance(d, dict) and isinstance(d.get("brokerid"), int):
        return d["brokerid"]
    return None


def controller_epoch_payload(epoch: int) -> bytes:
    """A plain decimal string, not JSON."""
    return str(epoch).encode()


def parse_controller_epoch(data: bytes | None) -> int:
    return int(data.decode()) if data else INITIAL_CONTROLLER_EPOCH


def topic_payload(assignment: dict[int, list[int]], topic_id: str | None = None) -> bytes:
    """TopicZNode v3."""
    return json.dumps(
        {
            "version": 3,
            "partitions": {str(p): list(r) for p, r in sorted(assignment.items())},
            "adding_replicas": {},
            "removing_replicas": {},
            "topic_id": topic_id or uuid.uuid4().hex[:22],
        }
    ).encode()


def parse_topic_assignment(data: bytes) -> dict[int, list[int]]:
    d = json.loads(data.decode())
    return {int(p): [int(r) for r in reps] for p, reps in d["partitions"].items()}


@dataclass(frozen=True, slots=True)
class PartitionState:
    """LeaderIsrAndControllerEpoch plus the state znode's version (Kafka's partitionEpoch)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = 0
    leader_recovery_state: int = 0  # 0 RECOVERED, 1 RECOVERING

    def payload(self) -> bytes:
        """TopicPartitionStateZNode v1; zk_version is not part of it."""
        d: dict[str, Any] = {
            "version": 1,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "controller_epoch": self.controller_epoch,
            "isr": list(self.isr),
        }
        if self.leader_recovery_state != 0:
            d["leader_recovery_state"] = self.leader_recovery_state
        return json.dumps(d).encode()

    @classmethod
    def parse(cls, data: bytes, zk_version: int) -> PartitionState:
        d = json.loads(data.decode())
        return cls(
            leader=int(d["leader"]),
            leader_epoch=int(d["leader_epoch"]),
            isr=tuple(int(x) for x in d["isr"]),
            controller_epoch=int(d["controller_epoch"]),
            zk_version=zk_version,
            leader_recovery_state=int(d.get("leader_recovery_state", 0)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "controller_epoch": self.controller_epoch,
            "zk_version": self.zk_version,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PartitionState:
        return cls(
            leader=int(d["leader"]),
            leader_epoch=int(d["leader_epoch"]),
            isr=tuple(int(x) for x in d["isr"]),
            controller_epoch=int(d["controller_epoch"]),
            zk_version=int(d.get("zk_version", 0)),
        )

    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...] | list[int], controller_epoch: int) -> PartitionState:
        """Kafka's ``LeaderAndIsr.newLeaderAndIsr``: a new leader epoch (zk_version bumps on write)."""
        return replace(self, leader=leader, isr=tuple(isr), leader_epoch=self.leader_epoch + 1,
                       controller_epoch=controller_epoch)


@dataclass(slots=True)
class TopicAssignment:
    topic: str
    partitions: dict[int, list[int]] = field(default_factory=dict)


def create_topic(zk: Any, topic: str, assignment: dict[int, list[int]]) -> None:
    """What `kafka-topics --create` does in ZK mode: write /brokers/topics/T; the controller's
    TopicChange watch creates the partition state znodes. ``zk`` is a kazoo client."""
    zk.ensure_path(BROKER_TOPICS)
    zk.create(topic_path(topic), topic_payload(assignment))


def set_next_controller(zk: Any, broker_id: int) -> None:
    """KIP-39: an admin pins the controller to ``broker_id`` (persistent /admin/next_controller)."""
    data = str(broker_id).encode()
    if zk.exists(NEXT_CONTROLLER):
        zk.set(NEXT_CONTROLLER, data)
    else:
        zk.create(NEXT_CONTROLLER, data, makepath=True)
