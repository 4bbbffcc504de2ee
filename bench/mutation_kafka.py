"""The bug-catching score on released Kafka: for each ZooKeeper-mode bug a released broker carries
(``harness.mutation.RELEASE_BUGS``), how long a randomized campaign takes to catch it on the buggy
release, and how many false alarms the same campaign raises where the bug cannot show.

    python bench/mutation_kafka.py                                # every bug: 900 s to catch, 20 control runs
    python bench/mutation_kafka.py --budget-per-bug 300 --control-runs 4   # a reduced measurement
    python bench/mutation_kafka.py --control-runs 0               # the catch only

The campaign is ``campaigns/nightly-kafka.toml`` (``--campaign``) with each fault set getting the
bug's fault (KAFKA-14845: ``lost_connect``), on the bug's release and ZooKeeper client (3.9.1, Netty,
a 3-host connect string), stopped at the first invalid run; then the control: the same fault sets
and workload on the bug's control (3.9.1 with Kafka's default NIO client) for ``--control-runs``
runs (more seeds as needed). Prints, per bug, caught or not, by which checkers, the time from the
campaign's start (cold cluster included) to the end of the first invalid run, the runs used; and
the control's runs, false alarms (invalid runs, with the checkers that fired) and unknowns. The
stories no randomized fault reaches yet are listed with the reason. Each campaign's directory
(index.html, junit.xml) is under ``--store``/campaigns. A benchmark, not a test: nothing asserted.
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
    from bench.mutation import add_output_flags
    from harness.campaign import REPO_ROOT, load_campaign
    from harness.engine import Engine
    from harness.mutation import RELEASE_BUGS

    p = argparse.ArgumentParser(prog="bench/mutation_kafka.py", description=summary(__doc__))
    p.add_argument("--campaign", metavar="FILE", default=str(REPO_ROOT / "campaigns" / "nightly-kafka.toml"),
                   help="campaign file whose fault sets, workloads and time limit are used "
                        "(default campaigns/nightly-kafka.toml)")
    p.add_argument("--bugs", metavar="JIRA,...", help=f"bugs to score (default: all of {', '.join(RELEASE_BUGS)})")
    p.add_argument("--budget-per-bug", type=float, default=900.0, metavar="S",
                   help="wall-clock seconds to catch each bug: no run starts after it (default 900)")
    p.add_argument("--control-runs", type=int, default=20, metavar="N",
                   help="runs of each bug's control (default 20; 0 skips)")
    add_output_flags(p)
    args = p.parse_args(argv)
    if not 0 < args.budget_per_bug <= 86400 or not 0 <= args.control_runs <= 1000:
        print("--budget-per-bug must be in (0, 86400] and --control-runs in [0, 1000]", file=sys.stderr)
        return 254
    names = [b.strip() for b in args.bugs.split(",")] if args.bugs else list(RELEASE_BUGS)
    if unknown := [b for b in names if b not in RELEASE_BUGS]:
        print(f"--bugs: unknown {', '.join(unknown)} (known: {', '.join(RELEASE_BUGS)})", file=sys.stderr)
        return 254
    base = load_campaign(args.campaign)
    inv = load_inventory(base.inventory)
    live = Console(quiet=not args.verbose, highlight=False)
    out = Console(highlight=False, width=None if sys.stdout.isatty() else 220)
    store = Path(args.store)
    rows = []
    t_all = time.monotonic()
    # one warm engine: the Spark session comes up once (each release and client gets its own cluster)
    with Engine(inv, store, live, args.spark_master, keep_warm=True) as engine:
        for name in names:
            rows.append(_score(args, base, inv, store, live, out, engine, RELEASE_BUGS[name]))
    _print(args, base, out, rows, time.monotonic() - t_all)
    if args.json:
        Path(args.json).write_text(json.dumps({"budget_per_bug": args.budget_per_bug, "bugs": rows}, indent=2))
    return 0


def with_fault(faults: tuple[str, ...], fault: str) -> tuple[str, ...]:
    """Each fault set with ``fault`` added to its random package (a scripted schedule stays as it is)."""
    return tuple(f if f.startswith("schedule:") or fault in f.split(",") else f"{f},{fault}" for f in faults)


def _score(args, base, inv, store, live, out, engine, bug):  # noqa: ANN001, ANN202
    from harness.commands.campaign import run_campaign
    from harness.mutation import fixed_score, toggle_score

    faults = with_fault(base.faults, bug.fault)
    slug = bug.jira.lower()
    buggy = dataclasses.replace(base, name=f"kafka-{slug}", brokers=(bug.release,), faults=faults,
                                zk_socket=bug.buggy_socket, zk_hosts=bug.zk_hosts, budget=args.budget_per_bug)
    cdir, state = run_campaign(buggy, inv, store, live, args.spark_master, buggy.budget, new=True,
                               stop_at_invalid=True, engine=engine)
    s = toggle_score(bug.jira, state)
    how = f"caught by {', '.join(s.checkers)} after {s.first_catch_s:.0f}s on run {s.runs} ({s.catching_run})" \
        if s.caught else f"NOT caught in {s.runs} runs"
    out.print(f"{bug.jira} on {bug.release} ({bug.buggy_socket}): {how} · {cdir}")
    row = {"jira": bug.jira, "release": bug.release, "zk_socket": bug.buggy_socket, "fault": bug.fault,
           "expected": list(bug.checkers), "catch": dataclasses.asdict(s), "control": None}
    if args.control_runs:
        per_seed = len(buggy.plan()) // len(base.seeds)
        seeds = tuple(range(1, math.ceil(args.control_runs / per_seed) + 1))
        control = dataclasses.replace(buggy, name=f"kafka-{slug}-control", brokers=(bug.control_release,),
                                      zk_socket=bug.control_socket, seeds=seeds, budget=None)
        cdir, state = run_campaign(control, inv, store, live, args.spark_master, None, new=True,
                                   max_runs=args.control_runs, engine=engine)
        f = fixed_score(state)
        out.print(f"{bug.jira} control {bug.control_release} ({bug.control_socket}): {f.runs} runs, "
                  f"{f.false_alarms} false alarms, {f.unknowns} unknown · {cdir}")
        row["control"] = {"release": bug.control_release, "zk_socket": bug.control_socket, **dataclasses.asdict(f)}
    return row


def _print(args, base, out, rows, wall_s):  # noqa: ANN001, ANN202
    from rich.table import Table

    from harness.mutation import RELEASE_BUGS, RELEASE_BUGS_UNREACHABLE

    table = Table(title=f"bug-catching score on released Kafka: {base.name} fault sets, budget "
                        f"{args.budget_per_bug:g}s per bug (measured in {wall_s:.0f}s)")
    for col in ("bug", "release (client)", "fault added", "caught", "by checker(s)", "first catch", "runs used",
                "control", "control runs", "false alarms", "unknown"):
        table.add_column(col)
    for r in rows:
        c, k = r["catch"], r["control"]
        table.add_row(r["jira"], f"{r['release']} ({r['zk_socket']})", r["fault"],
                      "[green]yes[/]" if c["caught"] else "[red]no[/]", ", ".join(c["checkers"]) or "-",
                      f"{c['first_catch_s']:.0f}s" if c["first_catch_s"] is not None else "-", str(c["runs"]),
                      f"{k['release']} ({k['zk_socket']})" if k else "-", str(k["runs"]) if k else "-",
                      (str(k["false_alarms"]) + (f" ({', '.join(k['checkers'])})" if k["checkers"] else "")) if k
                      else "-", str(k["unknowns"]) if k else "-")
    out.print(table)
    for r in rows:
        if r["control"]:
            out.print(f"{r['jira']}'s control: {RELEASE_BUGS[r['jira']].control_why}")
    for jira, why in RELEASE_BUGS_UNREACHABLE.items():
        out.print(f"{jira}: not scored: {why}")


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
