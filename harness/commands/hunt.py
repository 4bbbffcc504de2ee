"""`harness hunt`: search fault schedules (Hypothesis) until the checker reports invalid, shrink the
failing schedule, write it as a scripted TOML file and replay it with `harness run --schedule`.

Every example is a whole real run (cluster up, faults, recovery, Spark check), so the budget is
small by default: --max-runs 10 counts the search and shrink runs (the replays come on top).

Shrinking stops at the edge of the failure, so the minimal schedule can be borderline. The hunt
replays it; if the anomaly does not come back it widens every fault window by the agents' session
timeout and replays again (--replays in all), and writes the schedule that reproduced.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from base.bounds import MAX_SECONDS, MAX_SEED, bounded_int, finite_float, names_list
from base.errors import UsageError
from base.parsing import summary
from harness.outputs import writable_file
from harness.terminal import output_console

DEFAULT_OUT = "store/hunt/minimal.toml"
MAX_HUNT_RUNS = 10_000  # each a whole real run
MAX_REPLAYS = 100


def register(sub: argparse._SubParsersAction) -> None:
    from harness.commands.run import add_common_args

    p = sub.add_parser("hunt", help="search fault schedules for a failure, shrink it, write it as a schedule file",
                       description=summary(__doc__))
    add_common_args(p, time_limit=10.0)
    p.add_argument("--max-runs", type=bounded_int(1, MAX_HUNT_RUNS), default=10, metavar="N",
                   help="runs for search + shrinking (default 10; the replay is one more)")
    p.add_argument("--faults", default=None, metavar="F1,F2", type=names_list,
                   help="faults to search over (default isolate,pause,partition,kill)")
    p.add_argument("--min-fault", type=finite_float(0, MAX_SECONDS, lo_open=True), default=0.5, metavar="S",
                   help="shortest fault window to try, seconds (default 0.5; the search grid is 0.5 s)")
    p.add_argument("--replays", type=bounded_int(0, MAX_REPLAYS), default=3, metavar="N",
                   help="replays to confirm the written schedule, widening it after each miss (default 3)")
    p.add_argument("--seed", type=bounded_int(0, MAX_SEED), default=0, help="Hypothesis seed (default 0)")
    p.add_argument("--out", metavar="FILE", default=DEFAULT_OUT, help=f"minimal schedule file (default {DEFAULT_OUT})")
    p.add_argument("--no-replay", action="store_true", help="do not replay the written schedule (same as --replays 0)")
    p.set_defaults(func=run_hunt)


def judge(args: argparse.Namespace) -> tuple[list[str], dict, Any]:
    """(faults, toggles, inventory) of a hunt's flags, every flag judged (``UsageError``) before
    anything starts."""
    from base.inventory import load_inventory
    from harness.commands.run import spec_from_args, toggles_from_args
    from nemesis.registry import FAULTS
    from nemesis.schedule import Schedule
    from nemesis.search import HUNT_FAULTS, duration_steps

    toggles = toggles_from_args(args)
    if args.max_runs < 1:
        raise UsageError(f"--max-runs: must be >= 1, got {args.max_runs}")
    if not 2 <= args.time_limit <= MAX_SECONDS:
        raise UsageError(f"--time-limit: must be in [2, {MAX_SECONDS:g}] seconds, got {args.time_limit}")
    if args.replays < 0:
        raise UsageError(f"--replays: must be >= 0, got {args.replays}")
    if not args.min_fault > 0:
        raise UsageError(f"--min-fault: must be > 0 seconds, got {args.min_fault}")
    try:
        duration_steps(args.time_limit, args.min_fault)
    except ValueError as e:
        raise UsageError(f"--min-fault: {e}") from None
    faults = [f.strip() for f in args.faults.split(",") if f.strip()] if args.faults else list(HUNT_FAULTS)
    bad = [f for f in faults if f not in FAULTS]
    if bad or not faults:
        raise UsageError(f"--faults: unknown {bad} (known: {', '.join(FAULTS)})")
    from nemesis.registry import kafka_only

    if kafka := sorted(set(faults) & kafka_only()):
        raise UsageError(f"--faults: {', '.join(kafka)} act on real Kafka brokers through the Kafka proxy; a hunt "
                         "runs the agents (their hooks: delay_request, hold_alter_partition)")
    writable_file(args.out, "--out")
    inv = load_inventory(args.inventory)
    spec_from_args(args, inv, Schedule("hunt"))  # every other flag judged before the engine starts
    return faults, toggles, inv


def run_hunt(args: argparse.Namespace) -> int:
    from harness.commands.run import spec_from_args
    from harness.engine import Engine

    console = output_console()
    quiet = Console(quiet=True)
    faults, toggles, inv = judge(args)
    # One engine for every run: each run still gets a cluster of its own, Spark stays up.
    engine = Engine(inv, args.store, quiet, args.spark_master, check_server=not args.no_server)

    def run_one(schedule, n, test="hunt"):  # type: ignore[no-untyped-def]
        args.test = test
        return engine.run(spec_from_args(args, inv, schedule))

    with engine:
        return _hunt(args, inv, faults, toggles, run_one, console)


def _hunt(args, inv, faults, toggles, run_one, console) -> int:  # type: ignore[no-untyped-def]
    from nemesis.scripted import dump_schedule, dumps_schedule, parse_schedule
    from nemesis.search import confirm, describe, hunt, hunt_targets

    t0 = time.monotonic()
    console.print(f"[bold]hunt[/] toggles={toggles or '{}'} faults={','.join(faults)} "
                  f"max-runs={args.max_runs} time-limit={args.time_limit:g}s seed={args.seed}")
    res = hunt(run_one, faults=faults, targets=hunt_targets([b.name for b in inv.brokers],
                                                            [z.name for z in inv.zookeepers], faults),
               time_limit=args.time_limit, max_runs=args.max_runs, seed=args.seed, min_fault=args.min_fault,
               progress=lambda m: console.print(m, highlight=False))
    if not res.found or res.schedule is None or res.windows is None or res.signature is None:
        console.print(f"[bold green]no failure[/] in {res.runs} runs ({time.monotonic() - t0:.0f}s)")
        return 0
    checker, broker = res.signature
    console.print(f"[bold red]found[/] {checker} on broker {broker} after {res.runs} runs; minimal schedule: "
                  f"{describe(res.schedule)}", highlight=False)
    replays = 0 if args.no_replay else args.replays
    schedule, note = res.schedule, "not replayed"
    reproduced = True  # without replays the search run itself is the evidence
    if replays:
        def replay(schedule, n):  # type: ignore[no-untyped-def]
            # through the TOML text, so the replay runs exactly what the written file will hold
            return run_one(parse_schedule(dumps_schedule(schedule), Path(args.out)), n, "hunt-replay")

        conf = confirm(replay, res.windows, res.signature, widen_step=inv.agents.session_timeout_ms / 1000.0,
                       attempts=replays, progress=lambda m: console.print(m, highlight=False))
        reproduced, schedule = conf.reproduced, conf.schedule
        if not conf.reproduced:
            widest = (replays - 1) * inv.agents.session_timeout_ms / 1000.0
            note = f"NOT reproduced in {conf.replays} replays (widened up to {widest:g}s); last: {conf.replay_dir}"
        elif conf.widened_by:
            note = (f"reproduced on replay {conf.replays} with every window {conf.widened_by:g}s longer "
                    f"(the minimal schedule was borderline): {conf.replay_dir}")
        else:
            note = f"reproduced on replay 1: {conf.replay_dir}"
    schedule.name = "hunt-minimal"
    out = dump_schedule(schedule, args.out, comment=(
        f"found by `harness hunt` (seed {args.seed}, {res.runs} runs) with toggles {toggles}\n"
        f"anomaly: {checker} on broker {broker}; first failing run: {res.run_dir}\n"
        f"first failing schedule: {describe(res.first_schedule) if res.first_schedule else '?'}\n"
        f"minimal schedule: {describe(res.schedule)}\n"
        f"confirmation: {note}\n"
        f"replay: harness run --schedule {args.out} --time-limit {args.time_limit:g}"
        + "".join(f" --toggle {t}" for t in args.toggle)))
    console.print(f"wrote {out}: {describe(schedule)}", highlight=False)
    verdict = "[red]same anomaly[/]" if reproduced and replays else (
        "[yellow]not reproduced[/]" if not reproduced else "[yellow]not replayed[/]")
    console.print(f"{verdict}: {note} ({time.monotonic() - t0:.0f}s total)", highlight=False)
    return 1 if reproduced else 2
