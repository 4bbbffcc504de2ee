"""`harness analyze` on a small store of real stored runs: the dataset, the table, incremental
ingestion, and a corrupt run skipped with a warning while nothing already ingested is lost."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
STORED_RUN = ROOT / "tests" / "data" / "store" / "isolate-broker" / "20261123T145216.364"


def failing_copy(store: Path) -> Path:
    """The stored run as if replayed with reregister_on_expiry=false and caught by the liveness checker."""
    d = store / "isolate-broker" / "20261123T150000.000"
    shutil.copytree(STORED_RUN, d)
    run = json.loads((d / "run.json").read_text())
    run.update(run_id="isolate-broker-20261123T150000.000", toggles={"reregister_on_expiry": False})
    (d / "run.json").write_text(json.dumps(run))
    res = json.loads((d / "results.json").read_text())
    res["valid"] = False
    res["checkers"]["registration_liveness"]["valid"] = False
    res["anomalies"] = [{"checker": "registration_liveness", "event_ids": ["agent:2/1"]}]
    (d / "results.json").write_text(json.dumps(res))
    return d


def rates(out: Path) -> dict[tuple[str, str, str], tuple[int, int]]:
    with (out / "anomaly_rate.csv").open() as f:
        return {(r["checker"], r["toggles"], r["faults"]): (int(r["runs"]), int(r["invalid"])) for r in csv.DictReader(f)}


@pytest.mark.integration
def test_analyze_incremental(tmp_path: Path, capsys, spark) -> None:  # noqa: ANN001
    store = tmp_path / "store"
    shutil.copytree(STORED_RUN, store / "isolate-broker" / STORED_RUN.name)
    assert main(["analyze", str(store)]) == 0
    out = store / "analysis"
    assert rates(out)[("registration_liveness", "default", "isolate")] == (1, 0)
    parts = sorted((out / "checks").rglob("*.parquet"))
    assert [p.parent.relative_to(out / "checks").as_posix() for p in parts] == ["test=isolate-broker/date=2026-11-23"]

    failing_copy(store)
    half = store / "isolate-broker" / "20261123T151500.000"
    half.mkdir()
    (half / "run.json").write_text("{}")  # no results.json yet: a run still being written
    capsys.readouterr()
    assert main(["analyze", "--store", str(store)]) == 0
    out_text, err = capsys.readouterr()
    assert [ln for ln in err.splitlines() if "skipping" in ln] == [f"harness analyze: skipping {half}: no results.json (half-written run?)"]
    assert "ingested 1 new run(s)" in out_text and "1 already in the dataset" in out_text
    table = rates(out)
    assert table[("registration_liveness", "reregister_on_expiry=false", "isolate")] == (1, 1)
    assert table[("registration_liveness", "default", "isolate")] == (1, 0)
    assert set(parts) <= set((out / "checks").rglob("*.parquet"))  # nothing already ingested is lost

    from harness.analysis.dataset import read_events

    events = read_events(spark, out)
    assert events is not None and events.count() == 2 * 109
    assert events.filter("f = 'broker_znode' and src = 'observer'").count() > 0
    # an interrupted ingest that moved its events but not its check rows leaves them invisible
    from harness.analysis.dataset import EVENTS_SCHEMA

    run_dir = str((store / "isolate-broker" / STORED_RUN.name).resolve())
    orphan = spark.createDataFrame([(run_dir, "isolate-broker", "2026-11-23", "orphan", '{"f": "x"}')], EVENTS_SCHEMA)
    orphan.drop("test", "date").coalesce(1).write.parquet(str(tmp_path / "orphan"))
    dest = out / "events" / "test=isolate-broker" / "date=2026-11-23"
    next((tmp_path / "orphan").glob("*.parquet")).replace(dest / "part-orphan-00000.parquet")
    assert read_events(spark, out).count() == 2 * 109

    assert main(["analyze", str(store)]) == 0
    assert "ingested 0 new run(s)" in capsys.readouterr().out
    assert not list(out.glob("_staging-*"))
