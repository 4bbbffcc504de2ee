"""`harness repro` command line: listing and bad input (no cluster needed)."""

from __future__ import annotations

import pytest

from harness.cli import main
from scenarios import scenarios

pytestmark = pytest.mark.integration


def test_list_names_every_scenario(capsys):
    assert main(["repro", "--list"]) == 0
    out = capsys.readouterr().out
    missing = [sid for sid in scenarios() if sid not in out]
    assert not missing, f"harness repro --list does not name {', '.join(missing)}"


@pytest.mark.parametrize("argv", [["repro"], ["repro", "KAFKA-0"], ["repro", "KAFKA-14845", "--runs", "0"],
                                  ["repro", "KAFKA-14845", "--bogus"]])
def test_bad_input_is_254(argv, capsys):
    with pytest.raises(SystemExit) as e:
        rc = main(argv)
        raise SystemExit(rc)
    assert e.value.code == 254


@pytest.mark.parametrize(("argv", "flag"), [
    (["--kafka", "4.0.0"], "--kafka: Kafka 4.0.0: 4.0 and later have no ZooKeeper mode"),
    (["--kafka", "3.9"], "--kafka: Kafka version '3.9'"),
    (["--kafka", "3.9.1", "--zk-hosts", "0"], "repro: error: argument --zk-hosts: expected an integer in [1,"),
    (["--kafka", "3.9.1", "--zk-hosts", "4"], "--zk-hosts: the inventory has 3 ZooKeeper server(s)"),
    (["--kafka", "3.9.1", "--fixed"], "--fixed: no Kafka release"),
    (["--zk-socket", "netty"], "--zk-socket: only with --kafka"),
], ids=["kraft-only", "not-a-version", "zero-hosts", "more-hosts-than-servers", "fixed", "socket-without-kafka"])
def test_bad_kafka_flags_are_one_line_naming_the_flag(argv, flag, capsys):
    try:
        code = main(["repro", "KAFKA-14845", *argv])
    except SystemExit as e:  # a flag's bounds are argparse's: the same one line, exit 254
        code = e.code
    assert code == 254
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith((f"harness: {flag}", f"harness {flag}")), err


def test_a_scenario_told_through_agent_hooks_refuses_kafka(capsys, monkeypatch):
    # every story has a real-broker form now (the last, KAFKA-7235-lost-write, since issue 42): the
    # refusal is for the next story that has none, so one is made so here
    monkeypatch.setattr(scenarios()["KAFKA-7235-lost-write"], "not_on_kafka", "told through agent hooks only")
    assert main(["repro", "KAFKA-7235-lost-write", "--kafka", "3.9.1"]) == 254
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("--kafka: KAFKA-7235-lost-write cannot run on a real Kafka broker: told "
                                      "through agent hooks only") in err


@pytest.mark.parametrize(("argv", "flag"), [
    (["--compare", "agents:3.9.1"], "--compare: expected kafka:VERSION"),
    (["--compare", "kafka:"], "--compare: expected kafka:VERSION"),
    (["--compare", "kafka:3.9.1", "--kafka", "3.9.1"], "--compare: give the version once"),
    (["--compare", "kafka:3.9.1", "--runs", "2"], "--runs: --compare runs one pair"),
    (["--compare", "kafka:4.1.0"], "--kafka: Kafka 4.1.0: 4.0 and later have no ZooKeeper mode"),
], ids=["not-kafka", "no-version", "twice", "runs", "kraft-only"])
def test_bad_compare_is_one_line_naming_the_flag(argv, flag, capsys):
    try:
        code = main(["repro", "KAFKA-14845", *argv])
    except SystemExit as e:  # a flag's bounds are argparse's: the same one line, exit 254
        code = e.code
    assert code == 254
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith((f"harness: {flag}", f"harness {flag}")), err
