"""`harness campaign` end to end, kept small: two short real runs on one warm cluster (the agent's defaults
and one without re-registration after session expiry), the index, JUnit XML (a testcase per run), the
current fault in the progress lines, and a restart that resumes and lists a killed run's partial directory."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from harness.cli import main

pytestmark = pytest.mark.integration

CAMPAIGN = """\
name = "ci"
time_limit = 10
seeds = [3]

[matrix]
faults = ["isolate"]
toggles = [{}, { reregister_on_expiry = false }]
"""


def test_two_runs_index_junit_and_resume(tmp_path, capsys):
    path = tmp_path / "ci.toml"
    path.write_text(CAMPAIGN)
    store = tmp_path / "store"
    assert main(["campaign", str(path), "--store", str(store), "--junit", str(tmp_path / "ci-junit.xml")]) == 1
    out = capsys.readouterr().out
    assert "[1/2] 000 isolate · defaults" in out and "[2/2] 001 isolate · reregister_on_expiry=False" in out
    cdir = (store / "campaigns" / "ci" / "latest").resolve()
    state = json.loads((cdir / "campaign.json").read_text())
    assert state["finished"] and [r["valid"] for r in state["runs"].values()] == [True, False]
    for r in state["runs"].values():
        assert (cdir / r["run_dir"] / "report.html").is_file() and (cdir / r["run_dir"] / "results.json").is_file()

    index = (cdir / "index.html").read_text()
    assert "2/2 runs done (finished) · 1 valid · 1 invalid" in index
    for r in state["runs"].values():
        assert f'href="{r["run_dir"]}/report.html"' in index

    root = ET.parse(cdir / "junit.xml").getroot()
    assert (tmp_path / "ci-junit.xml").read_bytes() == (cdir / "junit.xml").read_bytes()
    (suite,) = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors")) == (
        "campaign ci", "2", "1", "0")
    ok, bad = suite.findall("testcase")
    assert ok.get("name") == "ci-000 · isolate · defaults · none · seed 3" and ok.find("failure") is None
    assert bad.get("name") == "ci-001 · isolate · reregister_on_expiry=false · none · seed 3"
    failure = bad.find("failure")
    assert "from registration_liveness" in failure.get("message")  # the summary names the checker that fired
    assert "[registration_liveness]" in failure.text and "/" in failure.text  # cites event ids
    props = {p.get("name"): p.get("value") for p in bad.iter("property")}
    assert props["seed"] == "3" and props["toggles"] == '{"reregister_on_expiry": false}'
    assert (props["faults"], props["workload"], props["run_dir"]) == ("isolate", "none", state["runs"]["001"]["run_dir"])
    # the progress lines name the fault active during a run
    assert "fault: isolate " in out and re.search(r"2/2 done · anomalies so far [1-9]", out)

    # As if killed after its runs but before it finished, with a third run killed before its history was
    # checked (its partial directory: run.json and events, no results.json): started again, it resumes,
    # runs nothing new, and lists that directory as interrupted in the index.
    state["finished"] = False
    (cdir / "campaign.json").write_text(json.dumps(state))
    partial = cdir / state["runs"]["001"]["run_dir"]
    killed = partial.parent / "20991231T235959.000"
    shutil.copytree(partial, killed, ignore=shutil.ignore_patterns("results.json", "report.html", "history.jsonl"))
    assert main(["campaign", str(path), "--store", str(store)]) == 1
    out = capsys.readouterr().out
    assert "resuming" in out and "(2/2 done)" in out and "[1/2]" not in out
    assert f"interrupted run 001: its partial directory {killed.relative_to(cdir).as_posix()}" in out
    assert (store / "campaigns" / "ci" / "latest").resolve() == cdir
    state = json.loads((cdir / "campaign.json").read_text())
    assert state["finished"] and [(r["key"], r["valid"]) for r in state["interrupted"]] == [("001", "unknown")]
    assert "1 interrupted" in (cdir / "index.html").read_text()
    assert len(ET.parse(cdir / "junit.xml").getroot().findall("testsuite/testcase")) == 2  # the redone runs only
