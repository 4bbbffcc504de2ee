"""JUnit XML from plain checker results: a testsuite per run, a testcase per checker, anomalies as failures."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from checkers.junit import anomaly_text, run_properties, suite_for, write_junit
from checkers.result import anomaly, compose, result


def _composed() -> dict:
    return compose({
        "registration_epochs": result(),
        "registration_liveness": result(anomalies=[
            anomaly("registration_liveness", "broker 2 not registered within 6000 ms of the last heal",
                    ["nemesis/7", "observer/12"], broker=2),
            anomaly("registration_liveness", "broker 3 not registered", ["observer/13"], broker=3)]),
        "zxid_realtime": result("unknown"),
    })


def test_anomaly_text_names_checker_message_keys_and_events():
    a = anomaly("c", "went wrong", ["a/1", "b/2"], broker=2, detail={"x": 1})
    assert anomaly_text(a) == "[c] went wrong broker=2 (events a/1, b/2)"
    assert anomaly_text({"checker": "c", "message": "m"}) == "[c] m"


def test_one_testcase_per_checker_failures_carry_the_anomalies_unknown_is_an_error(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"test": "t", "seed": 7, "toggles": {"reregister_on_expiry": False},
                                                  "workload": "none", "other": 1}))
    props = run_properties(run_dir)
    assert props == {"test": "t", "seed": 7, "toggles": {"reregister_on_expiry": False}, "workload": "none"}
    path = write_junit(tmp_path / "out" / "junit.xml",
                       [suite_for("store/t/1", _composed(), props, time_s=12.5),
                        suite_for("store/t/2", compose({"registration_epochs": result()}))])
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "4" and root.get("failures") == "1"
    assert root.get("errors") == "1"
    first, second = root.findall("testsuite")
    assert (first.get("name"), first.get("tests"), first.get("failures"), first.get("errors")) == ("store/t/1", "3",
                                                                                                   "1", "1")
    assert {p.get("name"): p.get("value") for p in first.iter("property")} == {
        "test": "t", "seed": "7", "toggles": '{"reregister_on_expiry": false}', "workload": "none"}
    cases = {c.get("name"): c for c in first.findall("testcase")}
    assert list(cases) == ["registration_epochs", "registration_liveness", "zxid_realtime"]
    assert all(c.get("classname") == "store/t/1" for c in cases.values())
    assert list(cases["registration_epochs"]) == []
    (failure,) = cases["registration_liveness"].findall("failure")
    assert failure.get("message").startswith("[registration_liveness] broker 2 not registered")
    assert failure.text.splitlines() == [
        "[registration_liveness] broker 2 not registered within 6000 ms of the last heal broker=2 "
        "(events nemesis/7, observer/12)", "[registration_liveness] broker 3 not registered broker=3 (events observer/13)"]
    (error,) = cases["zxid_realtime"].findall("error")
    assert error.get("type") == "unknown"
    assert [c.get("name") for c in second.findall("testcase")] == ["registration_epochs"]
    assert not (Path(str(path) + ".tmp")).exists()


def test_a_result_without_per_checker_verdicts_is_one_testcase():
    lin = result(False, [anomaly("linearizability", "no linearization", ["op/3"])], model="cas-register")
    suite = suite_for("etcd_001.log", lin)
    (case,) = list(suite)
    assert case.name == "linearizability" and case.is_failure
    ok = suite_for("etcd_002.log", result(True, model="cas-register"))
    (case,) = list(ok)
    assert case.name == "linearizability:cas-register" and case.is_passed
