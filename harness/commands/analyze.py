"""harness analyze: ingest stored runs not yet in the Parquet dataset under ``<store>/analysis/``
(partitioned by test and date), then print the cross-run tables (anomaly rate per checker × toggle
set × fault type; time from heal to re-registration per fault type; client operation latency per
workload and op; flaky configurations) and write each as CSV and Parquet, plus analysis.html with
plots. A corrupt or half-written run directory is skipped with a one-line warning naming it. A call
that finds nothing new, over the dataset the saved tables were computed from, prints those tables
and starts no Spark (``harness.analysis.stamp``).
Exit 0, or 254 when the store does not exist."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import EXIT_BAD_INPUT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from harness.analysis.tables import Table

PAGE = "analysis.html"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="ingest stored runs into a Parquet dataset and print cross-run tables",
                       description=__doc__)
    p.add_argument("store_pos", nargs="?", metavar="STORE", help="store directory (same as --store)")
    p.add_argument("--store", default=None, help="store directory (default: store)")
    p.add_argument("--out", default=None, help="dataset and tables directory (default: STORE/analysis)")
    p.add_argument("--spark-master", help="Spark master (default $HARNESS_SPARK_MASTER or local[*])")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from checkers.spark import get_spark
    from harness.analysis import stamp
    from harness.analysis.dataset import append, ingested_dirs
    from harness.analysis.runs import ANALYSIS_DIR, BadRun, candidate_dirs, rows_for_run
    from harness.analysis.tables import render

    store = Path(args.store_pos or args.store or "store")
    if not store.is_dir():
        print(f"harness analyze: {store}: no such store directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = Path(args.out) if args.out else store / ANALYSIS_DIR
    console = Console()
    t0 = time.monotonic()
    saved = stamp.load(out, PAGE)
    spark = None if saved is not None else get_spark(args.spark_master)
    done = saved.runs if saved is not None else ingested_dirs(spark, out)
    rows, new, skipped = [], 0, 0
    for run_dir in candidate_dirs(store):
        if str(run_dir.resolve()) in done:
            continue
        try:
            rows += rows_for_run(run_dir)
            new += 1
        except BadRun as e:
            skipped += 1
            print(f"harness analyze: skipping {e}", file=sys.stderr)
    counts = f"{len(done)} already in the dataset, {skipped} skipped; dataset {out}"
    if saved is not None and not rows:
        # nothing new, and the dataset is the one the tables were computed from: no Spark
        tables, summary = saved.tables, f"ingested 0 new run(s), {counts}; tables unchanged (no Spark)"
    else:
        spark = spark or get_spark(args.spark_master)
        parts = append(spark, out, rows)
        tables = compute_tables(spark, out)
        summary = f"ingested {new} new run(s) ({parts} part file(s)), {counts}"
        write_tables(spark, tables, out, summary)
        stamp.save(out, {*done, *(r.run_dir for r in rows)}, tables)
    for t in tables:
        console.print(render(t))
    console.print(f"{summary}; tables {out}/{{{','.join(t.name for t in tables)}}}.{{csv,parquet}}, "
                  f"{out / PAGE}; {time.monotonic() - t0:.1f}s")
    return 0


def compute_tables(spark: SparkSession, out: Path) -> list[Table]:
    from harness.analysis import tables as tb
    from harness.analysis.dataset import read_checks, read_events
    from harness.analysis.pairing import Flaky, LatencyRow, Rate, RecoveryRow

    checks, events = read_checks(spark, out), read_events(spark, out)
    # the two pairings read the same few events: select and parse them once
    paired = tb.pairing_events(events).cache() if events is not None else None
    tables = [
        tb.Table("anomaly_rate", "anomaly rate per checker × toggle set × fault type",
                 tb.anomaly_rates(checks) if checks is not None else [], Rate),
        tb.Table("heal_to_registration", "time from heal to re-registration (ms) per fault type",
                 tb.recovery_times(paired) if paired is not None else [], RecoveryRow),
        tb.Table("op_latency", "client operation latency (ms) per workload and op",
                 tb.op_latencies(paired, checks) if paired is not None and checks is not None else [], LatencyRow),
        tb.Table("flaky", "flaky configurations: verdicts differ across seeds/repeats",
                 tb.flaky_configs(checks) if checks is not None else [], Flaky),
    ]
    if paired is not None:
        paired.unpersist()
    return tables


def write_tables(spark: SparkSession, tables: list[Table], out: Path, summary: str) -> None:
    from harness.analysis.page import write_page
    from harness.analysis.tables import write_csv, write_parquet

    out.mkdir(parents=True, exist_ok=True)
    for t in tables:
        write_csv(t, out / f"{t.name}.csv")
        write_parquet(spark, t, out / f"{t.name}.parquet")
    write_page(tables, summary, out / PAGE)

