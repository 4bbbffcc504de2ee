"""`harness check RUN_DIR` on a stored real-broker run judges it by the checkers the run itself judged
by (its run.json's ``checkers``: ``checkers.kafka_feeds.judged_by``), so the row and the run's own
results.json agree; a run.json without them falls back to the checkers its sources fed. Plain data:
``result`` is what every checker said over the history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from base.errors import UsageError
from checkers.kafka_feeds import as_the_run_judged, judged_by
from harness.commands.check import stored_run_judged

KAFKA = {"version": "2.2.0", "zk_socket": "nio", "zk_hosts": None, "properties": []}
# a KAFKA-7235-lost-write run as the engine records it: the story's real-broker checker, its own
# Kafka client (the run's workload is none), both proxies
STORY_RUN = {"kafka": KAFKA, "kafkaproxy": True, "zkproxy": "all", "pipeline_zkproxy": [], "workload": "none",
             "checkers": ["queue_lost_write"], "scenario": "KAFKA-7235-lost-write"}


def every_checker(lost: bool) -> dict[str, Any]:
    """What every checker says over such a history: the lost writes (or none), and a checker the story
    leaves out finding something (the inferred pre-2.2 epochs it does not judge by)."""
    anomalies = [{"checker": "control_request_epochs", "message": "broker 2 applied ...", "event_ids": []}]
    if lost:
        anomalies.append({"checker": "queue_lost_write", "message": "lost", "event_ids": ["client/4"]})
    return {"valid": False, "stats": {"events": 90}, "anomalies": anomalies,
            "checkers": {"registration_epochs": {"valid": True}, "control_request_epochs": {"valid": False},
                         "queue_lost_write": {"valid": not lost}, "queue_duplicate": {"valid": True}}}


@pytest.mark.parametrize("lost", [True, False])
def test_a_story_run_is_judged_by_its_own_checkers(lost: bool) -> None:
    got = as_the_run_judged(every_checker(lost), STORY_RUN)
    assert list(got["checkers"]) == ["queue_lost_write"] and got["valid"] is (not lost)
    assert [a["checker"] for a in got["anomalies"]] == (["queue_lost_write"] if lost else [])
    # its own Kafka client feeds the queue checkers though the workload is none
    assert "fed_from" in got["feeds"]["queue_lost_write"]


def test_the_recorded_list_is_what_the_run_judged_and_a_missing_one_is_unknown() -> None:
    assert judged_by(STORY_RUN) == ("queue_lost_write",)
    assert judged_by({"checkers": None}) is None and judged_by({}) is None and judged_by({"checkers": []}) is None
    got = as_the_run_judged(every_checker(False), {**STORY_RUN, "checkers": ["queue_lost_write", "gone_checker"]})
    assert got["checkers"]["gone_checker"]["valid"] == "unknown" and got["valid"] == "unknown"
    damaged = as_the_run_judged({**every_checker(False), "stats": {"damaged_lines": 2}}, STORY_RUN)
    assert damaged["valid"] == "unknown"


def test_a_run_json_without_checkers_falls_back_to_what_its_sources_fed() -> None:
    old = {k: v for k, v in STORY_RUN.items() if k != "checkers"}
    got = as_the_run_judged(every_checker(True), old)
    assert "queue_lost_write" not in got["checkers"] and "control_request_epochs" in got["checkers"]
    assert got["feeds"]["queue_lost_write"]["valid"] == "unknown"


def test_an_agents_run_is_returned_as_it_is() -> None:
    result = every_checker(True)
    assert as_the_run_judged(result, {**STORY_RUN, "kafka": None}) is result


def store_dir(tmp_path: Path, run: dict[str, Any], results: dict[str, Any]) -> Path:
    d = tmp_path / "repro-KAFKA-7235-lost-write-kafka-2.2.0" / "20261128T130000.000"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps(run))
    (d / "results.json").write_text(json.dumps(results))
    return d


@pytest.mark.parametrize("lost", [True, False])
def test_harness_check_of_a_stored_story_run_agrees_with_the_runs_results(tmp_path: Path, lost: bool) -> None:
    """The row `harness check` writes for a store dir against the results.json the run wrote, which
    the engine composed from the checkers its run.json names."""
    mine = every_checker(lost)
    own = {"valid": not lost, "checkers": {"queue_lost_write": mine["checkers"]["queue_lost_write"]},
           "anomalies": [a for a in mine["anomalies"] if a["checker"] == "queue_lost_write"]}
    d = store_dir(tmp_path, STORY_RUN, own)
    row = stored_run_judged(mine, d)
    results = json.loads((d / "results.json").read_text())
    assert (row["valid"], row["checkers"], row["anomalies"]) == (
        results["valid"], results["checkers"], results["anomalies"])


def test_a_store_dir_without_a_readable_run_json(tmp_path: Path) -> None:
    result = every_checker(True)
    assert stored_run_judged(result, None) is result and stored_run_judged(result, tmp_path) is result
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(UsageError, match="run.json: not readable as JSON"):
        stored_run_judged(result, tmp_path)
