"""Kafka clients of the broker agents, speaking the agents' wire protocol (``agent.client``).

* ``ProducerClient``: ``append`` {topic, partition, value, acks} → ``ok`` with the offset and the
  leader, ``fail`` when the broker answered that it did not append, ``info`` when the outcome is
  unknown (no reply, or a timeout after the leader appended).
* ``AdminClient``: ``create_topic`` {topic, replicas: {partition: [broker, ...]}} writes the
  assignment to ZooKeeper as Kafka's admin tools do in ZooKeeper mode; ``controlled_shutdown``
  {broker, broker_epoch?} sends a broker's ControlledShutdown request to the controller through
  that broker (``broker_epoch`` set: a request carrying that epoch, e.g. a retry from an older
  incarnation).

The run context gives each client what it dials: ``ctx.agent_address(broker)`` and ``ctx.zk()``.
"""

from __future__ import annotations

from typing import Any

from agent import znodes
from agent.client import AgentAdmin, AppendError, AppendUnknown, KafkaClient
from workloads.base import FAIL, INFO, OK, Op


class ProducerClient:
    def __init__(self, timeout: float = 3.0, deadline_s: float = 5.0) -> None:
        self.timeout = timeout
        self.deadline_s = deadline_s
        self._kafka: KafkaClient | None = None

    def open(self, ctx: Any, process: int | str) -> ProducerClient:
        client = ProducerClient(self.timeout, self.deadline_s)
        client._kafka = KafkaClient({b: ctx.agent_address(b) for b in ctx.brokers}, timeout=self.timeout)
        return client

    def invoke(self, op: Op) -> Op:
        assert self._kafka is not None, "open() first"
        if op.f != "append":
            raise ValueError(f"producer: no operation {op.f!r}")
        return append_op(self._kafka, op, self.deadline_s)

    def close(self) -> None:
        self._kafka = None


class AdminClient:
    def __init__(self, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._ctx: Any = None

    def open(self, ctx: Any, process: int | str) -> AdminClient:
        client = AdminClient(self.timeout)
        client._ctx = ctx
        return client

    def invoke(self, op: Op) -> Op:
        ctx, v = self._ctx, op.value
        if op.f == "create_topic":
            replicas = {int(p): [int(b) for b in bs] for p, bs in v["replicas"].items()}
            znodes.create_topic(ctx.zk(), v["topic"], replicas)
            return op.complete(OK)
        if op.f == "controlled_shutdown":
            fields = {} if v.get("broker_epoch") is None else {"broker_epoch": int(v["broker_epoch"])}
            admin = AgentAdmin(ctx.agent_address(int(v["broker"])), timeout=self.timeout)
            try:
                reply = admin.call("controlled_shutdown", **fields)
            except OSError as e:
                return op.complete(INFO, error=f"{type(e).__name__}: {e}")
            code = int(reply.get("error_code", -1))
            return op.complete(OK if code == 0 else FAIL, error_code=code,
                               remaining_partitions=reply.get("remaining_partitions"))
        raise ValueError(f"admin: no operation {op.f!r}")

    def close(self) -> None:
        self._ctx = None


def append_op(kafka: KafkaClient, op: Op, deadline_s: float) -> Op:
    """``op`` (value: topic, partition, value, acks) sent through ``kafka``, completed Jepsen style:
    ok with its offset and leader, fail on a definite error, info when the outcome is unknown."""
    v = op.value
    try:
        offset = kafka.append(v["topic"], int(v["partition"]), v["value"], v.get("acks", "all"), deadline_s=deadline_s)
    except AppendError as e:
        return op.complete(FAIL, error_code=e.code, error=str(e))
    except AppendUnknown as e:
        return op.complete(INFO, error=str(e))
    return op.complete(OK, offset=offset, leader=kafka.leader(v["topic"], int(v["partition"])))
