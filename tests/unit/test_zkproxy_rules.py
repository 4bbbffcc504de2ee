"""nemesis.zkproxy.rules: validation messages, file loading, budgets and matching."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nemesis.zkproxy.rules import FrameInfo, RuleError, RuleSet, load_rules_file, parse_rule, parse_rules


def frame(**kw) -> FrameInfo:
    base = {"conn": 1, "upstream": 0, "upstream_addr": "127.0.0.1:2181", "dir": "c2s", "kind": "request"}
    base.update(kw)
    return FrameInfo(**base)


def test_toml_file_loads(tmp_path: Path) -> None:
    p = tmp_path / "r.toml"
    p.write_text(
        """
[[rules]]
id = "orphan"
match = { dir = "s2c", kind = "connect_resp" }
action = { type = "drop_then_blackhole", mode = "s2c" }
budget = { times = 1 }

[[rules]]
id = "slow-multi"
match = { dir = "c2s", op = ["multi", 1], path_prefix = "/brokers/ids", ephemeral = true }
action = { type = "delay", delay_ms = 250 }
"""
    )
    rules = load_rules_file(p)
    assert [r.id for r in rules] == ["orphan", "slow-multi"]
    assert rules[0].action.mode == "s2c" and rules[0].budget.times == 1
    assert rules[1].match.op == frozenset({14, 1}) and rules[1].action.delay_ms == 250


def test_json_file_loads_bare_list(tmp_path: Path) -> None:
    p = tmp_path / "r.json"
    p.write_text(json.dumps([{"action": "forward"}, {"action": {"type": "close", "when": "after"}}]))
    rules = load_rules_file(p)
    assert [r.id for r in rules] == ["r0", "r1"] and rules[1].action.when == "after"


@pytest.mark.parametrize(
    ("rule", "needle"),
    [
        ({"match": {"kind": "reply"}}, "key 'action': required"),
        ({"action": "explode"}, "key 'action.type': 'explode' is not one of"),
        ({"action": "forward", "match": {"kind": "replies"}}, "key 'match.kind': 'replies' is not one of"),
        ({"action": "forward", "match": {"colour": 1}}, "key 'match.colour': unknown key"),
        ({"action": "forward", "match": {"op": "mult"}}, "key 'match.op': unknown opcode 'mult'"),
        ({"action": "forward", "match": {"path_prefix": "brokers"}}, "key 'match.path_prefix'"),
        ({"action": {"type": "delay"}}, "key 'action.delay_ms': required"),
        ({"action": {"type": "delay", "delay_ms": -1}}, "key 'action.delay_ms': must be >= 0"),
        ({"action": {"type": "drop_then_blackhole", "mode": "up"}}, "key 'action.mode'"),
        ({"action": {"type": "forward", "delay_ms": 5}}, "key 'action.delay_ms': unknown key"),
        ({"action": "drop"}, "set unsafe = true"),
        ({"action": "forward", "budget": {"probability": 1.5}}, "key 'budget.probability': must be in [0, 1]"),
        ({"action": "forward", "budget": {"times": "once"}}, "key 'budget.times': expected an integer"),
        ({"action": "forward", "budget": {"from_ms": 5, "until_ms": 1}}, "key 'budget.until_ms'"),
        ({"action": "forward", "id": "a/b"}, "key 'id'"),
        ({"action": "forward", "extra": 1}, "key 'extra': unknown key"),
    ],
)
def test_validation_errors_are_one_line_with_source_index_key(rule: dict, needle: str) -> None:
    with pytest.raises(RuleError) as ei:
        parse_rules([{"action": "forward"}, rule], source="rules.toml")
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("rules.toml: rule 1") and needle in msg, msg


def test_file_level_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(RuleError, match=r"bad\.json:1: invalid JSON"):
        load_rules_file(bad)
    with pytest.raises(RuleError, match="cannot read"):
        load_rules_file(tmp_path / "missing.toml")
    with pytest.raises(RuleError, match="duplicate id"):
        parse_rules([{"id": "a", "action": "forward"}, {"id": "a", "action": "forward"}])
    with pytest.raises(RuleError, match="unknown top-level key 'rule'"):
        parse_rules({"rule": []})


def test_unsafe_drop_allowed_with_flag() -> None:
    assert parse_rule({"action": "drop", "unsafe": True}).action.type == "drop"


def test_match_fields() -> None:
    r = parse_rule({"action": "forward", "match": {
        "dir": "c2s", "kind": ["request"], "op": "multi", "path_prefix": ["/brokers/ids/"], "ephemeral": True,
        "session_id": "0x10", "upstream": [1, "127.0.0.1:2181"], "conn": 3}})
    ok = frame(conn=3, op=14, paths=["/x", "/brokers/ids/1"], ephemeral=True, session_id=16)
    assert r.match.matches(ok)
    for change in ({"dir": "s2c"}, {"op": 1}, {"paths": ["/x"]}, {"ephemeral": False}, {"session_id": 17},
                   {"conn": 4}, {"upstream": 2, "upstream_addr": "h:1"}):
        f = frame(**{**{"conn": 3, "op": 14, "paths": ["/brokers/ids/1"], "ephemeral": True, "session_id": 16},
                     **change})
        assert not r.match.matches(f), change


def test_skip_then_times() -> None:
    rs = RuleSet(seed=1, start_mono=0.0)
    rs.add(parse_rules([{"id": "a", "action": "close", "budget": {"skip": 2, "times": 2}}]))
    fired = [rs.decide(frame(), 1.0).rule is not None for _ in range(6)]
    assert fired == [False, False, True, True, False, False]
    assert rs.rules[0].matched == 6 and rs.rules[0].applied == 2


def test_first_firing_rule_wins_and_exhausted_rules_fall_through() -> None:
    rs = RuleSet(seed=1, start_mono=0.0)
    rs.add(parse_rules([{"id": "once", "action": "close", "budget": {"times": 1}},
                        {"id": "always", "action": {"type": "delay", "delay_ms": 1}}]))
    assert [rs.decide(frame(), 1.0).rule.id for _ in range(3)] == ["once", "always", "always"]


def test_probability_is_seeded_and_reproducible() -> None:
    def draws(seed: int) -> list[bool]:
        rs = RuleSet(seed=seed, start_mono=0.0)
        rs.add(parse_rules([{"id": "p", "action": "close", "budget": {"probability": 0.5}}]))
        return [rs.decide(frame(), 1.0).rule is not None for _ in range(64)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert 10 < sum(draws(7)) < 54


def test_window_relative_to_start_and_arm() -> None:
    rs = RuleSet(seed=0, start_mono=100.0)
    rs.add(parse_rules([
        {"id": "w", "action": "close", "budget": {"from_ms": 1000, "until_ms": 2000}},
        {"id": "armed", "action": "forward", "budget": {"arm": "p1", "until_ms": 500}},
    ]))
    assert rs.decide(frame(), 100.5).rule is None
    assert rs.decide(frame(), 101.5).rule.id == "w"
    assert rs.decide(frame(), 102.5).rule is None  # window over; "armed" not armed yet
    rs.arm("p1", 103.0)
    assert rs.decide(frame(), 103.2).rule.id == "armed"
    assert rs.decide(frame(), 103.6).rule is None
    rs.arm("p1", 104.0)  # re-arming restarts the window
    assert rs.decide(frame(), 104.1).rule.id == "armed"
    assert rs.disarm("p1") and rs.decide(frame(), 104.2).rule is None


def test_ruleset_rejects_duplicate_ids_and_removes() -> None:
    rs = RuleSet(seed=0, start_mono=0.0)
    rs.add(parse_rules([{"id": "a", "action": "forward"}]))
    with pytest.raises(RuleError, match="already exists"):
        rs.add(parse_rules([{"id": "a", "action": "forward"}]))
    assert rs.remove("a") and not rs.remove("a")


def test_connect_result_match_key() -> None:
    r = parse_rule({"id": "lost", "match": {"kind": "connect_resp", "connect_result": ["expired"]},
                    "action": {"type": "drop_then_blackhole"}})
    assert r.match.matches(frame(dir="s2c", kind="connect_resp", connect_result="expired"))
    assert not r.match.matches(frame(dir="s2c", kind="connect_resp", connect_result="new"))
    assert not r.match.matches(frame(dir="s2c", kind="reply"))  # not a ConnectResponse: no result
    with pytest.raises(RuleError, match=r"key 'match.connect_result': 'gone' is not one of new, reattached, expired"):
        parse_rule({"id": "x", "match": {"connect_result": "gone"}, "action": "forward"})


def test_connect_result_of_a_connect_response() -> None:
    from nemesis.zkproxy.inspector import connect_result
    from zkwire import ConnectResponse

    assert connect_result(0, ConnectResponse(0, 4000, 0x101)) == "new"
    assert connect_result(None, ConnectResponse(0, 4000, 0x101)) == "new"
    assert connect_result(0x101, ConnectResponse(0, 4000, 0x101)) == "reattached"
    assert connect_result(0x101, ConnectResponse(0, 0, 0)) == "expired"  # session id 0 / timeOut 0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), -1])
def test_non_finite_or_negative_delays_are_rejected(bad: float) -> None:
    with pytest.raises(RuleError, match=r"key 'action.delay_ms': (expected a finite number|must be >= 0)"):
        parse_rule({"id": "x", "action": {"type": "delay", "delay_ms": bad}})
    with pytest.raises(RuleError, match=r"key 'budget.until_ms'"):
        parse_rule({"id": "x", "action": "forward", "budget": {"until_ms": bad}})
