"""`harness campaign` end to end, kept small: two short real runs on one warm cluster (the agent's defaults
and one without re-registration after session expiry), the index, JUnit XML, and a restart that resumes."""

from __future__ import annotations

import json
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
    ok, bad = root.findall("testsuite")
    assert (ok.get("name"), ok.get("failures"), bad.get("name")) == ("ci/000", "0", "ci/001")
    assert int(bad.get("failures")) >= 1 and int(ok.get("tests")) == int(bad.get("tests")) >= 10
    failed = {c.get("name"): c.find("failure") for c in bad.findall("testcase") if c.find("failure") is not None}
    assert "registration_liveness" in failed and "/" in failed["registration_liveness"].text  # cites event ids
    props = {p.get("name"): p.get("value") for p in bad.iter("property")}
    assert props["seed"] == "3" and props["toggles"] == '{"reregister_on_expiry": false}'

    # As if killed after its runs but before it finished: started again, it resumes and runs nothing new.
    state["finished"] = False
    (cdir / "campaign.json").write_text(json.dumps(state))
    assert main(["campaign", str(path), "--store", str(store)]) == 1
    out = capsys.readouterr().out
    assert "resuming" in out and "(2/2 done)" in out and "[1/2]" not in out
    assert (store / "campaigns" / "ci" / "latest").resolve() == cdir
    assert json.loads((cdir / "campaign.json").read_text())["finished"]
