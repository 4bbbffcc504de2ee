"""Benchmark: `harness check` on one stored run from a cold process vs a bare local SparkSession
start plus one count from a cold process, side by side, and where the check's time goes. Not a test.

Usage: python bench/check_latency.py [PATH] [--repeat N]

PATH is a store dir or a history.jsonl (default: the newest run under tests/data/store, so the bench
runs on a fresh clone). Each round runs, each in its own fresh Python process, alternating so that
load from other processes falls on both alike:

1. bare: ``SparkSession.builder.master("local[*]").getOrCreate()`` then ``spark.range(1).count()``,
   with Spark's defaults (the yardstick of issue 13: the check's target is <= 1.2x this);
2. check: ``harness check PATH --json --no-server`` (the CLI, as a user runs it, checking in its own
   process: JVM start included); then the same with ``HARNESS_CHECK_LANES=1``, the checkers one
   after another instead of their lanes at once (docs/checking.md, "Lanes");
3. server: ``harness check PATH --json`` from a fresh process while a check server
   (``harness check-server start``, started once before the rounds and stopped after them; its
   start-up is printed apart) holds a warm session;
4. breakdown: the same check in-process, one lane at a time (so the steps add up), timed by step: Python imports, SparkSession start
   (``checkers.spark.get_spark``: JVM, context, the project's settings), loading the history
   (``checkers.events_df.load``) and every checker in report order
   (``checkers.project.check_histories(timings=...)``; a family's shared job is paid by its first
   checker: the plans by ``single_registrant``, the per-broker sweep by ``registration_epochs``).

Wall times are per process, from launch to exit, so they include interpreter start and shutdown.
The median of the rounds is printed. On a shared machine, say how loaded it was (``uptime``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from spark_up import jvm_cpu  # bench/ is on sys.path: this script's directory

from base.parsing import summary
from checkers.project import LANES_ENV
from harness.phases import sigterm_as_interrupt

ROOT = Path(__file__).resolve().parent.parent
BARE = """
import os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
from spark_up import jvm_cpu
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[*]").getOrCreate()
spark.range(1).count()
print(jvm_cpu(spark))
spark.stop()
"""
CHECK = "import sys; from harness.cli import main; sys.exit(main())"


def default_path() -> Path:
    runs = sorted((ROOT / "tests" / "data" / "store").glob("*/*/history.jsonl"), key=lambda p: p.parent.name)
    if not runs:
        raise SystemExit("no stored run under tests/data/store: pass PATH")
    return runs[-1].parent


def timed(argv: list[str], **extra_env: str) -> tuple[float, str]:
    """(wall seconds, stdout) of a fresh process; its exit code must be 0-2 (a verdict)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (str(ROOT), os.environ.get("PYTHONPATH")) if x),
           **extra_env}
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1, 2):
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"{' '.join(argv[:4])}... exited {p.returncode}")
    return wall, p.stdout


def breakdown(path: str) -> None:
    """Child process: the check timed step by step, as one JSON object on stdout."""
    t0 = time.perf_counter()
    from checkers import project
    from checkers.events_df import SMALL_BYTES
    from checkers.spark import get_spark, stop_spark

    steps: dict[str, float] = {"imports": time.perf_counter() - t0}
    hist = str(Path(path) / "history.jsonl") if Path(path).is_dir() else path
    t = time.perf_counter()
    spark = get_spark(quick=Path(hist).stat().st_size <= SMALL_BYTES)  # as harness check decides
    steps["spark_session"] = time.perf_counter() - t
    cpu_up = jvm_cpu(spark)
    timings: dict[str, float] = {}
    got = project.check_histories([hist], spark=spark, timings=timings)
    timings.pop("session", None)  # the session was given: 0
    steps.update(timings)
    cpu = {"spark_session": cpu_up, "check": jvm_cpu(spark) - cpu_up}
    stop_spark()
    print(json.dumps({"steps": steps, "cpu": cpu, "verdict": str(got[hist]["valid"]),
                      "events": got[hist]["stats"].get("events")}))


