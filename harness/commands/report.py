"""`harness report RUN_DIR` (re)writes one run's report.html; `harness serve STORE_DIR` serves the
store read-only on loopback (127.0.0.1, a port allocated at start unless --port).

A history with a line that is not a valid event is reported up to that line; `harness report` then
names the line on stderr and exits 254 (bad input), the report written all the same."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from base.bounds import bounded_int
from base.errors import EXIT_BAD_INPUT, UsageError
from base.parsing import summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="(re)write a run's HTML report (RUN_DIR/report.html)",
                       description=summary(__doc__))
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory, e.g. store/latest or store/<test>/latest")
    p.set_defaults(func=report)
    s = sub.add_parser("serve", help="serve the store read-only on http://127.0.0.1:PORT",
                       description="Serve STORE_DIR read-only on loopback: an index of the runs and their reports.")
    s.add_argument("store", metavar="STORE_DIR", nargs="?", default="store", help="the store (default: ./store)")
    s.add_argument("--port", type=bounded_int(0, 65535), default=0, help="TCP port on 127.0.0.1 (default: allocated at start)")
    s.set_defaults(func=serve)


def report(args: argparse.Namespace) -> int:
    from harness.report import write_report

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"report: {run_dir}: not a directory")
    run_dir = run_dir.resolve()  # store/latest → the run it points at
    if not (run_dir / "history.jsonl").exists() and not (run_dir / "run.json").exists():
        raise UsageError(f"report: {run_dir}: not a run directory (no run.json or history.jsonl)")
    path, problem = write_report(run_dir)
    print(path)
    if problem is not None:  # the report is written all the same: it shows what was recorded before
        print(f"harness report: {problem} (the report stops there)", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def serve(args: argparse.Namespace) -> int:
    from harness.report.serve import StoreServer

    store = Path(args.store)
    if not store.is_dir():
        raise UsageError(f"serve: {store}: not a directory")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"serve: --port {args.port}: not a TCP port (0-65535)")
    try:
        server = StoreServer(store, args.port)
    except OSError as e:
        raise UsageError(f"serve: cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}") from e

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        print(f"serving {server.store} at {server.url} (Ctrl-C to stop)", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        print("serve: stopped", file=sys.stderr)
    finally:
        server.close()
        signal.signal(signal.SIGTERM, previous)
    return 0
