"""Nemesis adapter over the Kafka wire proxy's control API (``nemesis.kafkaproxy.client``): the
control-plane faults of real Kafka brokers (docs/nemesis.md), each one rule of the proxy's
(docs/kafkaproxy.md) installed by ``start`` and removed by ``stop``.

* ``hold_control``: hold the controller's LeaderAndIsr/UpdateMetadata/StopReplica requests to the
  target brokers; ``stop`` removes the rule and releases what it holds (late, behind whatever the
  connection carries by then). Each held request is released by itself after ``hold_ms`` (at most
  ``HOLD_CAP_MS``, below the controller's 30 s socket timeout, past which it would reconnect and
  resend, and the held copy would be discarded with its connection).
* ``drop_control``: drop those requests (the controller times each out and resends it).
* ``replay_control``: capture (forward, and keep a copy of) the first request of ``api`` (default
  StopReplica) the controller sends to the target brokers, or, for ControlledShutdown, that they
  send to the controller; ``stop`` removes the rule and replays the copy on a new connection the
  proxy opens to the broker it went to (``/replay``): the request arrives again, late, which a
  held request cannot do on a real broker without stalling its sender (the controller's request
  thread waits for the held answer and reconnects after 30 s; a broker's controlled shutdown
  retries with long timeouts). With ``shutdown_answer_delay_ms`` it also delays the targets'
  ControlledShutdown answers: a controller queues the StopReplicas of a controlled shutdown and
  answers at once, and a broker that has its answer stops serving before its request thread
  delivers them all (seen with 2.1.1: the StopReplica for the followed partition never arrived).
* ``delay_alter_partition``: delay the target brokers' AlterPartition (AlterIsr before 3.2) requests
  to the controller by ``delay_ms``.
* ``kafka_rules``: the proxy rules in ``params['rules']`` as given (their own ``match``; targets are
  not used), for a story whose faults the named ones do not cover (KAFKA-14139 holds its leader's
  AlterPartition and drops a restarted follower's fetches); ``stop`` removes them and releases what
  they hold, as ``hold_control``'s does: those named in ``params['rule_ids']`` only, when given (a
  story releases its hold while its cut stays).

Targets are brokers (node names → broker ids, the proxy's ``dst_broker``/``src_broker``). ``heal()``
clears every rule and releases every held frame. The proxy is the run's (``Cluster.kafkaproxy``),
started with the brokers, after the nemeses' setup: it is looked up when an op runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nemesis.base import FaultOp
from nemesis.registry import ALTER_DELAY_MS, HOLD_CAP_MS, KAFKA_CONTROL_APIS, REPLAY_APIS, faults_of
from nemesis.wire_faults import WireRulesNemesis
from nemesis.wireproxy.client import WireProxyClient


def shutdown_answer_rule(brokers: list[int], delay_ms: float) -> dict[str, Any]:
    """``replay_control``'s delay of the target brokers' ControlledShutdown answers (pure)."""
    return {"match": {"api": "ControlledShutdown", "kind": "response", "src_broker": brokers},
            "action": {"type": "delay", "delay_ms": float(delay_ms)}, "comment": "replay_control: shutdown answer"}


def control_rule(f: str, brokers: list[int], params: dict[str, Any]) -> dict[str, Any]:
    """The proxy rule fault ``f`` installs for target ``brokers`` (pure: the unit tests read it)."""
    if f == "delay_alter_partition":
        delay = float(params.get("delay_ms", ALTER_DELAY_MS))
        return {"match": {"api": "AlterPartition", "kind": "request", "src_broker": brokers},
                "action": {"type": "delay", "delay_ms": delay}, "comment": f}
    if f == "replay_control":
        api = params.get("api", "StopReplica")
        if api not in REPLAY_APIS:
            raise ValueError(f"{f}: api must be one of {', '.join(REPLAY_APIS)}, got {api!r}")
        # a controller's request goes TO the targets; a ControlledShutdown comes FROM them
        m: dict[str, Any] = {"api": api, "kind": "request",
                             "src_broker" if api == "ControlledShutdown" else "dst_broker": brokers}
        if api != "ControlledShutdown":  # it names no partition
            m.update({k: params[k] for k in ("topic", "partition") if params.get(k) is not None})
        return {"match": m, "action": "capture", "budget": {"times": 1}, "comment": f}
    match = {"api": list(KAFKA_CONTROL_APIS), "kind": "request", "dst_broker": brokers}
    if f == "drop_control":
        return {"match": match, "action": "drop", "comment": f}
    if f == "hold_control":
        hold = min(float(params.get("hold_ms", HOLD_CAP_MS)), HOLD_CAP_MS)
        return {"match": match, "action": {"type": "hold", "hold_ms": hold}, "comment": f}
    raise ValueError(f"{f}: not a Kafka proxy fault")


class KafkaProxyNemesis(WireRulesNemesis):
    fs = faults_of("kafkaproxy")
    cleared_key = "kafkaproxy_rules_cleared"

    def __init__(self, client: WireProxyClient | Callable[[], WireProxyClient | None]) -> None:
        super().__init__(client)
        self.broker_of: dict[str, int] = {}
        self.capturing: list[str] = []  # replay_control's capture rules (its delay rule captures nothing)

    def setup(self, cluster: Any) -> None:  # harness.cluster.Cluster: its inventory's brokers
        self.broker_of = {n.name: n.broker_id for n in cluster.inv.brokers}

    def _brokers(self, op: FaultOp) -> list[int]:
        unknown = [t for t in op.targets if t not in self.broker_of]
        if unknown or not op.targets:
            raise ValueError(f"{op.f}: targets must be brokers, not {', '.join(unknown) or '(none)'}")
        return sorted(self.broker_of[t] for t in op.targets)

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if op.phase == "start":
            if op.f == "kafka_rules":
                rules = op.params.get("rules")
                if not isinstance(rules, list) or not rules:
                    raise ValueError("kafka_rules: params.rules must be a non-empty list of rule tables")
                return {"rule_ids": self.install(op.f, rules)}
            brokers = self._brokers(op)
            rules = [control_rule(op.f, brokers, op.params)]
            if op.f == "replay_control" and op.params.get("shutdown_answer_delay_ms"):
                rules.append(shutdown_answer_rule(brokers, op.params["shutdown_answer_delay_ms"]))
            ids = self.install(op.f, rules)
            if op.f == "replay_control":
                self.capturing.append(ids[0])
            return {"rule_ids": ids}
        removed = self._remove_some(op) if op.f == "kafka_rules" and op.params.get("rule_ids") else self.remove(op.f)
        out = self.stopped(op.f, removed)
        if op.f == "replay_control":  # the copies outlive their rule: replay each capture rule's now
            client = self.need_client(op.f)
            captures, self.capturing = [r for r in removed if r in self.capturing], []
            out["replayed"] = [r for rid in captures for r in client.replay(rid)]
        return out

    def _remove_some(self, op: FaultOp) -> list[str]:
        """Remove the rules of ``op.f`` named in ``rule_ids`` (the others stay installed)."""
        wanted = op.params["rule_ids"]
        if not isinstance(wanted, list) or not all(isinstance(r, str) for r in wanted):
            raise ValueError(f"{op.f}: params.rule_ids must be a list of rule ids")
        mine = self.installed.get(op.f, [])
        if unknown := [r for r in wanted if r not in mine]:
            raise ValueError(f"{op.f}: no rule {', '.join(unknown)} installed by it")
        client = self.need_client(op.f)
        for rid in wanted:
            client.remove_rule(rid)
        self.installed[op.f] = [r for r in mine if r not in wanted]
        return list(wanted)