def main() -> int:
    ap = argparse.ArgumentParser(description=summary(__doc__))
    ap.add_argument("path", nargs="?", help="store dir or history.jsonl (default: newest under tests/data/store)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds (median printed; default 1)")
    ap.add_argument("--breakdown", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.breakdown:
        breakdown(args.path)
        return 0
    if args.repeat < 1:
        print("check_latency: --repeat must be at least 1", file=sys.stderr)
        return 254
    path = Path(args.path) if args.path else default_path()
    if not path.exists():
        print(f"check_latency: {path}: no such file or directory", file=sys.stderr)
        return 254
    py = sys.executable
    bare, bare_cpu, check, one_lane, served, steps = [], [], [], [], [], []
    verdict = "-"
    from harness import checkserver as server

    ours = server.read_state() is None
    server_up, _ = timed([py, "-c", CHECK, "check-server", "start"])
    try:
        for i in range(args.repeat):
            wall, out = timed([py, "-c", BARE])
            bare.append(wall)
            bare_cpu.append(float(out.split()[-1]))
            wall, out = timed([py, "-c", CHECK, "check", str(path), "--json", "--no-server"])
            check.append(wall)
            verdict = json.loads(out.splitlines()[-1])["valid"]
            wall, out = timed([py, "-c", CHECK, "check", str(path), "--json", "--no-server"], **{LANES_ENV: "1"})
            one_lane.append(wall)
            if json.loads(out.splitlines()[-1])["valid"] != verdict:
                raise SystemExit("the check one lane at a time gives another verdict than with its lanes at once")
            wall, out = timed([py, "-c", CHECK, "check", str(path), "--json"])
            served.append(wall)
            if json.loads(out.splitlines()[-1])["valid"] != verdict:
                raise SystemExit("the check server's verdict differs from the in-process check's")
            # one lane at a time: each step's seconds are its own, and they add up
            _, out = timed([py, str(Path(__file__).resolve()), "--breakdown", str(path)], **{LANES_ENV: "1"})
            steps.append(json.loads(out.splitlines()[-1]))
            print(f"round {i + 1}/{args.repeat}: bare {bare[-1]:.1f} s, harness check {check[-1]:.1f} s "
                  f"({one_lane[-1]:.1f} s one lane at a time), on the check server {served[-1]:.1f} s", flush=True)
    finally:
        if ours:
            server.stop()

    b, c = statistics.median(bare), statistics.median(check)
    load = os.getloadavg()
    print(f"\n{path}: {steps[-1]['events']} events, verdict {verdict}; {os.cpu_count()} cores, "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; median of {args.repeat}")
    print(f"{'cold process':<34}{'seconds':>9}{'x bare':>9}")
    print(f"{'bare SparkSession + range(1).count':<34}{b:>9.2f}{1.0:>9.2f}")
    sv = statistics.median(served)
    print(f"{'harness check PATH (in-process)':<34}{c:>9.2f}{c / b:>9.2f}   (target <= 1.20)")
    ol = statistics.median(one_lane)
    print(f"{'  the same, one lane at a time':<34}{ol:>9.2f}{ol / b:>9.2f}   (${LANES_ENV}=1: the checkers one after another)")
    print(f"{'harness check PATH (check server)':<34}{sv:>9.2f}{sv / b:>9.2f}   (target <= 1.20; the server "
          f"{'started' if ours else 'was already running'}{f' once in {server_up:.1f} s' if ours else ''})")
    cpu = {k: statistics.median(s["cpu"][k] for s in steps) for k in steps[-1]["cpu"]}
    bc = statistics.median(bare_cpu)
    print("\nJVM CPU seconds (user+system; less sensitive to load than wall)")
    print(f"{'bare: session + range(1).count':<34}{bc:>9.2f}{1.0:>9.2f}")
    print(f"{'check: session start':<34}{cpu['spark_session']:>9.2f}{cpu['spark_session'] / bc:>9.2f}")
    print(f"{'check: load + checkers':<34}{cpu['check']:>9.2f}{cpu['check'] / bc:>9.2f}")
    print("\nbreakdown of the check in one cold process, one lane at a time (in-process steps; wall above adds "
          "interpreter start/exit)")
    names = list(steps[-1]["steps"])
    med = {n: statistics.median(s["steps"].get(n, 0.0) for s in steps) for n in names}
    total = sum(med.values())
    print(f"{'step':<34}{'seconds':>9}{'% steps':>9}{'x bare':>9}")
    for n in names:
        print(f"{n:<34}{med[n]:>9.2f}{100 * med[n] / total:>8.0f}%{med[n] / b:>9.2f}")
    print(f"{'sum of steps':<34}{total:>9.2f}{100.0:>8.0f}%{total / b:>9.2f}")
    return 0


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
