"""A run with the ZooKeeper wire proxy in the agents' path, armed mid-run by a scripted schedule."""

from __future__ import annotations

import json

import pytest

from base.localstate import processes_mentioning
from history import read_events
from nemesis.scripted import load_schedule
from tests.runs import run_test

pytestmark = pytest.mark.integration

SCHEDULE = """
name = "zk-dark"

[[step]]
at = 1.0
fault = "zk_rules"
targets = "all-zk"
duration = 7.0
params = { rules = [ { id = "dark", match = { dir = "c2s" }, action = { type = "drop_then_blackhole", mode = "both" } } ] }
"""


def test_proxy_rules_armed_mid_run_expire_every_session_and_brokers_reregister(tmp_path):
    path = tmp_path / "zk-dark.toml"
    path.write_text(SCHEDULE)
    outcome = run_test(tmp_path / "store", "--time-limit", "10", "--seed", "3", "--zkproxy", "--test", "zk-dark",
                       schedule=load_schedule(path))
    assert outcome.valid is True, outcome.results
    history = list(read_events(outcome.run_dir / "history.jsonl"))
    proxy = [e for e in history if e.src == "zkproxy"]
    assert any(e.value.get("action") == "drop_then_blackhole" for e in proxy), "the rule never fired"
    rules = [e for e in history if e.src == "nemesis" and e.f == "zk_rules" and e.value.get("stage") == "complete"]
    assert [e.value["phase"] for e in rules] == ["start", "stop"]
    for b in (1, 2, 3):
        oks = [e for e in history if e.src == f"agent:{b}" and e.f == "register" and e.type == "ok"]
        assert len(oks) >= 2 and oks[-1].value["epoch"] > oks[0].value["epoch"], f"broker {b} did not re-register"
    scratch = json.loads((outcome.run_dir / "run.json").read_text())["scratch"]
    assert processes_mentioning(scratch) == []


def test_random_package_is_seeded_recorded_and_fully_healed(tmp_path):
    outcome = run_test(tmp_path / "store", "--time-limit", "12", "--seed", "11", "--faults", "partition,pause",
                       "--interval", "3", "--test", "package")
    run = json.loads((outcome.run_dir / "run.json").read_text())
    assert run["seed"] == 11 and run["schedule"]["name"] == "package-partition+pause-s11"
    steps = run["schedule"]["steps"]
    assert {s["f"] for s in steps} <= {"partition", "pause"} and steps
    history = list(read_events(outcome.run_dir / "history.jsonl"))
    done = [e for e in history if e.src == "nemesis" and e.value.get("stage") in ("complete", "error")
            and e.f in ("partition", "pause")]
    assert len(done) == len(steps), "every packaged step ran (or was recorded as a failed fault)"
    heals = [e.value["reason"] for e in history if e.f == "heal" and e.value.get("stage") == "complete"]
    assert heals[:1] == ["setup"] and "final" in heals
    results = json.loads((outcome.run_dir / "results.json").read_text())
    assert results["valid"] == outcome.valid and "registration_liveness" in results["checkers"]
    assert processes_mentioning(run["scratch"]) == []
