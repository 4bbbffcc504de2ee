"""`harness hunt`: search fault schedules (Hypothesis) until the checker reports invalid, shrink the
failing schedule, write it as a scripted TOML file and replay it with `harness run --schedule`.

Every example is a whole real run (cluster up, faults, recovery, Spark check), so the budget is
small by default: --max-runs 10 counts the search and shrink runs (the replay comes on top).
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console

from harness.errors import UsageError

DEFAULT_OUT = "store/hunt/minimal.toml"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hunt", help="search fault schedules for a failure, shrink it, write it as a schedule file",
                       description=__doc__)
    p.add_argument("--inventory", metavar="FILE", help="inventory TOML (default: inventory/local.toml)")
    p.add_argument("--toggle", action="append", default=[], metavar="NAME=VALUE", help="agent bug toggle, repeatable")
    p.add_argument("--max-runs", type=int, default=10, metavar="N",
                   help="runs for search + shrinking (default 10; the replay is one more)")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="S",
                   help="seconds of fault schedule per run (default 10)")
    p.add_argument("--faults", default=None, metavar="F1,F2",
                   help="faults to search over (default isolate,pause,partition,kill)")
    p.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0)")
    p.add_argument("--out", metavar="FILE", default=DEFAULT_OUT, help=f"minimal schedule file (default {DEFAULT_OUT})")
    p.add_argument("--store", metavar="DIR", default=None, help="store directory (default: ./store)")
    p.add_argument("--spark-master", metavar="URL", help="Spark master (default local[*])")
    p.add_argument("--margin-ms", type=int, default=3000, help="liveness margin (default 3000)")
    p.add_argument("--no-replay", action="store_true", help="do not replay the written schedule")
    p.set_defaults(func=run_hunt)


def run_hunt(args: argparse.Namespace) -> int:
    from harness.agent.config import ConfigError, parse_toggle_args
    from harness.inventory import load_inventory
    from harness.run import RunOptions, execute
    from nemesis.registry import FAULTS
    from nemesis.scripted import dump_schedule, load_schedule
    from nemesis.search import HUNT_FAULTS, describe, hunt, hunt_targets, signatures

    console = Console()
    quiet = Console(quiet=True)
    try:
        toggles = parse_toggle_args(args.toggle)
    except ConfigError as e:
        raise UsageError(str(e)) from e
    if args.max_runs < 1:
        raise UsageError(f"--max-runs: must be >= 1, got {args.max_runs}")
    if args.time_limit < 2:
        raise UsageError(f"--time-limit: must be >= 2 seconds, got {args.time_limit}")
    faults = [f.strip() for f in args.faults.split(",") if f.strip()] if args.faults else list(HUNT_FAULTS)
    bad = [f for f in faults if f not in FAULTS]
    if bad or not faults:
        raise UsageError(f"--faults: unknown {bad} (known: {', '.join(FAULTS)})")
    inv = load_inventory(args.inventory)
    base = RunOptions(inventory=args.inventory, time_limit=args.time_limit, spark_master=args.spark_master,
                      toggles=toggles, seed=args.seed, margin_ms=args.margin_ms, test="hunt")
    if args.store:
        base.store = args.store

    def run_one(schedule, n):  # type: ignore[no-untyped-def]
        base.schedule = schedule
        return execute(base, quiet)

    t0 = time.monotonic()
    console.print(f"[bold]hunt[/] toggles={toggles or '{}'} faults={','.join(faults)} "
                  f"max-runs={args.max_runs} time-limit={args.time_limit:g}s seed={args.seed}")
    res = hunt(run_one, faults=faults, targets=hunt_targets([b.name for b in inv.brokers],
                                                            [z.name for z in inv.zookeepers], faults),
               time_limit=args.time_limit, max_runs=args.max_runs, seed=args.seed,
               progress=lambda m: console.print(m, highlight=False))
    if not res.found or res.schedule is None:
        console.print(f"[bold green]no failure[/] in {res.runs} runs ({time.monotonic() - t0:.0f}s)")
        return 0
    checker, broker = res.signature  # type: ignore[misc]
    res.schedule.name = "hunt-minimal"
    out = dump_schedule(res.schedule, args.out, comment=(
        f"found by `harness hunt` (seed {args.seed}, {res.runs} runs) with toggles {toggles}\n"
        f"anomaly: {checker} on broker {broker}; first failing run: {res.run_dir}\n"
        f"first failing schedule: {describe(res.first_schedule) if res.first_schedule else '?'}\n"
        f"replay: harness run --schedule {args.out} --time-limit {args.time_limit:g}"
        + "".join(f" --toggle {t}" for t in args.toggle)))
    console.print(f"[bold red]found[/] {checker} on broker {broker} after {res.runs} runs; minimal schedule: "
                  f"{describe(res.schedule)}", highlight=False)
    console.print(f"wrote {out}")
    if args.no_replay:
        return 1
    base.schedule = load_schedule(out)
    base.test = "hunt-replay"
    outcome = execute(base, quiet)
    sigs = signatures(outcome.results)
    same = (checker, broker) in sigs
    console.print(f"replay {outcome.run_dir}: {'[red]same anomaly[/]' if same else '[yellow]not reproduced[/]'} "
                  f"({', '.join(f'{c}/broker {b}' for c, b in sigs) or 'valid'}) in {time.monotonic() - t0:.0f}s total")
    return 1 if same else 2
