"""harness analyze: ingest stored runs not yet in the Parquet dataset under ``<store>/analysis/``
(partitioned by test and date), then print the cross-run tables (anomaly rate per checker × toggle
set × fault type; time from heal to re-registration per fault type; client operation latency per
workload and op; flaky configurations) and write each as CSV and Parquet, plus analysis.html with
plots. A corrupt or half-written run directory is skipped with a one-line warning naming it. A call
that finds nothing new, over the dataset the saved tables were computed from, prints those tables
and starts no Spark (``harness.analysis.stamp``). With a batch check server running on the same master
(``harness check-server start --batch``), the job runs on the server's warm session
(``harness.analysis.job``: the same code either way).
Exit 0; 254 when the store does not exist, ``--out`` cannot be written or ``--spark-master`` is no master
URL; 2 when a ``spark://`` master does not answer."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from base.errors import EXIT_BAD_INPUT
from checkers.spark import add_master_flag
from harness.outputs import writable_dir
from harness.terminal import output_console

if TYPE_CHECKING:
    from harness.checkserver import ServerState


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="ingest stored runs into a Parquet dataset and print cross-run tables",
                       description=__doc__)
    p.add_argument("store_pos", nargs="?", metavar="STORE", help="store directory (same as --store)")
    p.add_argument("--store", default=None, help="store directory (default: store)")
    p.add_argument("--out", default=None, help="dataset and tables directory (default: STORE/analysis)")
    add_master_flag(p)
    p.add_argument("--no-server", action="store_true",
                   help="run in this process even when a batch check server (`harness check-server start --batch`) "
                        "is running")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.analysis.job import PAGE
    from harness.analysis.runs import ANALYSIS_DIR
    from harness.analysis.tables import render

    store = Path(args.store_pos or args.store or "store")
    if not store.is_dir():
        print(f"harness analyze: {store}: no such store directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = writable_dir(Path(args.out) if args.out else store / ANALYSIS_DIR, "--out")
    console = output_console()
    t0 = time.monotonic()
    remote = _server_for(args)
    if remote is not None:
        from harness.checkserver import analyze_remote

        print(f"harness analyze: on the batch check server (pid {remote.pid}, {remote.master})", file=sys.stderr)
        outcome = analyze_remote(remote, store, out)
    else:
        from checkers.spark import check_master, get_spark
        from harness.analysis.job import analyze

        check_master(args.spark_master)
        outcome = analyze(store, out, lambda: get_spark(args.spark_master))
    for line in outcome.warnings:
        print(line, file=sys.stderr)
    for t in outcome.tables:
        console.print(render(t))
    console.print(f"{outcome.summary}; tables {out}/{{{','.join(t.name for t in outcome.tables)}}}.{{csv,parquet}}, "
                  f"{out / PAGE}; {time.monotonic() - t0:.1f}s")
    return 0


def _server_for(args: argparse.Namespace) -> ServerState | None:
    """The running check server when it can take this job (none with ``--no-server``): started with
    ``--batch`` (a session tuned for throughput: on a latency-tuned session an ingest of 9M events took
    twice as long) and on the same master."""
    from harness import checkserver as server

    return None if args.no_server else server.serving(args.spark_master, batch=True)
