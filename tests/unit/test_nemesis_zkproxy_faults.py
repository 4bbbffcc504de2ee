from __future__ import annotations

import pytest

from nemesis.base import FaultOp
from nemesis.zkproxy_faults import ZkProxyNemesis


class FakeClient:
    def __init__(self):
        self.rules: dict[str, dict] = {}
        self.n = 0

    def add_rules(self, rules):
        ids = []
        for r in rules:
            self.n += 1
            self.rules[f"r{self.n}"] = r
            ids.append(f"r{self.n}")
        return ids

    def remove_rule(self, rid):
        del self.rules[rid]

    def clear_rules(self):
        n = len(self.rules)
        self.rules.clear()
        return n

    def release(self, rid=None):
        return 0  # nothing held: the proxy's hold is tested against a real proxy


def test_rules_installed_removed_and_healed():
    c = FakeClient()
    nem = ZkProxyNemesis(c)
    assert nem.invoke(FaultOp("zk_rules", "start", [], {"rules": [{"match": {}, "action": "drop"}]})) == {
        "rule_ids": ["r1"]}
    assert nem.invoke(FaultOp("zk_rules", "stop", [], {})) == {"rules_removed": ["r1"], "released": 0}
    nem.invoke(FaultOp("zk_rules", "start", [], {"rules": [{"a": 1}, {"b": 2}]}))
    assert nem.heal() == {"zkproxy_rules_cleared": 2, "released": 0} and not c.rules
    with pytest.raises(ValueError, match="non-empty"):
        nem.invoke(FaultOp("zk_rules", "start", [], {}))
