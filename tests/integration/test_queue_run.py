"""A short real queue run: real sshd, ZooKeeper, Toxiproxy, broker agents and Spark; the workload's
clients send and poll, the final read takes every partition, and the queue checkers judge it.

No faults (an empty schedule) and only the queue checkers, to keep it short; `harness run` with
the isolate schedule and every checker is the README's `make run`."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from history import read_events
from nemesis.schedule import Schedule
from tests.runs import run_on

pytestmark = pytest.mark.integration


def test_short_queue_run_records_and_checks_every_client_operation(tmp_path, warm_engine):
    from base.inventory import load_inventory
    from harness.cli import build_parser
    from harness.commands.run import spec_from_args
    from workloads.queue import QUEUE_CHECKERS

    args = build_parser().parse_args(["run", "--store", str(tmp_path / "store"), "--workload", "queue",
                                      "--time-limit", "6", "--seed", "7"])
    inv = load_inventory(args.inventory)
    spec = replace(spec_from_args(args, inv, Schedule("no-faults")), checkers=QUEUE_CHECKERS)
    outcome = run_on(warm_engine, args.store, spec)

    print(f"queue run: {outcome.ops} in {outcome.wall_s:.1f}s, phases {outcome.phases}")
    assert outcome.error is None and outcome.valid is True, outcome.results
    history = list(read_events(outcome.run_dir / "history.jsonl"))
    ops = [e for e in history if e.src == "client" and e.type != "invoke"]
    invokes = [e for e in history if e.src == "client" and e.type == "invoke"]
    assert len(ops) == len(invokes), "every invoke has its completion"
    results = json.loads((outcome.run_dir / "results.json").read_text())
    assert results["stats"]["client_operations"] == len(ops) > 200
    assert results["checkers"]["queue_unseen"]["stats"]["client_ops"] == len(ops) - 1, "all but create_topic"

    acked = {e.value["value"] for e in ops if e.f == "send" and e.type == "ok"}
    finals = [e for e in ops if e.f == "final_read"]
    assert [e.type for e in finals] == ["ok"] * 3 and acked
    read = {v for e in finals for v in e.value["values"]}
    assert acked <= read, "every acknowledged send is in the final read"
    assert any(e.f == "poll" and e.type == "ok" and e.value.get("offsets") for e in ops)
