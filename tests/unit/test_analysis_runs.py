"""Pure parts of `harness analyze`: run directories → rows; and the shipped code zip."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from checkers.ship import build_zip, needs_shipping
from harness.analysis.runs import BadRun, candidate_dirs, fault_types, rows_for_run, toggle_set

RUN = {"run_id": "t-1", "test": "t", "seed": 7, "toggles": {"reregister_on_expiry": False, "registration": "3x"},
       "workload": "none", "inventory": {"name": "local", "zookeeper": {}},
       "schedule": {"steps": [{"f": "isolate"}, {"f": "kill"}, {"f": "isolate"}]}}
RESULTS = {"valid": False, "anomalies": [{"checker": "registration_liveness"}, {"checker": "registration_liveness"}],
           "checkers": {"registration_liveness": {"valid": False}, "single_registrant": {"valid": True},
                        "zxid_replay": {"valid": "unknown"}}}


def make_run(root: Path, name: str = "20261123T145216.364", run: dict | None = None,
             results: dict | None = None) -> Path:
    d = root / "t" / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps(RUN if run is None else run))
    (d / "results.json").write_text(json.dumps(RESULTS if results is None else results))
    (d / "history.jsonl").write_text('{"a": 1}\n{"a": 2}\n\n')
    return d


def test_toggles_and_faults() -> None:
    assert toggle_set({}) == toggle_set(None) == "default"
    assert toggle_set(RUN["toggles"]) == "registration=3x,reregister_on_expiry=false"
    assert fault_types(RUN) == "isolate+kill"
    assert fault_types({"faults": ["pause", "kill"]}) == "kill+pause"
    assert fault_types({}) == "none"


def test_rows_per_checker(tmp_path: Path) -> None:
    rows = rows_for_run(make_run(tmp_path))
    assert [(r.checker, r.valid, r.anomalies) for r in rows] == [
        ("registration_liveness", "invalid", 2), ("single_registrant", "valid", 0), ("zxid_replay", "unknown", 0)]
    r = rows[0]
    assert (r.test, r.date, r.seed, r.events, r.run_valid, r.faults) == ("t", "2026-11-23", 7, 2, "invalid", "isolate+kill")


def test_bad_runs_name_the_dir(tmp_path: Path) -> None:
    d = make_run(tmp_path)
    (d / "results.json").unlink()
    with pytest.raises(BadRun, match=f"{d}: no results.json"):
        rows_for_run(d)
    (d / "results.json").write_text('{"valid": tr')
    with pytest.raises(BadRun, match="results.json is corrupt"):
        rows_for_run(d)
    unreadable = make_run(tmp_path, "20261123T145216.365")
    (unreadable / "history.jsonl").unlink()
    (unreadable / "history.jsonl").mkdir()
    with pytest.raises(BadRun, match=f"^{unreadable}: cannot read history.jsonl \\(Is a directory\\)$"):
        rows_for_run(unreadable)
    bad_name = make_run(tmp_path, "notastamp")
    with pytest.raises(BadRun, match="not a run timestamp"):
        rows_for_run(bad_name)


def test_candidates_skip_links_and_analysis(tmp_path: Path) -> None:
    d = make_run(tmp_path)
    (tmp_path / "t" / "latest").symlink_to(d.name)
    (tmp_path / "latest").symlink_to(Path("t") / d.name)
    (tmp_path / "analysis" / "checks").mkdir(parents=True)
    assert list(candidate_dirs(tmp_path)) == [d]


def test_ship_zip_is_stable_and_complete(tmp_path: Path) -> None:
    assert not needs_shipping("local[*]") and needs_shipping("spark://127.0.0.1:7077")
    a = build_zip(tmp_path)
    assert build_zip(tmp_path) == a
    names = set(zipfile.ZipFile(a).namelist())
    assert {"checkers/__init__.py", "checkers/zxid.py", "history/events.py", "base/errors.py"} <= names
    assert not any("__pycache__" in n for n in names)


def test_candidates_include_campaign_runs(tmp_path: Path) -> None:
    d = make_run(tmp_path)
    cdir = tmp_path / "campaigns" / "nightly" / "20261123T100000.000"
    c1 = make_run(cdir / "runs", "20261123T100001.000")
    c2 = make_run(cdir / "runs", "20261123T100101.000")
    (cdir / "runs" / "t" / "latest").symlink_to(c2.name)
    (cdir / "campaign.json").write_text("{}")
    assert list(candidate_dirs(tmp_path)) == [c1, c2, d]
    assert rows_for_run(c1)[0].test == "t"
