"""`harness check-server start|stop|status`: a warm SparkSession for `harness check`, and with `--batch`
for `harness analyze` too (harness.checkserver)."""

from __future__ import annotations

import argparse
import sys
import time

from base.bounds import MAX_BUDGET_S, finite_float
from base.errors import UsageError
from checkers.project import check_preflight
from checkers.spark import add_master_flag


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-server", help="keep a warm Spark session that `harness check` uses",
                       description=__doc__)
    p.add_argument("action", choices=("start", "stop", "status"))
    add_master_flag(p, "Spark master of the server's session; `harness check` uses the server only for the same master")
    p.add_argument("--idle-timeout", type=finite_float(0, MAX_BUDGET_S, lo_open=True), default=None, metavar="S",
                   help="stop after S seconds without a check (default 3600)")
    p.add_argument("--batch", action="store_true",
                   help="tune the session for large inputs and take `harness analyze` jobs as well (default: "
                        "tuned for the latency of a run's check)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness import checkserver as server

    if args.action != "start" and (args.spark_master or args.idle_timeout is not None or args.batch):
        raise UsageError(f"--spark-master, --idle-timeout and --batch go with `check-server start`, not {args.action}")
    if args.action == "start":
        if args.idle_timeout is not None and args.idle_timeout <= 0:
            raise UsageError("--idle-timeout must be positive")
        check_preflight(args.spark_master)  # before a detached process fails where no one reads it
        t0 = time.monotonic()
        try:
            st, started = server.start(args.spark_master, args.idle_timeout or server.DEFAULT_IDLE_TIMEOUT_S,
                                       batch=args.batch)
        except server.NotReady as e:
            print(f"harness check-server: {e}", file=sys.stderr)
            return 1
        if started:
            print(f"check server started in {time.monotonic() - t0:.1f}s: pid {st.pid} on 127.0.0.1:{st.port}, "
                  f"session {st.master} ({_profile(st.batch)}; log {st.log})")
            return 0
        print(f"check server already running: pid {st.pid} on 127.0.0.1:{st.port}, "
              f"session {st.master} ({_profile(st.batch)})")
        if st.batch != args.batch:
            print(f"harness check-server: the running server is {_profile(st.batch)}, not "
                  f"{_profile(args.batch)}: `harness check-server stop` first", file=sys.stderr)
            return 1
        return 0
    if args.action == "stop":
        pid = server.stop()
        print("check server: none running" if pid is None else f"check server pid {pid} stopped")
        return 0
    st = server.read_state()
    if st is None:
        print("check server: none running")
        return 1
    info = server.status(st)
    served = info["served"]
    print(f"check server pid {st.pid} on 127.0.0.1:{st.port}, session {st.master} ({_profile(st.batch)}): "
          f"up {info['uptime_s']:.0f}s, {served['check']} check(s) served"
          + (f", {served['analyze']} analyze job(s)" if st.batch else "") + f" (log {st.log})")
    return 0


def _profile(batch: bool) -> str:
    return "batch: checks and analyze jobs" if batch else "quick: checks"
