"""JUnit XML from plain checker results: one testcase per run, named by its configuration, the anomaly
summary as the failure, unknown as an error, seed and toggles as the testcase's properties."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from checkers.junit import anomaly_summary, anomaly_text, case_for, case_name, run_properties, write_junit
from checkers.result import anomaly, compose, result


def _invalid() -> dict:
    return compose({
        "registration_epochs": result(),
        "registration_liveness": result(anomalies=[
            anomaly("registration_liveness", "broker 2 not registered within 6000 ms of the last heal",
                    ["nemesis/7", "observer/12"], broker=2),
            anomaly("registration_liveness", "broker 3 not registered", ["observer/13"], broker=3)]),
        "bounce_handling": result(anomalies=[anomaly("bounce_handling", "no LeaderAndIsr", ["agent:1/4"])]),
        "zxid_realtime": result("unknown"),
    })


def test_anomaly_text_names_checker_message_keys_and_events():
    a = anomaly("c", "went wrong", ["a/1", "b/2"], broker=2, detail={"x": 1})
    assert anomaly_text(a) == "[c] went wrong broker=2 (events a/1, b/2)"
    assert anomaly_text({"checker": "c", "message": "m"}) == "[c] m"


def test_the_summary_names_every_checker_that_fired_and_how_often():
    assert anomaly_summary(_invalid()) == "3 anomalies from registration_liveness ×2, bounce_handling ×1"
    only_verdict = compose({"controller_epochs": result(False)})
    assert anomaly_summary(only_verdict) == "0 anomalies from controller_epochs"
    one = result(False, [anomaly("linearizability", "no linearization", ["op/3"])])
    assert anomaly_summary(one) == "1 anomaly from linearizability ×1"


def test_the_name_is_the_runs_configuration():
    props = {"test": "nightly-003", "faults": "kill,pause", "toggles": {"registration": "pre_2_2",
                                                                       "reregister_on_expiry": False},
             "workload": "none", "seed": 2, "repeat": 0, "run_dir": "runs/x"}
    assert case_name(props, "fallback") == ("nightly-003 · kill,pause · registration=pre_2_2,reregister_on_expiry=false"
                                            " · none · seed 2")
    assert case_name({**props, "toggles": {}, "repeat": 1}, "f").endswith("· defaults · none · seed 2 · repeat 1")
    assert case_name({}, "store/t/1") == "store/t/1"


def test_one_testcase_per_run_failure_is_the_summary_unknown_is_an_error_properties_on_the_case(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({
        "test": "t", "seed": 7, "toggles": {"reregister_on_expiry": False}, "workload": "none", "other": 1,
        "schedule": {"steps": [{"f": "partition", "at": 1}, {"f": "kill", "at": 2}, {"f": "partition", "at": 3},
                               {"f": "heal", "at": 4}]}}))
    props = run_properties(run_dir)
    assert props == {"test": "t", "seed": 7, "toggles": {"reregister_on_expiry": False}, "workload": "none",
                     "faults": "partition,kill", "run_dir": str(run_dir)}
    unknown = compose({"registration_epochs": result(), "zxid_realtime": result("unknown")})
    path = write_junit(tmp_path / "out" / "junit.xml",
                       [case_for(case_name(props, "x"), _invalid(), props, time_s=12.5, classname="campaign.c"),
                        case_for("clean", compose({"registration_epochs": result()}), {"seed": 1}),
                        case_for("undecided", unknown, {}),
                        case_for("clean", {**unknown, "error": "RemoteError: n1 down"})], name="campaign c")
    root = ET.parse(path).getroot()
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == ("testsuites", "4", "1", "2")
    (suite,) = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests")) == ("campaign c", "4")
    bad, clean, undecided, crashed = suite.findall("testcase")
    assert bad.get("name") == "t · partition,kill · reregister_on_expiry=false · none · seed 7"
    assert (bad.get("classname"), bad.get("time")) == ("campaign.c", "12.5")
    assert {p.get("name"): p.get("value") for p in bad.iter("property")} == {
        "test": "t", "seed": "7", "toggles": '{"reregister_on_expiry": false}', "workload": "none",
        "faults": "partition,kill", "run_dir": str(run_dir)}
    (failure,) = bad.findall("failure")
    assert failure.get("message") == "3 anomalies from registration_liveness ×2, bounce_handling ×1"
    assert failure.text.splitlines() == [
        "[registration_liveness] broker 2 not registered within 6000 ms of the last heal broker=2 "
        "(events nemesis/7, observer/12)", "[registration_liveness] broker 3 not registered broker=3 (events observer/13)",
        "[bounce_handling] no LeaderAndIsr (events agent:1/4)"]
    assert list(clean) == [e for e in clean if e.tag == "properties"]  # passed: no failure, no error
    (error,) = undecided.findall("error")
    assert (error.get("type"), error.get("message")) == ("unknown", "unknown: zxid_realtime could not decide")
    assert crashed.get("name") == "clean · #2"  # equal names stay distinct
    assert crashed.find("error").text == "run error: RemoteError: n1 down"
    assert not (Path(str(path) + ".tmp")).exists()


def test_a_reference_history_result_is_one_testcase():
    lin = result(False, [anomaly("linearizability", "no linearization", ["op/3"])], model="cas-register")
    case = case_for("etcd_001.log", lin)
    assert case.name == "etcd_001.log" and case.is_failure
    ok = case_for("etcd_002.log", result(True, model="cas-register"))
    assert ok.is_passed
