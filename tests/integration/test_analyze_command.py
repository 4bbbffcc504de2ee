"""`harness analyze` on a small store of real stored runs: the dataset, the table, incremental
ingestion, and a corrupt run skipped with a warning while nothing already ingested is lost."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from tests.integration.test_report_browser import REVIEW, _check_plots, _open, _screenshot, browser  # noqa: F401 - browser is a fixture

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


LINES_SCHEMA = "run_dir string, test string, date string, batch string, line string"  # events before PARSED


def rates(out: Path) -> dict[tuple[str, str, str], tuple[int, int]]:
    with (out / "anomaly_rate.csv").open() as f:
        return {(r["checker"], r["toggles"], r["faults"]): (int(r["runs"]), int(r["invalid"])) for r in csv.DictReader(f)}


@pytest.mark.integration
def test_analyze_incremental(tmp_path: Path, capsys, spark) -> None:  # noqa: ANN001
    # Spark reads paths as globs and URIs: none of this may matter (url_decode read the + as a space,
    # and every line of such a store was lost)
    store = tmp_path / "store [a] {b,c} 50%* a+b%41"
    shutil.copytree(STORED_RUN, store / "isolate-broker" / STORED_RUN.name)
    assert main(["analyze", str(store)]) == 0
    out = store / "analysis"
    assert rates(out)[("registration_liveness", "default", "isolate")] == (1, 0)
    parts = sorted((out / "checks").rglob("*.parquet"))
    assert [p.parent.relative_to(out / "checks").as_posix() for p in parts] == ["test=isolate-broker/date=2026-11-23"]
    zstd_frame = b"\x28\xb5\x2f\xfd"  # the magic number that starts every zstd frame: the pages are zstd
    assert all(zstd_frame in p.read_bytes() for p in [*parts, *(out / "events").rglob("*.parquet")])

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
    run_dir = str((store / "isolate-broker" / STORED_RUN.name).resolve())
    orphan = spark.createDataFrame([(run_dir, "isolate-broker", "2026-11-23", "orphan", '{"f": "x"}')], LINES_SCHEMA)
    orphan.drop("test", "date").coalesce(1).write.parquet(str(tmp_path / "orphan"))
    dest = out / "events" / "test=isolate-broker" / "date=2026-11-23"
    next((tmp_path / "orphan").glob("*.parquet")).replace(dest / "part-orphan-00000.parquet")
    assert read_events(spark, out).count() == 2 * 109

    assert main(["analyze", str(store)]) == 0
    assert "ingested 0 new run(s)" in capsys.readouterr().out
    assert not list(out.glob("_staging-*"))


@pytest.mark.integration
def test_nothing_new_prints_the_saved_tables_without_spark(tmp_path: Path, capsys, monkeypatch, spark) -> None:  # noqa: ANN001
    import checkers.spark

    store = tmp_path / "store"
    shutil.copytree(STORED_RUN, store / "isolate-broker" / STORED_RUN.name)
    assert main(["analyze", str(store)]) == 0
    first = capsys.readouterr().out
    out = store / "analysis"
    written = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    monkeypatch.setattr(checkers.spark, "get_spark", lambda *a, **k: pytest.fail("started Spark with nothing new"))
    half = store / "isolate-broker" / "20261123T151500.000"
    half.mkdir()
    (half / "run.json").write_text("{}")
    assert main(["analyze", str(store)]) == 0
    text, err = capsys.readouterr()
    assert "ingested 0 new run(s), 1 already in the dataset, 1 skipped" in text and "tables unchanged (no Spark)" in text
    assert "skipping" in err
    assert text.split("ingested ")[0] == first.split("ingested ")[0]  # the same tables, printed alike
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == written
    monkeypatch.undo()

    (out / "flaky.csv").unlink()  # an output gone: computed again
    assert main(["analyze", str(store)]) == 0
    assert "ingested 0 new run(s) (0 part file(s))" in capsys.readouterr().out and (out / "flaky.csv").exists()
    failing_copy(store)  # a new run: ingested, and the tables show it
    assert main(["analyze", str(store)]) == 0
    assert "ingested 1 new run(s)" in capsys.readouterr().out
    assert rates(out)[("registration_liveness", "reregister_on_expiry=false", "isolate")] == (1, 1)


QUEUE_RUN = ROOT / "tests" / "data" / "store" / "isolate-broker" / "20261123T193419.839"


def repeat_copy(store: Path) -> Path:
    """The isolate run as if repeated with another seed and caught by the liveness checker: the same
    seed-less configuration as the stored run with the other verdict (a flaky configuration)."""
    d = store / "isolate-broker" / "20261123T160000.000"
    shutil.copytree(STORED_RUN, d)
    run = json.loads((d / "run.json").read_text())
    run.update(run_id="isolate-broker-20261123T160000.000", seed=1)
    (d / "run.json").write_text(json.dumps(run))
    res = json.loads((d / "results.json").read_text())
    res["valid"] = False
    res["checkers"]["registration_liveness"]["valid"] = False
    (d / "results.json").write_text(json.dumps(res))
    return d


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def plain(v: object) -> str:
    return "" if v is None else str(v)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory, spark) -> tuple[Path, str]:  # noqa: ANN001
    """One `harness analyze --out` over the isolate run, its flaky repeat and the queue run: (out, stdout)."""
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("analysed")
    store, out = tmp / "store", tmp / "analysis"
    for run in (STORED_RUN, QUEUE_RUN):
        shutil.copytree(run, store / "isolate-broker" / run.name)
    repeat_copy(store)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["analyze", str(store), "--out", str(out)]) == 0
    return out, printed.getvalue()


@pytest.mark.integration
def test_analyze_tables_page_and_parquet(analysed, spark) -> None:  # noqa: ANN001
    from html.parser import HTMLParser

    from harness.analysis.pairing import latency_table, op_latencies, recoveries, recovery_table
    from harness.analysis.runs import pairing_events

    out, printed = analysed
    for title in ("time from heal to re-registration", "client operation latency", "flaky configurations"):
        assert title in printed

    # heal → re-registration: the isolate stop pairs with broker 2's registration 108.5 ms later (in
    # both copies of the isolate run); the queue run's kill stops pair with nothing (the restarted
    # broker's registration failed: NODEEXISTS under the old session), nor do the final heals.
    heal = {r["fault"]: r for r in csv_rows(out / "heal_to_registration.csv")}
    assert {k: (r["heals"], r["paired"], r["unpaired"]) for k, r in heal.items()} == {
        "heal": ("3", "0", "3"), "isolate": ("2", "2", "0"), "kill": ("2", "0", "2")}
    assert float(heal["isolate"]["p50_ms"]) == pytest.approx(108.545, abs=0.01)
    assert heal["kill"]["p50_ms"] == ""

    # client latency: only the queue run has a workload; Spark's table equals the plain pairing's
    lat = csv_rows(out / "op_latency.csv")
    assert {(r["workload"], r["op"]) for r in lat} == {("queue", op) for op in ("create_topic", "final_read", "poll", "send")}
    expected = latency_table(("queue", o) for o in op_latencies(pairing_events(QUEUE_RUN)))
    assert [(r["op"], r["ops"], r["ok"], r["open"]) for r in lat] == [(e.op, str(e.ops), str(e.ok), str(e.open)) for e in expected]
    for r, e in zip(lat, expected, strict=True):
        assert [float(r[k]) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")] == pytest.approx(
            [e.p50_ms, e.p90_ms, e.p99_ms, e.max_ms])
    plain_heal = recovery_table([x for d in (STORED_RUN, QUEUE_RUN, STORED_RUN) for x in recoveries(pairing_events(d))])
    assert [(r.fault, str(r.heals), str(r.paired)) for r in plain_heal] == [(k, r["heals"], r["paired"]) for k, r in heal.items()]

    # flaky: the isolate configuration (seed aside) was valid once and invalid once
    (fl,) = csv_rows(out / "flaky.csv")
    assert (fl["test"], fl["toggles"], fl["faults"], fl["workload"], fl["runs"], fl["valid"], fl["invalid"]) == (
        "isolate-broker", "default", "isolate", "none", "2", "1", "1")
    assert fl["run_ids"] == "isolate-broker-20261123T145216.364 isolate-broker-20261123T160000.000"

    # every table also as Parquet, with the CSV's rows
    for name in ("anomaly_rate", "heal_to_registration", "op_latency", "flaky"):
        pq = spark.read.parquet(str(out / f"{name}.parquet"))
        assert pq.count() == len(csv_rows(out / f"{name}.csv")), name
    assert spark.read.parquet(str(out / "op_latency.parquet")).filter("op = 'send'").first()["ops"] == 12

    # the page: one section per table, each with its plotly div; plotly.js inline, nothing fetched
    class Page(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.sections: list[str] = []
            self.plots: list[str] = []
            self.external: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            if tag == "section":
                self.sections.append(plain(a.get("id")))
            if tag == "div" and plain(a.get("id")).startswith("plot-"):
                self.plots.append(plain(a.get("id")))
            if a.get("src") or (tag == "link" and plain(a.get("href")).startswith("http")):
                self.external.append(f"{tag} {a}")

    text = (out / "analysis.html").read_text()
    p = Page()
    p.feed(text)
    assert p.sections == ["anomaly_rate", "heal_to_registration", "op_latency", "flaky"]
    assert p.plots == [f"plot-{s}" for s in p.sections]
    assert p.external == [] and "Plotly.newPlot" in text and "plotly.js" in text.lower()


@pytest.mark.integration
def test_analysis_page_in_chromium(analysed, browser, tmp_path: Path) -> None:  # noqa: ANN001, F811 - the imported fixture
    """analysis.html opened from disk in headless Chromium: no console error, every plot drawn with points."""
    out, _ = analysed
    assert _open(browser, (out / "analysis.html").as_uri()) == []
    _check_plots(browser, {f"plot-{n}" for n in ("anomaly_rate", "heal_to_registration", "op_latency", "flaky")})
    assert "time from heal to re-registration" in browser.find_element("tag name", "body").text
    _screenshot(browser, tmp_path / "analysis.png", REVIEW / "zkfence-analysis.png")


EV_SCHEMA = ("run_dir string, src string, seq long, type string, f string, t_wall double, t_mono long, "
             "process string, stage string, phase string, instant boolean, reason string, noop boolean, ended string")


@pytest.mark.integration
def test_the_jvm_walk_and_the_windows_give_the_same_tables(analysed, spark) -> None:  # noqa: ANN001
    """``compute_tables`` with the JVM's walk of each run and with the two windows, over the analysed
    dataset (three runs: heals paired and unpaired, a queue run's operations)."""
    from harness.analysis.job import compute_tables

    out, _ = analysed
    walked, windowed = compute_tables(spark, out, jvm=True), compute_tables(spark, out, jvm=False)
    assert [t.name for t in walked] == [t.name for t in windowed]
    for a, b in zip(walked, windowed, strict=True):
        assert a.rows == b.rows, a.name
    assert sum(len(t.rows) for t in walked if t.name in ("heal_to_registration", "op_latency")) >= 6


@pytest.mark.integration
def test_spark_pairs_heals_as_the_plain_pairing_does(spark) -> None:  # noqa: ANN001
    """``tables.recovery_pairs`` (one window per run) and the JVM's walk of each run
    (``tables.run_pairs``) pair every heal of the unit tests' runs as ``pairing.recoveries`` does:
    which heal counts, which registration it gets, ties in time."""
    from dataclasses import astuple

    from harness.analysis.pairing import recoveries
    from harness.analysis.tables import heals_and_ops, recovery_pairs, run_pairs
    from tests.unit.test_analysis_tables import HEAL_EDGES, HEALS

    runs = {f"r{i}": evs for i, evs in enumerate([HEALS, *HEAL_EDGES])}
    rows = [(run, *astuple(e)) for run, evs in runs.items() for e in evs]
    events = spark.createDataFrame(rows, EV_SCHEMA)
    want = sorted((run, r.fault, r.heal_id, r.ms) for run, evs in runs.items() for r in recoveries(evs))
    for got in (recovery_pairs(events).collect(), heals_and_ops(run_pairs(events))[0].collect()):
        assert sorted((r["run_dir"], r["fault"], r["heal_id"], r["ms"]) for r in got) == want
    assert sum(1 for w in want if w[3] is None) >= 3 and len(want) >= 9


@pytest.mark.integration
def test_spark_pairs_operations_as_the_plain_pairing_does(spark) -> None:  # noqa: ANN001
    """``tables.op_pairs`` (a window over each run, source and process) and the JVM's walk of each run
    (``tables.run_pairs``) pair every torn, open and interleaved case of the unit test exactly as
    ``pairing.op_latencies`` does, in two runs at once."""
    from dataclasses import astuple

    from harness.analysis.pairing import op_latencies
    from harness.analysis.tables import heals_and_ops, op_pairs, run_pairs
    from tests.unit.test_analysis_tables import TORN_OPS

    rows = [(run, *astuple(e)) for run in ("r1", "r2") for e in TORN_OPS]
    events = spark.createDataFrame(rows, EV_SCHEMA)
    want = sorted((run, o.op, o.outcome, o.ms) for run in ("r1", "r2") for o in op_latencies(TORN_OPS))
    for got in (op_pairs(events).collect(), heals_and_ops(run_pairs(events))[1].collect()):
        assert sorted((r["run_dir"], r["op"], r["outcome"], r["ms"]) for r in got) == want


@pytest.mark.integration
def test_events_written_before_the_parsed_columns_are_parsed_when_read(tmp_path: Path, spark) -> None:  # noqa: ANN001
    """A dataset ingested by an earlier version holds only the lines: ``read_events`` parses those
    files' lines into the same fields ingest now stores, so the tables over it do not change."""
    from harness.analysis.dataset import LINES, PARSED, read_events

    store, out = tmp_path / "store", tmp_path / "store" / "analysis"
    shutil.copytree(STORED_RUN, store / "isolate-broker" / STORED_RUN.name)
    assert main(["analyze", str(store)]) == 0
    stored = sorted(read_events(spark, out).select(*LINES, *PARSED).collect())
    for i, part in enumerate(sorted((out / "events").rglob("*.parquet"))):
        old = spark.read.parquet(str(part)).select("run_dir", "batch", "line").collect()
        spark.createDataFrame(old, "run_dir string, batch string, line string").coalesce(1).write.parquet(
            str(tmp_path / f"old{i}"))
        next((tmp_path / f"old{i}").glob("*.parquet")).replace(part)
        assert "parsed_version" not in spark.read.parquet(str(part)).columns
    assert sorted(read_events(spark, out).select(*LINES, *PARSED).collect()) == stored
    assert len(stored) == 109 and {r["src"] for r in stored} >= {"nemesis", "observer"}
    heals = [r for r in stored if r["src"] == "nemesis" and r["stage"] == "complete"]
    assert heals and all(r["t_wall"] is not None and r["seq"] is not None for r in heals)


# The stored run's final heal (seq 8, recorded before heals said ``noop`` or ``ended``) as a heal that
# undid nothing is recorded now, or as one that ended an isolate still active
FINAL_HEALS = {"noop": {"noop": True}, "ended": {"ended": ["isolate"]}}


@pytest.mark.integration
@pytest.mark.parametrize("previous,final_heal", [(1, "noop"), (2, "ended")])
def test_events_parsed_by_an_earlier_version_are_parsed_again_when_read(tmp_path: Path, spark, previous: int,
                                                                        final_heal: str) -> None:  # noqa: ANN001
    """Files of a previous version (1: ``parsed`` true and every field but ``noop`` and ``ended``; 2:
    ``parsed_version`` 2, every field but ``ended``). Their lines are parsed again when read, so a
    heal's ``noop`` or ``ended`` among them counts in the tables as in a new dataset."""
    from pyspark.sql import functions as F

    from harness.analysis.dataset import LINES, PARSED, read_events

    store, out = tmp_path / "store", tmp_path / "store" / "analysis"
    d = store / "isolate-broker" / STORED_RUN.name
    shutil.copytree(STORED_RUN, d)
    _mark_final_heals(d, FINAL_HEALS[final_heal])
    assert main(["analyze", str(store)]) == 0
    stored = sorted(read_events(spark, out).select(*LINES, *PARSED).collect())
    assert [r["seq"] for r in stored if r["noop"] or r["ended"]] == [8]
    for i, part in enumerate(sorted((out / "events").rglob("*.parquet"))):
        old = spark.read.parquet(str(part)).drop("ended")
        old = (old.drop("parsed_version", "noop").withColumn("parsed", F.lit(True)) if previous == 1
               else old.withColumn("parsed_version", F.lit(previous)))
        old.coalesce(1).write.parquet(str(tmp_path / f"old{i}"))
        next((tmp_path / f"old{i}").glob("*.parquet")).replace(part)
    assert sorted(read_events(spark, out).select(*LINES, *PARSED).collect()) == stored


@pytest.mark.integration
@pytest.mark.parametrize("final_heal,table", [("noop", {"isolate": ("1", "1")}), ("ended", {"isolate": ("2", "1")})])
def test_a_final_heal_counts_as_what_it_ended(tmp_path: Path, spark, final_heal: str,
                                              table: dict[str, tuple[str, str]]) -> None:  # noqa: ANN001
    """A ``heal`` with ``noop: true`` (it undid nothing: docs/events.md) ends no fault. Every run's
    final heal after its faults were stopped is one: counted, it was an unpaired "heal" row in every
    run and cut the last fault's window short. A heal that ended faults still active (``ended``) is
    their end: its row is theirs, not a fault type "heal". Both readings, Spark's and the plain one,
    agree."""
    from harness.analysis.pairing import recoveries, recovery_table
    from harness.analysis.runs import pairing_events

    store, out = tmp_path / "store", tmp_path / "analysis"
    d = store / "isolate-broker" / STORED_RUN.name
    shutil.copytree(STORED_RUN, d)
    _mark_final_heals(d, FINAL_HEALS[final_heal])
    assert main(["analyze", str(store), "--out", str(out)]) == 0
    heal = {r["fault"]: (r["heals"], r["paired"]) for r in csv_rows(out / "heal_to_registration.csv")}
    assert heal == table
    assert {r.fault: (str(r.heals), str(r.paired)) for r in recovery_table(recoveries(pairing_events(d)))} == table


@pytest.mark.integration
def test_spark_reads_ended_as_the_plain_reading_does(spark) -> None:  # noqa: ANN001
    """A heal's fault type from the JSON text of its ``ended`` (``tables.pairing_events``), as
    ``pairing.ended_fault`` gives it from the parsed list, malformed lists included."""
    from harness.analysis.pairing import ended_fault
    from harness.analysis.tables import _ended_fault

    texts = ['["kill"]', '["pause","isolate","pause"]', "[]", '["kill",null]', '"kill"', '{"a":1}', "null", "[",
             '["b\\u00e9","a"]']
    got = spark.createDataFrame([(t,) for t in texts], "ended string").select(_ended_fault().alias("x")).collect()
    want = [ended_fault(json.loads(t)) if t != "[" else None for t in texts]
    assert [r["x"] for r in got] == want
    assert want[:3] == ["kill", "isolate+pause", None]


def _mark_final_heals(run_dir: Path, value: dict[str, object]) -> None:
    """Add ``value`` to the stored run's final heal."""
    lines = (run_dir / "history.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        e = json.loads(line)
        if e.get("f") == "heal" and e["value"].get("reason") == "final" and e["value"].get("stage") == "complete":
            e["value"].update(value)
            lines[i] = json.dumps(e, separators=(",", ":"))
    (run_dir / "history.jsonl").write_text("\n".join(lines) + "\n")
