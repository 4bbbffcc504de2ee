"""harness analyze: ingest stored runs not yet in the Parquet dataset under ``<store>/analysis/``
(partitioned by test and date), then print the cross-run table "anomaly rate per checker × toggle
set × fault type" and write it as CSV. A corrupt or half-written run directory is skipped with a
one-line warning naming it. Exit 0, or 254 when the store does not exist."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.errors import EXIT_BAD_INPUT

RATES_CSV = "anomaly_rate.csv"


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

    from harness.analysis.dataset import append, ingested_dirs, read_checks
    from harness.analysis.runs import ANALYSIS_DIR, BadRun, candidate_dirs, rows_for_run
    from harness.analysis.tables import anomaly_rates, render, write_csv

    store = Path(args.store_pos or args.store or "store")
    if not store.is_dir():
        print(f"harness analyze: {store}: no such store directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = Path(args.out) if args.out else store / ANALYSIS_DIR
    console = Console()
    t0 = time.monotonic()
    from checkers.spark import get_spark

    spark = get_spark(args.spark_master)
    done = ingested_dirs(spark, out)
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
    parts = append(spark, out, rows)
    checks = read_checks(spark, out)
    rates = anomaly_rates(checks) if checks is not None else []
    console.print(render(rates))
    write_csv(rates, out / RATES_CSV)
    console.print(f"ingested {new} new run(s) ({parts} part file(s)), {len(done)} already in the dataset, "
                  f"{skipped} skipped; dataset {out}; table {out / RATES_CSV}; {time.monotonic() - t0:.1f}s")
    return 0
