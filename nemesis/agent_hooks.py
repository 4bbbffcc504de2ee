"""Faults inside the brokers' control plane, through the agents' test hooks (docs/agent.md): the
delays the JIRA stories need that no link or process fault can express.

* ``hold_controller``: ``start`` holds the target controller's event thread (its queued events,
  e.g. BrokerChange, wait); ``stop`` releases it.
* ``hold_alter_partition``: ``start`` makes the target partition leader hold its AlterPartition
  requests; ``stop`` releases them, and the completion carries the controller's replies.
* ``delay_request``: ``start`` has the target controller build a control request (``kind``, e.g.
  StopReplica, for broker ``to`` and ``topic``/``partition``) and hold it, as if delayed in the
  network; ``stop`` delivers every held request in order, and the completion carries the replies.

``heal()`` releases every hold. Requests still held are dropped, not delivered: delivering one is
a fault of its own, so only ``stop`` does it.
"""

from __future__ import annotations

from typing import Any

from agent.client import AgentAdmin
from nemesis.base import FaultOp
from nemesis.registry import faults_of

AGENT_HOOK_FAULTS = faults_of("agent")


class AgentHookNemesis:
    fs = AGENT_HOOK_FAULTS

    def __init__(self, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self.cluster: Any = None
        self.held_controllers: set[str] = set()
        self.held_alters: set[str] = set()
        self.requests: dict[str, list[tuple[str, int]]] = {}  # controller → held (request id, target broker)

    def setup(self, cluster: Any) -> None:
        self.cluster = cluster

    def _admin(self, node: str) -> AgentAdmin:
        spec = self.cluster.inv.node(node)
        if spec.broker_id is None or spec.broker_id not in self.cluster.agent_ports:
            raise ValueError(f"{node}: not a broker with a started agent")
        return AgentAdmin(f"{spec.address}:{self.cluster.agent_ports[spec.broker_id]}", timeout=self.timeout)

    def _broker_id(self, node: str) -> int:
        broker = self.cluster.inv.node(node).broker_id
        if broker is None:
            raise ValueError(f"{node}: not a broker")
        return int(broker)

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if op.phase == "start" and not op.targets:
            raise ValueError(f"{op.f}: no targets")
        if op.f == "hold_controller":
            return self._hold(op, self.held_controllers, "hold", "release")
        if op.f == "hold_alter_partition":
            return self._hold(op, self.held_alters, "hold_alter_partition", "release_alter_partition")
        return self._delay(op)

    def _hold(self, op: FaultOp, held: set[str], hold: str, release: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if op.phase == "start":
            for t in op.targets:
                self._admin(t).call(hold)
                held.add(t)
            return {"held": sorted(held)}
        if op.targets:
            for t in op.targets:
                out[t] = self._admin(t).call(release)
                held.discard(t)
            return {"released": out}
        # Release all: an agent restarted since its hold (a bounced controller) holds nothing and
        # refuses the call; the others must still be released.
        for t in sorted(held):
            try:
                out[t] = self._admin(t).call(release)
            except OSError as e:
                out[t] = {"error": repr(e)}
            held.discard(t)
        return {"released": out}

    def _delay(self, op: FaultOp) -> dict[str, Any]:
        p = op.params
        if op.phase == "start":
            out = {}
            for t in op.targets:
                to = p.get("to")
                target = self._broker_id(to) if isinstance(to, str) else int(to)
                body = self._admin(t).call("debug_build", kind=p["kind"], target=target, topic=p.get("topic"),
                                           partition=p.get("partition"))
                self.requests.setdefault(t, []).append((body["request_id"], target))
                request = body.get("request") or {}
                out[t] = {"request_id": body["request_id"], "to": target,
                          "broker_epoch": request.get("broker_epoch"), "kind": request.get("type")}
            return {"held_requests": out}
        replies: dict[str, list[dict[str, Any]]] = {}
        for t in op.targets or sorted(self.requests):
            for rid, target in self.requests.pop(t, []):
                reply = self._admin(t).call("debug_send", request_id=rid, target=target)
                replies.setdefault(t, []).append({"request_id": rid, **reply})
        return {"delivered": replies}

    def heal(self) -> dict[str, Any]:
        released: list[str] = []
        for held, release in ((self.held_controllers, "release"), (self.held_alters, "release_alter_partition")):
            for t in sorted(held):
                try:
                    self._admin(t).call(release)
                    released.append(t)
                except Exception:  # noqa: BLE001, S110 - an agent that is down holds nothing
                    pass
            held.clear()
        dropped = sum(len(v) for v in self.requests.values())
        self.requests.clear()
        return {"hooks_released": released, "held_requests_dropped": dropped} if released or dropped else {}

    def teardown(self) -> None:
        pass
