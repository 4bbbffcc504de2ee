"""Kafka proxy rules on plain data: Kafka's match keys, the shared budget and actions (hold,
duplicate), and bad input as one line naming the key (exit 254 from the process entry)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from base.errors import EXIT_BAD_INPUT
from nemesis.kafkaproxy.rules import KafkaFrameInfo, parse_rule, parse_rules
from nemesis.wireproxy.rules import RuleError, RuleSet
from nemesis.zkproxy.rules import parse_rule as zk_parse_rule

ROOT = Path(__file__).resolve().parents[2]


def info(**kw: object) -> KafkaFrameInfo:
    base: dict = {"conn": 1, "upstream": 0, "upstream_addr": "127.0.0.1:9092", "dir": "c2s", "kind": "request"}
    return KafkaFrameInfo(**(base | kw))


LAI = info(api_key=4, api_version=7, src_broker=1, dst_broker=2, controller_id=1, partitions=[("t", 0), ("t", 1)])


@pytest.mark.parametrize("match,hit", [
    ({}, True),
    ({"api": "LeaderAndIsr"}, True), ({"api": 4}, True), ({"api": ["StopReplica", "UpdateMetadata"]}, False),
    ({"api": "leader_and_isr", "version": [6, 7]}, True), ({"version": 5}, False),
    ({"src_broker": 1, "dst_broker": 2, "controller_id": 1}, True), ({"dst_broker": 1}, False),
    ({"topic": "t", "partition": 1}, True), ({"topic": "t", "partition": 2}, False), ({"topic": "u"}, False),
    ({"dir": "s2c"}, False), ({"kind": "request"}, True), ({"upstream": "127.0.0.1:9092"}, True),
    ({"upstream": 1}, False), ({"conn": [1, 2]}, True), ({"error": "STALE_BROKER_EPOCH"}, False),
])
def test_match_keys(match: dict, hit: bool) -> None:
    assert parse_rule({"match": match, "action": "drop"}).match.matches(LAI) is hit


def test_error_matches_any_error_of_a_response() -> None:
    resp = info(dir="s2c", kind="response", api_key=4, api_version=7, errors=["STALE_BROKER_EPOCH"])
    assert parse_rule({"match": {"error": "stale_broker_epoch"}, "action": "drop"}).match.matches(resp)
    assert parse_rule({"match": {"error": 77}, "action": "drop"}).match.matches(resp)
    assert not parse_rule({"match": {"error": "STALE_CONTROLLER_EPOCH"}, "action": "drop"}).match.matches(resp)


@pytest.mark.parametrize("spec,key,text", [
    ({"match": {"api": "LeaderAndIsrr"}, "action": "drop"}, "match.api", "unknown Kafka API 'LeaderAndIsrr'"),
    ({"match": {"api": 999}, "action": "drop"}, "match.api", "unknown Kafka API 999"),
    ({"match": {"api": "LeaderAndIsr", "version": 8}, "action": "drop"}, "match.version",
     "the codec has no LeaderAndIsr v8 (it has v0-v7)"),
    ({"match": {"error": "NO_SUCH_ERROR"}, "action": "drop"}, "match.error", "unknown Kafka error"),
    ({"match": {"error": 4242}, "action": "drop"}, "match.error", "unknown Kafka error code 4242"),
    ({"match": {"partition": -1}, "action": "drop"}, "match.partition", "must be >= 0"),
    ({"match": {"topic": ""}, "action": "drop"}, "match.topic", "expected topic name"),
    ({"match": {"session_id": 1}, "action": "drop"}, "match.session_id", "unknown key"),
    ({"action": {"type": "hold", "hold_ms": -1}}, "action.hold_ms", "must be >= 0"),
    ({"action": {"type": "duplicate", "copies": 0}}, "action.copies", "must be >= 1"),
    ({"action": {"type": "duplicate", "copies": 99}}, "action.copies", "must be <= 16"),
    ({"action": {"type": "hold", "delay_ms": 1}}, "action.delay_ms", "unknown key"),
])
def test_bad_rules_are_one_line_naming_the_key(spec: dict, key: str, text: str) -> None:
    with pytest.raises(RuleError) as e:
        parse_rule(spec, source="rules.json", index=3)
    msg = str(e.value)
    assert "\n" not in msg and f"key '{key}'" in msg and text in msg and msg.startswith("rules.json: rule 3")


def test_hold_and_duplicate_parse_and_zookeeper_does_not_offer_them() -> None:
    h = parse_rule({"match": {"api": "StopReplica"}, "action": {"type": "hold", "hold_ms": 250}})
    assert (h.action.type, h.action.hold_ms) == ("hold", 250.0)
    assert parse_rule({"action": "hold"}).action.hold_ms is None
    assert parse_rule({"action": {"type": "duplicate", "copies": 2}}).action.copies == 2
    assert parse_rule({"action": "drop"}).action.type == "drop"  # a Kafka drop needs no unsafe: no xid stream to break
    for t in ("hold", "duplicate"):
        with pytest.raises(RuleError, match="key 'action.type'"):
            zk_parse_rule({"action": t})


def test_capture_parses_takes_no_parameters_and_zookeeper_does_not_offer_it() -> None:
    assert parse_rule({"match": {"api": "ControlledShutdown", "src_broker": 2}, "action": "capture"}).action.type == \
        "capture"
    with pytest.raises(RuleError, match="key 'action.copies'"):
        parse_rule({"action": {"type": "capture", "copies": 2}})
    with pytest.raises(RuleError, match="key 'action.type'"):
        zk_parse_rule({"action": "capture"})  # a ZooKeeper frame cannot be replayed outside its session


def test_the_shared_budget_applies() -> None:
    rs = RuleSet(seed=1, start_mono=0.0)
    rs.add(parse_rules([{"id": "h", "match": {"api": "LeaderAndIsr"}, "action": "hold",
                         "budget": {"skip": 1, "times": 2}}]))
    fired = [rs.decide(LAI, 1.0).rule is not None for _ in range(5)]
    assert fired == [False, True, True, False, False]
    rs.add(parse_rules([{"id": "armed", "action": "drop", "budget": {"arm": "x"}}]))
    assert rs.decide(LAI, 1.0).rule is None
    rs.arm("x", 1.0)
    assert rs.decide(LAI, 1.0).rule.id == "armed"


def run_main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nemesis.kafkaproxy", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_the_process_refuses_bad_rules_with_one_line_and_254(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [{"id": "x", "match": {"api": "LeaderAndIsrr"}, "action": "drop"}]}))
    p = run_main("--listen", "127.0.0.1:0=127.0.0.1:1", "--events", str(tmp_path / "e.jsonl"), "--rules", str(rules))
    assert p.returncode == EXIT_BAD_INPUT
    assert p.stderr.count("\n") == 1 and "key 'match.api'" in p.stderr and "Traceback" not in p.stderr
    rules.write_text(json.dumps([{"match": {"api": "Fetch", "version": 18}, "action": "drop"}]))
    p = run_main("--listen", "127.0.0.1:0=127.0.0.1:1", "--events", str(tmp_path / "e.jsonl"), "--rules", str(rules))
    assert p.returncode == EXIT_BAD_INPUT and p.stderr.count("\n") == 1 and "the codec has no Fetch v18" in p.stderr
    p = run_main("--listen", "127.0.0.1:0=127.0.0.1:1", "--events", str(tmp_path / "e.jsonl"), "--broker-ids", "1,x")
    assert p.returncode == EXIT_BAD_INPUT and p.stderr.count("\n") == 1 and "--broker-ids" in p.stderr
