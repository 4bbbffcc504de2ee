"""Nemesis adapter over the ZooKeeper wire proxy's control API (``nemesis.zkproxy.client``).

Fault ``zk_rules``: ``start`` installs ``params['rules']`` (rule dicts, see docs/zkproxy.md) and
remembers their ids; ``stop`` removes them (all of them when no targets) and releases what their
``hold`` kept (a watch notification: docs/zkproxy.md); ``heal()`` clears every rule. A run adds it when the proxy is in the agent→ZooKeeper path (``harness run --zkproxy``).
Targets are ZooKeeper nodes: a rule without its own ``match.upstream`` applies only to connections
to those servers' listeners.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from nemesis.base import FaultOp
from nemesis.registry import faults_of
from nemesis.wire_faults import WireRulesNemesis

if TYPE_CHECKING:
    from nemesis.zkproxy.client import ZkProxyClient


# KAFKA-14845's fault: lose the next ConnectResponse that creates a session, then black-hole that
# connection (the request pipelined behind it runs under a session the client never learns). Only a
# new session's reply: a reconnecting client's "your session expired" reply must pass (a real Kafka
# broker's every ZooKeeper connection goes through the wire proxy, not only the pipelining one).
LOST_CONNECT_RULE: dict[str, Any] = {
    "match": {"dir": "s2c", "kind": "connect_resp", "connect_result": "new"},
    "action": {"type": "drop_then_blackhole", "mode": "s2c"},
    "budget": {"times": 1},
}


def lost_connect_rule(rule_id: str, comment: str) -> dict[str, Any]:
    return {"id": rule_id, "comment": comment, **copy.deepcopy(LOST_CONNECT_RULE)}


class ZkProxyNemesis(WireRulesNemesis):
    fs = faults_of("zkproxy")
    cleared_key = "zkproxy_rules_cleared"

    def __init__(self, client: ZkProxyClient) -> None:
        super().__init__(client)
        self.listener_of: dict[str, int] = {}  # ZooKeeper node name → proxy listener index

    def setup(self, cluster: Any) -> None:  # harness.cluster.Cluster, a layer above: its ``ensemble``
        if cluster.ensemble is not None:
            self.listener_of = {m.name: i for i, m in enumerate(cluster.ensemble.members)}

    def _scoped(self, rules: list[dict[str, Any]], targets: list[str]) -> list[dict[str, Any]]:
        upstreams = sorted(self.listener_of[t] for t in targets if t in self.listener_of)
        if not targets or len(upstreams) == len(self.listener_of):
            return rules
        return [r if "upstream" in r.get("match", {}) else
                {**r, "match": {**r.get("match", {}), "upstream": upstreams}} for r in rules]

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if op.phase == "start":
            rules = op.params.get("rules")
            if not isinstance(rules, list) or not rules:
                raise ValueError("zk_rules: params.rules must be a non-empty list of rule tables")
            return {"rule_ids": self.install(op.f, self._scoped(rules, op.targets))}
        return self.stopped(op.f, self.remove())
