"""The bug-catching score: does the default nightly campaign catch every bug toggle of the agent, and
does it stay quiet on the fixed agent?

    python bench/mutation.py                                         # 8 bugs × 15 min + 50 fixed runs
    python bench/mutation.py --budget-per-toggle 240 --fixed-runs 8  # a reduced measurement
    python bench/mutation.py --toggles controller_fencing=off,registration=3x+pipeline_on_connect=true
    python bench/mutation.py --toggles none --fixed-runs 50          # the fixed agent only

For each bug (``harness.mutation.MUTATIONS``: one toggle value, or two joined by ``+``, on top of the
fixed agent) it runs ``campaigns/nightly.toml`` through the `harness campaign` code path with that
agent, its wall-clock budget set to ``--budget-per-toggle`` and stopping at the first invalid run;
then the fixed agent for ``--fixed-runs`` runs of the same matrix (more seeds as needed). Prints a
table: caught or not, by which checkers, the time from the campaign's start (cold cluster included)
to the end of the first invalid run, the runs used; and for the fixed agent the false alarms
(invalid runs) and unknowns. Each campaign's directory (index.html, junit.xml) is under
``--store``/campaigns. Timings are measured, never asserted; this is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from base.parsing import summary  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    from base.inventory import load_inventory
    from harness.campaign import load_campaign
    from harness.engine import Engine
    from harness.mutation import FIXED, parse_mutations

    p = argparse.ArgumentParser(prog="bench/mutation.py", description=summary(__doc__))
    p.add_argument("--campaign", metavar="FILE", help="campaign file (default campaigns/nightly.toml)")
    p.add_argument("--budget-per-toggle", type=float, default=900.0, metavar="S",
                   help="wall-clock seconds per bug toggle: no run starts after it (default 900)")
    p.add_argument("--fixed-runs", type=int, default=50, metavar="N", help="runs of the fixed agent (default 50; 0 skips)")
    p.add_argument("--toggles", metavar="A=B,...", help="bugs to score, comma-separated (none: only the fixed agent); join two toggles of one "
                   "bug with '+' (default: every bug of harness.mutation.MUTATIONS)")
    add_output_flags(p)
    args = p.parse_args(argv)
    if args.budget_per_toggle <= 0 or args.fixed_runs < 0:
        print("--budget-per-toggle must be > 0 and --fixed-runs >= 0", file=sys.stderr)
        return 254
    try:
        mutations = parse_mutations(args.toggles)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 254
    base = load_campaign(args.campaign)
    inv = load_inventory(base.inventory)
    live = Console(quiet=not args.verbose, highlight=False)
    out = Console(highlight=False, width=None if sys.stdout.isatty() else 220)  # a log keeps the table's columns
    store = Path(args.store)
    out.print(f"campaign {base.path}: {len(base.plan())} runs per agent, faults {', '.join(base.faults)}, "
              f"workloads {', '.join(base.workloads)}; fixed agent {FIXED}")

    scores = []
    t_all = time.monotonic()
    # One warm engine for every campaign: the cluster and the Spark session come up once, so a toggle's
    # time to first catch is its runs, not the cold start (the first toggle's includes it).
    with Engine(inv, store, live, args.spark_master, keep_warm=True) as engine:
        fixed = _score(args, base, inv, store, live, out, engine, mutations, scores)
    _print(args, base, out, scores, fixed, time.monotonic() - t_all)
    if args.json:
        Path(args.json).write_text(json.dumps({"budget_per_toggle": args.budget_per_toggle,
                                               "toggles": [dataclasses.asdict(s) for s in scores],
                                               "fixed": dataclasses.asdict(fixed) if fixed else None}, indent=2))
    return 0


def add_output_flags(p: argparse.ArgumentParser) -> None:
    """The flags every bug-catching bench shares: where campaigns go, the Spark master, the JSON, the live steps."""
    from checkers.spark import add_master_flag

    p.add_argument("--store", metavar="DIR", default=str(ROOT / "store" / "bench"),
                   help="store directory (default ./store/bench)")
    add_master_flag(p)
    p.add_argument("--json", metavar="FILE", help="also write the scores as JSON")
    p.add_argument("--verbose", action="store_true", help="print every run's live steps")


def _score(args, base, inv, store, live, out, engine, mutations, scores):  # noqa: ANN001, ANN202
    from harness.commands.campaign import run_campaign
    from harness.mutation import FIXED, fixed_score, mutant, slug, toggle_score

    for name, toggles in mutations.items():
        c = dataclasses.replace(base, name=slug(name), toggles=(mutant(toggles),), budget=args.budget_per_toggle)
        cdir, state = run_campaign(c, inv, store, live, args.spark_master, c.budget, new=True, stop_at_invalid=True,
                                   engine=engine)
        s = toggle_score(name, state)
        scores.append(s)
        how = f"caught by {', '.join(s.checkers)} after {s.first_catch_s:.0f}s on run {s.runs} ({s.catching_run})" \
            if s.caught else f"NOT caught in {s.runs} runs"
        out.print(f"{name}: {how} · {cdir}")

    fixed = None
    if args.fixed_runs:
        seeds = tuple(range(1, math.ceil(args.fixed_runs / len(base.plan()) * len(base.seeds)) + 1))
        c = dataclasses.replace(base, name="mutation-fixed", toggles=(dict(FIXED),), seeds=seeds, budget=None)
        cdir, state = run_campaign(c, inv, store, live, args.spark_master, None, new=True, max_runs=args.fixed_runs,
                                   engine=engine)
        fixed = fixed_score(state)
        out.print(f"fixed agent: {fixed.runs} runs, {fixed.false_alarms} false alarms, {fixed.unknowns} unknown · {cdir}")
    return fixed


def _print(args, base, out, scores, fixed, wall_s):  # noqa: ANN001, ANN202
    from rich.table import Table

    from harness.mutation import MUTATIONS

    table = Table(title=f"bug-catching score: {base.name} campaign, budget {args.budget_per_toggle:g}s per toggle "
                        f"(measured in {wall_s:.0f}s)")
    for col in ("bug toggle", "JIRA", "caught", "by checker(s)", "first catch", "runs used", "unknown runs",
                "catching run"):
        table.add_column(col)
    for s in scores:
        jira = MUTATIONS.get(s.name, (None, ""))[1]
        table.add_row(s.name, jira, "[green]yes[/]" if s.caught else "[red]no[/]", ", ".join(s.checkers) or "-",
                      f"{s.first_catch_s:.0f}s" if s.first_catch_s is not None else "-", str(s.runs), str(s.unknowns),
                      s.catching_run or "-")
    out.print(table)
    caught = sum(s.caught for s in scores)
    line = f"caught {caught}/{len(scores)} bug toggles ({caught / len(scores):.0%})" if scores else "no bug toggles"
    if fixed is not None:
        rate = f"{fixed.false_alarms / fixed.runs:.0%}" if fixed.runs else "-"
        line += (f"; fixed agent: {fixed.runs} runs, {fixed.false_alarms} false alarms ({rate}), {fixed.unknowns} "
                 f"unknown" + (f" (fired: {', '.join(fixed.checkers)})" if fixed.checkers else ""))
    out.print(line + " · target: every toggle caught, 0 false alarms")


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
