"""`harness run`: one test run on the inventory's cluster, ending with a Spark-checked verdict."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from agent.config import ConfigError, parse_toggle_args
from harness.errors import UsageError
from harness.run import RunOptions, execute


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="bring up the cluster, inject faults, check the history on Spark",
                       description=__doc__)
    p.add_argument("--inventory", metavar="FILE", help="inventory TOML (default: inventory/local.toml)")
    p.add_argument("--time-limit", type=float, default=20.0, metavar="S",
                   help="seconds of fault schedule (default 20); setup and recovery come on top")
    p.add_argument("--store", metavar="DIR", default=None, help="store directory (default: ./store)")
    p.add_argument("--spark-master", metavar="URL", help="Spark master (default local[*], env HARNESS_SPARK_MASTER)")
    p.add_argument("--toggle", action="append", default=[], metavar="NAME=VALUE",
                   help="agent bug toggle, repeatable (see `harness agent --help`)")
    p.add_argument("--target", type=int, metavar="BROKER_ID", help="broker to isolate (default: seeded random)")
    p.add_argument("--seed", type=int, help="random seed (recorded in run.json)")
    p.add_argument("--margin-ms", type=int, default=3000,
                   help="liveness margin on top of the session timeout (default 3000)")
    p.add_argument("--schedule", metavar="FILE", help="scripted fault schedule (TOML) to replay instead of the default")
    p.add_argument("--faults", metavar="F1,F2",
                   help="random package of these faults instead of the default isolate (e.g. partition,kill,pause); "
                        "seeded by --seed, with a final heal and a recovery wait")
    p.add_argument("--interval", type=float, default=5.0, metavar="S",
                   help="mean seconds between a packaged fault's start and stop (default 5)")
    p.add_argument("--zkproxy", action="store_true",
                   help="route agent→ZooKeeper traffic through the ZooKeeper wire proxy (enables fault zk_rules)")
    p.add_argument("--test", default=None, help="test name used in the store path")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    console = Console()
    try:
        toggles = parse_toggle_args(args.toggle)
    except ConfigError as e:
        raise UsageError(str(e)) from e
    schedule = None
    if args.schedule:
        from nemesis.scripted import load_schedule

        schedule = load_schedule(args.schedule)
    opts = RunOptions(inventory=args.inventory, time_limit=args.time_limit, spark_master=args.spark_master,
                      toggles=toggles, target=args.target, seed=args.seed, margin_ms=args.margin_ms,
                      schedule=schedule, zkproxy=args.zkproxy,
                      package_faults=[f.strip() for f in args.faults.split(",") if f.strip()] if args.faults else [],
                      package_interval=args.interval)
    if args.faults and schedule is not None:
        raise UsageError("--faults and --schedule: choose one")
    if args.store:
        opts.store = args.store
    if args.test:
        opts.test = args.test
    elif schedule is not None:
        opts.test = Path(args.schedule).stem
    outcome = execute(opts, console)
    print_verdict(console, outcome.results, outcome.run_dir)
    return outcome.exit_code


def print_verdict(console: Console, results: dict, run_dir: Path) -> None:
    valid = results["valid"]
    colour = {True: "green", False: "red"}.get(valid, "yellow")
    word = {True: "valid", False: "invalid"}.get(valid, "unknown")
    for name, sub in results.get("checkers", {}).items():
        console.print(f"  {name}: {sub['valid']}  {sub.get('stats', {})}")
    for a in results.get("anomalies", [])[:20]:
        console.print(f"  [red]anomaly[/] {a['checker']}: {a['message']}  events {', '.join(a['event_ids'])}")
    console.print(f"[bold {colour}]{word}[/]  results: {run_dir / 'results.json'}")
