"""One ``harness analyze`` job on a given SparkSession: new runs into the dataset, the tables computed
and written. The command runs it in-process, or hands it to a running batch check server
(``harness.checkserver``), whose session is already up and its JIT warm; both run this same code.

``warm_up`` runs the job once on a small built-in store so that a new session's JVM compiles the
ingest's and the tables' code paths before real runs arrive.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from base.localstate import owned_tempdir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from harness.analysis.tables import Table

PAGE = "analysis.html"
WARM_UP_RUNS, WARM_UP_LINES = 20, 10_000  # about a `make run`'s size each
WARM_UP_PREFIX = "zkfence-analyze-warm-up-"  # + "<pid>-<start>-": whose it is, for `harness teardown`


@dataclass
class Outcome:
    tables: list[Table]
    summary: str  # what was ingested and what the dataset holds, one line
    warnings: list[str] = field(default_factory=list)  # one line per skipped run directory


def analyze(store: Path, out: Path, spark_of: Callable[[], SparkSession]) -> Outcome:
    """Ingest ``store``'s runs that are not yet in the dataset under ``out``, then compute and write
    the tables; with nothing new over the dataset the saved tables came from, the saved tables
    (``spark_of`` never called)."""
    from harness.analysis import stamp
    from harness.analysis.dataset import append, ingested_dirs
    from harness.analysis.runs import BadRun, candidate_dirs, rows_for_run

    saved = stamp.load(out, PAGE)
    spark = None if saved is not None else spark_of()
    done = saved.runs if saved is not None else ingested_dirs(spark, out)
    rows, new, warnings = [], 0, []
    for run_dir in candidate_dirs(store):
        if str(run_dir.resolve()) in done:
            continue
        try:
            rows += rows_for_run(run_dir)
            new += 1
        except BadRun as e:
            warnings.append(f"harness analyze: skipping {e}")
    counts = f"{len(done)} already in the dataset, {len(warnings)} skipped; dataset {out}"
    if saved is not None and not rows:
        # nothing new, and the dataset is the one the tables were computed from: no Spark
        return Outcome(saved.tables, f"ingested 0 new run(s), {counts}; tables unchanged (no Spark)", warnings)
    spark = spark or spark_of()
    parts = append(spark, out, rows)
    tables = compute_tables(spark, out)
    summary = f"ingested {new} new run(s) ({parts} part file(s)), {counts}"
    write_tables(spark, tables, out, summary)
    stamp.save(out, {*done, *(r.run_dir for r in rows)}, tables)
    return Outcome(tables, summary, warnings)


def compute_tables(spark: SparkSession, out: Path, *, jvm: bool | None = None) -> list[Table]:
    """The four tables of the dataset under ``out``; both pairings by the JVM's walk of each run
    (``tables.run_pairs``) when the session has the project's jar (``jvm`` None) or ``jvm`` is True,
    else by their windows (``tables.recovery_pairs``, ``tables.op_pairs``): the same rows."""
    from checkers import udfs
    from harness.analysis import tables as tb
    from harness.analysis.dataset import read_checks, read_events
    from harness.analysis.pairing import Flaky, LatencyRow, Rate, RecoveryRow

    checks, events = read_checks(spark, out), read_events(spark, out)
    heals = ops = cached = None
    if jvm is None:
        jvm = udfs.jar_loaded(spark)
    if events is not None and jvm:
        # one exchange and one walk per run for both pairings; their rows kept for the two tables
        cached = tb.run_pairs(tb.pairing_events(events)).cache()
        heals, ops = tb.heals_and_ops(cached)
    elif events is not None:
        # the two pairings read the same few events: select and parse them once
        cached = tb.pairing_events(events).cache()
        heals, ops = tb.recovery_pairs(cached), tb.op_pairs(cached)
    tables = [
        tb.Table("anomaly_rate", "anomaly rate per checker × toggle set × fault type",
                 tb.anomaly_rates(checks) if checks is not None else [], Rate),
        tb.Table("heal_to_registration", "time from heal to re-registration (ms) per fault type",
                 tb.recovery_times(heals) if heals is not None else [], RecoveryRow),
        tb.Table("op_latency", "client operation latency (ms) per workload and op",
                 tb.op_latencies(ops, checks) if ops is not None and checks is not None else [], LatencyRow),
        tb.Table("flaky", "flaky configurations: verdicts differ across seeds/repeats",
                 tb.flaky_configs(checks) if checks is not None else [], Flaky),
    ]
    if cached is not None:
        cached.unpersist()
    return tables


def write_tables(spark: SparkSession, tables: list[Table], out: Path, summary: str) -> None:
    from harness.analysis.page import write_page
    from harness.analysis.tables import write_csv, write_parquet

    out.mkdir(parents=True, exist_ok=True)
    for t in tables:
        write_csv(t, out / f"{t.name}.csv")
        write_parquet(spark, t, out / f"{t.name}.parquet")
    write_page(tables, summary, out / PAGE)


def warm_up(spark: SparkSession, runs: int = WARM_UP_RUNS, lines: int = WARM_UP_LINES) -> float:
    """Run the job on ``runs`` copies of a stored run (the check's warm-up history,
    ``checkers.project.WARM_UP_HISTORY``: a run of the queue workload with an isolated broker, so
    heals, registrations and client operations; its history repeated to ``lines`` lines) in a
    temporary store, removed after; the seconds it took. A file shipped with the package: nothing is
    written outside the temporary directory."""
    from checkers.project import WARM_UP_HISTORY

    t0 = time.perf_counter()
    history = [ln for ln in WARM_UP_HISTORY.read_text(encoding="utf-8").splitlines() if ln.strip()]
    text = "\n".join(history * -(-lines // len(history))) + "\n"
    with owned_tempdir(WARM_UP_PREFIX) as tmp:
        store = Path(tmp) / "store"
        for i in range(runs):
            run_dir = store / "warm-up" / f"20260101T000000.{i:03d}"
            run_dir.mkdir(parents=True)
            (run_dir / "run.json").write_text(json.dumps({"test": "warm-up", "run_id": f"warm-up-{i}",
                                                          "workload": "queue"}), encoding="utf-8")
            (run_dir / "results.json").write_text(json.dumps({"valid": True}), encoding="utf-8")
            (run_dir / "history.jsonl").write_text(text, encoding="utf-8")
        analyze(store, Path(tmp) / "out", lambda: spark)
    return time.perf_counter() - t0
