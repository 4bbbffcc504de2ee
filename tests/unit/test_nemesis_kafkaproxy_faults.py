"""The Kafka proxy's faults as the rules they install (plain data), and their start/stop/heal against a
fake control API; their refusal on the agents and in a hunt (one line, exit 254)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from base.errors import UsageError
from nemesis.base import FaultOp
from nemesis.kafkaproxy.rules import parse_rules
from nemesis.kafkaproxy_faults import KafkaProxyNemesis, control_rule, shutdown_answer_rule
from nemesis.registry import HOLD_CAP_MS, kafka_only


class FakeClient:
    def __init__(self) -> None:
        self.rules: dict[str, dict[str, Any]] = {}
        self.released: list[str | None] = []
        self.replayed: list[str | None] = []
        self.holding: set[str] = set()  # the hold rules added (each keeps 2 frames, say)
        self.n = 0

    def add_rules(self, rules: list[dict[str, Any]]) -> list[str]:
        parse_rules(rules)  # what the proxy would refuse, refused here too
        ids = []
        for r in rules:
            self.n += 1
            self.rules[f"r{self.n}"] = r
            ids.append(f"r{self.n}")
            action = r.get("action")
            if (action.get("type") if isinstance(action, dict) else action) == "hold":
                self.holding.add(f"r{self.n}")
        return ids

    def remove_rule(self, rid: str) -> None:
        del self.rules[rid]

    def clear_rules(self) -> int:
        n = len(self.rules)
        self.rules.clear()
        return n

    def release(self, rule_id: str | None = None) -> int:
        self.released.append(rule_id)
        return 2 if rule_id is None or rule_id in self.holding else 0

    def replay(self, rule_id: str | None = None) -> list[dict[str, Any]]:
        self.replayed.append(rule_id)
        return [{"replay_of": 7, "error": "STALE_BROKER_EPOCH"}]


def nemesis(client: FakeClient | None) -> KafkaProxyNemesis:
    nem = KafkaProxyNemesis(lambda: client)  # type: ignore[arg-type,return-value]
    inv = SimpleNamespace(brokers=[SimpleNamespace(name="b1", broker_id=1), SimpleNamespace(name="b2", broker_id=2)])
    nem.setup(SimpleNamespace(inv=inv))
    return nem


def test_each_fault_is_one_rule_the_proxy_accepts() -> None:
    hold = control_rule("hold_control", [2], {"hold_ms": 90000})
    assert hold["match"] == {"api": ["LeaderAndIsr", "UpdateMetadata", "StopReplica"], "kind": "request",
                             "dst_broker": [2]}
    assert hold["action"] == {"type": "hold", "hold_ms": HOLD_CAP_MS}  # capped below the controller's 30 s timeout
    assert control_rule("hold_control", [2], {})["action"]["hold_ms"] == HOLD_CAP_MS
    assert control_rule("drop_control", [1, 2], {})["action"] == "drop"
    alter = control_rule("delay_alter_partition", [1], {"delay_ms": 500})
    assert alter["match"] == {"api": "AlterPartition", "kind": "request", "src_broker": [1]}
    assert alter["action"] == {"type": "delay", "delay_ms": 500.0}
    sr = control_rule("replay_control", [2], {"topic": "t", "partition": 0})
    assert sr == {"match": {"api": "StopReplica", "kind": "request", "dst_broker": [2], "topic": "t", "partition": 0},
                  "action": "capture", "budget": {"times": 1}, "comment": "replay_control"}
    # a ControlledShutdown comes from the target and names no partition
    cs = control_rule("replay_control", [2], {"api": "ControlledShutdown", "topic": "t"})
    assert cs["match"] == {"api": "ControlledShutdown", "kind": "request", "src_broker": [2]}
    with pytest.raises(ValueError, match="api must be one of"):
        control_rule("replay_control", [2], {"api": "Fetch"})
    parse_rules([control_rule(f, [1], {}) for f in sorted(kafka_only() - {"kafka_rules"})])  # its rules are given
    with pytest.raises(ValueError, match="not a Kafka proxy fault"):
        control_rule("kill", [1], {})


def test_start_installs_stop_removes_and_releases_what_it_held() -> None:
    c = FakeClient()
    nem = nemesis(c)
    assert nem.invoke(FaultOp("hold_control", "start", ["b2"], {})) == {"rule_ids": ["r1"]}
    assert nem.invoke(FaultOp("drop_control", "start", ["b1"], {})) == {"rule_ids": ["r2"]}
    assert nem.invoke(FaultOp("hold_control", "stop", [], {})) == {"rules_removed": ["r1"], "released": 2}
    assert c.released == ["r1"] and list(c.rules) == ["r2"]  # the drop stays until its own stop
    assert nem.invoke(FaultOp("drop_control", "stop", [], {})) == {"rules_removed": ["r2"], "released": 0}
    nem.invoke(FaultOp("delay_alter_partition", "start", ["b1", "b2"], {"delay_ms": 100}))
    assert nem.heal() == {"kafkaproxy_rules_cleared": 1, "released": 2} and not c.rules


def test_replay_controls_stop_replays_what_its_rule_captured() -> None:
    c = FakeClient()
    nem = nemesis(c)
    assert nem.invoke(FaultOp("replay_control", "start", ["b2"], {"api": "StopReplica"})) == {"rule_ids": ["r1"]}
    out = nem.invoke(FaultOp("replay_control", "stop", ["b2"], {}))
    assert out == {"rules_removed": ["r1"], "released": 0,  # a capture holds nothing
                   "replayed": [{"replay_of": 7, "error": "STALE_BROKER_EPOCH"}]}
    assert c.replayed == ["r1"] and not c.rules
    # with the shutdown answers delayed: two rules, only the capture's copies replayed
    assert nem.invoke(FaultOp("replay_control", "start", ["b2"], {"shutdown_answer_delay_ms": 1500})) == {
        "rule_ids": ["r2", "r3"]}
    assert c.rules["r3"] == shutdown_answer_rule([2], 1500)
    assert c.rules["r3"]["match"] == {"api": "ControlledShutdown", "kind": "response", "src_broker": [2]}
    nem.invoke(FaultOp("replay_control", "stop", ["b2"], {}))
    assert c.replayed == ["r1", "r2"] and not c.rules


def test_kafka_rules_installs_the_rules_given_and_its_stop_releases_what_they_held() -> None:
    c = FakeClient()
    nem = nemesis(c)
    rules = [{"match": {"api": "AlterPartition", "kind": "request", "src_broker": 1},
              "action": {"type": "hold", "hold_ms": 20000}},
             {"match": {"api": "Fetch", "kind": "request", "src_broker": 2, "dst_broker": 1}, "action": "drop"}]
    assert nem.invoke(FaultOp("kafka_rules", "start", [], {"rules": rules})) == {"rule_ids": ["r1", "r2"]}
    assert c.rules == {"r1": rules[0], "r2": rules[1]}
    # the hold goes, the cut stays
    assert nem.invoke(FaultOp("kafka_rules", "stop", [], {"rule_ids": ["r1"]})) == {"rules_removed": ["r1"],
                                                                                   "released": 2}
    assert c.released == ["r1"] and list(c.rules) == ["r2"]
    with pytest.raises(ValueError, match="no rule r1 installed by it"):
        nem.invoke(FaultOp("kafka_rules", "stop", [], {"rule_ids": ["r1"]}))
    assert nem.invoke(FaultOp("kafka_rules", "stop", [], {})) == {"rules_removed": ["r2"], "released": 0}
    assert c.released == ["r1", "r2"] and not c.rules
    with pytest.raises(ValueError, match="params.rules must be a non-empty list"):
        nem.invoke(FaultOp("kafka_rules", "start", [], {"rules": []}))


def test_bad_targets_and_no_proxy_are_errors_and_a_heal_before_the_proxy_undoes_nothing() -> None:
    nem = nemesis(FakeClient())
    with pytest.raises(ValueError, match="targets must be brokers, not zk1"):
        nem.invoke(FaultOp("hold_control", "start", ["zk1"], {}))
    idle = nemesis(None)
    assert idle.heal() == {"kafkaproxy_rules_cleared": 0}  # the run's setup heal: no proxy yet
    with pytest.raises(ValueError, match="no wire proxy"):
        idle.invoke(FaultOp("drop_control", "start", ["b1"], {}))


def _args(**kw: Any) -> Any:
    from harness.cli import build_parser

    argv = ["run", "--time-limit", "10"]
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}"] + ([] if v is True else [str(v)])
    return build_parser().parse_args(argv)


@pytest.mark.parametrize("flags, message", [
    ({"faults": "hold_control,kill"}, "--faults: hold_control act on Kafka's wire protocol"),
    ({"kafkaproxy": True}, "--kafkaproxy: the Kafka proxy sits on real brokers"),
])
def test_on_the_agents_they_are_refused_in_one_line(flags: dict[str, Any], message: str) -> None:
    from base.inventory import load_inventory
    from harness.commands.run import spec_from_args

    with pytest.raises(UsageError, match=message) as e:
        spec_from_args(_args(**flags), load_inventory(None))
    assert "\n" not in str(e.value)


def test_a_hunt_refuses_them_in_one_line(tmp_path: Any) -> None:
    from harness.cli import build_parser
    from harness.commands.hunt import judge

    args = build_parser().parse_args(["hunt", "--faults", "isolate,drop_control", "--out", str(tmp_path / "m.toml")])
    with pytest.raises(UsageError, match="--faults: drop_control act on real Kafka brokers") as e:
        judge(args)
    assert "\n" not in str(e.value)


def test_a_kafka_run_turns_the_proxy_on_for_its_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    from base.inventory import load_inventory
    from harness.commands import run

    monkeypatch.setattr(run, "fetch", lambda kafka, flag: None)  # no download: the flags alone
    inv = load_inventory(None)
    assert run.spec_from_args(_args(brokers="kafka:3.9.1", faults="hold_control,partition,kill"), inv).kafkaproxy
    assert run.spec_from_args(_args(brokers="kafka:3.9.1", kafkaproxy=True), inv).kafkaproxy
    assert not run.spec_from_args(_args(brokers="kafka:3.9.1", faults="kill"), inv).kafkaproxy
