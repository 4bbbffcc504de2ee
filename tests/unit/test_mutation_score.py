"""The bug-catching score's pure part, the campaign's progress line, and how a resumed campaign lists the
partial directory of a run that was killed midway."""

from __future__ import annotations

import json

import pytest

from harness.commands.campaign import note_interrupted, progress_line
from harness.mutation import FIXED, MUTATIONS, fixed_score, mutant, parse_mutations, slug, toggle_score
from harness.report.campaign import campaign_index


def rec(key: str, valid, fired=(), t_end=None) -> dict:
    return {"key": key, "label": f"isolate · x · none · seed {key}", "valid": valid, "fired": list(fired),
            "t_end_s": t_end, "anomalies": len(fired), "faults": "isolate", "toggles": {}, "workload": "none",
            "run_dir": f"runs/c-{key}/1", "wall_s": 1.0}


def test_every_bug_sits_on_the_fixed_agent_and_none_is_the_fixed_agent():
    assert FIXED == {"registration": "retry14845", "isr_epoch_check": "kip903"}
    for name, (toggles, jira) in MUTATIONS.items():
        assert mutant(toggles) != FIXED and jira, name
    assert mutant({"isr_epoch_check": "off"}) == {"registration": "retry14845", "isr_epoch_check": "off"}
    assert set(parse_mutations(None)) == set(MUTATIONS)
    assert parse_mutations("registration=3x+pipeline_on_connect=true, controller_fencing=off") == {
        "registration=3x+pipeline_on_connect=true": {"registration": "3x", "pipeline_on_connect": True},
        "controller_fencing=off": {"controller_fencing": "off"}}
    with pytest.raises(ValueError, match="nope"):
        parse_mutations("nope=1")
    with pytest.raises(ValueError, match="the fixed agent"):
        parse_mutations("isr_epoch_check=kip903")
    assert slug("registration=3x+pipeline_on_connect=true") == "mutation-registration-3x-pipeline_on_connect-true"


def test_a_toggle_is_caught_by_its_first_invalid_run():
    state = {"runs": {"000": rec("000", True), "001": rec("001", "unknown"),
                      "002": rec("002", False, ["bounce_handling", "control_request_epochs"], 187.3)}}
    s = toggle_score("broker_epoch_check=off", state)
    assert (s.caught, s.checkers, s.first_catch_s, s.runs, s.unknowns) == (
        True, ("bounce_handling", "control_request_epochs"), 187.3, 3, 1)
    missed = toggle_score("x", {"runs": {"000": rec("000", True), "001": rec("001", "unknown")}})
    assert (missed.caught, missed.checkers, missed.first_catch_s, missed.runs, missed.unknowns) == (
        False, (), None, 2, 1)


def test_the_fixed_agent_counts_false_alarms_and_unknowns_apart():
    state = {"runs": {"000": rec("000", True), "001": rec("001", False, ["zxid_realtime"]),
                      "002": rec("002", "unknown"), "003": rec("003", True)}}
    f = fixed_score(state)
    assert (f.runs, f.false_alarms, f.unknowns, f.checkers) == (4, 1, 1, ("zxid_realtime",))


def test_progress_line_shows_runs_anomalies_eta_and_the_current_fault():
    assert progress_line(3, 12, 2, 245.4) == "3/12 done · anomalies so far 2 · ETA 4m05s"
    assert progress_line(0, 12, 0, None, ["partition b1,zk2"]) == (
        "0/12 done · anomalies so far 0 · ETA ? · fault: partition b1,zk2")
    assert progress_line(1, 2, 0, 3725, []).endswith("ETA 1h02m · fault: none active")
    assert progress_line(1, 2, 0, 9.6) == "1/2 done · anomalies so far 0 · ETA 10s"


def test_a_killed_runs_partial_directory_is_listed_as_interrupted_once(tmp_path):
    cdir = tmp_path
    state = {"name": "c", "plan": [{"key": "000", "label": "isolate · defaults"}, {"key": "001", "label": "partition"}],
             "runs": {"000": rec("000", True)}}
    (cdir / "runs" / "c-000" / "1").mkdir(parents=True)
    killed = cdir / "runs" / "c-001" / "20261123T1"
    killed.mkdir(parents=True)
    (killed / "results.json").write_text(json.dumps({"valid": "unknown", "anomalies": [],
                                                     "interrupted": "interrupted during play"}))
    sigkilled = cdir / "runs" / "c-001" / "20261123T2"  # killed too hard to check its partial history
    sigkilled.mkdir()
    (cdir / "runs" / "c-001" / "latest").symlink_to("20261123T2")
    (cdir / "runs" / "latest").symlink_to("c-001/20261123T2")  # the store's own links are not runs
    found = note_interrupted(cdir, state)
    assert [(r["key"], r["run_dir"], r["valid"], r["reason"]) for r in found] == [
        ("001", "runs/c-001/20261123T1", "unknown", "interrupted during play"),
        ("001", "runs/c-001/20261123T2", "unknown", "killed before its history was checked")]
    assert state["interrupted"] == found and found[0]["label"] == "partition"
    assert note_interrupted(cdir, state) == [] and len(state["interrupted"]) == 2
    page = campaign_index({**state, "finished": False})
    assert "2 interrupted" in page and 'id="interrupted"' in page and "runs/c-001/20261123T1" in page


def test_each_release_bug_is_reached_by_a_fault_real_brokers_take_and_named_by_known_checkers():
    from base.components.kafka import release_of
    from bench.mutation_kafka import with_fault
    from checkers.project import CHECKER_NAMES
    from harness.mutation import RELEASE_BUGS, RELEASE_BUGS_UNREACHABLE
    from harness.spec import ZK_SOCKETS
    from nemesis.episodes import EPISODES

    for jira, bug in RELEASE_BUGS.items():
        assert bug.jira == jira and jira not in RELEASE_BUGS_UNREACHABLE
        assert EPISODES[bug.fault].on_kafka, f"{jira}: {bug.fault} acts through agent hooks"
        assert release_of(bug.release) and release_of(bug.control_release)
        assert {bug.buggy_socket, bug.control_socket} <= set(ZK_SOCKETS)
        assert (bug.release, bug.buggy_socket) != (bug.control_release, bug.control_socket), f"{jira}: no control"
        assert set(bug.checkers) <= set(CHECKER_NAMES), f"{jira}: unknown checkers {bug.checkers}"
    assert with_fault(("partition", "isolate,lost_connect", "schedule:x.toml"), "lost_connect") == (
        "partition,lost_connect", "isolate,lost_connect", "schedule:x.toml")
