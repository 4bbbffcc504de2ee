"""Wall times of `harness repro` scenarios, cold and warm.

    python bench/repro_times.py                      # KAFKA-14845, 3 runs (bug) + 3 (fixed)
    python bench/repro_times.py --runs 20            # the 20-run measurement
    python bench/repro_times.py --scenario all --runs 20 --variant both

Cold = a fresh cluster (sshd, ZooKeeper ensemble, Toxiproxy) brought up, then the first run;
warm = each run on the cluster already up (the normal `--runs N` mode). Prints one line per run
and a summary per scenario/variant (reproduction rate, mean/median/p90/max warm wall time), and
with --json writes the raw numbers. Timings are measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
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
    from harness.engine import Engine
    from scenarios import scenarios

    p = argparse.ArgumentParser(prog="bench/repro_times.py", description=summary(__doc__))
    p.add_argument("--scenario", default="KAFKA-14845", help="scenario id or 'all' (default KAFKA-14845)")
    p.add_argument("--runs", type=int, default=3, help="warm runs per variant (default 3; the spec's number is 20)")
    p.add_argument("--variant", choices=("bug", "fixed", "both"), default="both")
    p.add_argument("--inventory", help="inventory TOML (default inventory/local.toml)")
    p.add_argument("--store", help="store directory (default: a temporary one under ./store/bench)")
    p.add_argument("--json", metavar="FILE", help="write the raw timings here")
    p.add_argument("--verbose", action="store_true", help="print each run's live steps")
    args = p.parse_args(argv)
    found = scenarios()
    ids = list(found) if args.scenario == "all" else [args.scenario]
    for sid in ids:
        if sid not in found:
            print(f"unknown scenario {sid!r} (known: {', '.join(found)})", file=sys.stderr)
            return 254
    variants = {"bug": [False], "fixed": [True], "both": [False, True]}[args.variant]
    quiet = Console(quiet=not args.verbose)
    out = Console(highlight=False)
    store = args.store or str(ROOT / "store" / "bench")
    report: list[dict] = []
    for sid in ids:
        sc = found[sid]
        if sc.available() is not None:
            out.print(f"{sid}: not available ({sc.available()}); skipped")
            continue
        for fixed in variants:
            label = f"{sid}{' --fixed' if fixed else ''}"
            t0 = time.monotonic()
            with Engine(load_inventory(args.inventory), store, quiet, keep_warm=True) as engine:
                cold_up = engine.warm(sc.spec(fixed))
                walls, matched, reproduced = [], 0, 0
                first = None
                for i in range(args.runs):
                    r = engine.run(sc.spec(fixed))
                    if first is None:
                        first = time.monotonic() - t0
                    walls.append(r.wall_s)
                    matched += r.matched
                    reproduced += r.reproduced
                    phases = " ".join(f"{k}={v:.1f}" for k, v in r.phases.items())
                    out.print(f"  {label} run {i + 1}/{args.runs}: {r.wall_s:5.1f}s "
                              f"{'REPRODUCED' if r.reproduced else 'clean'}{'' if r.matched else ' (UNEXPECTED)'} "
                              f"[{phases}]")
            srt = sorted(walls)
            p90 = srt[min(len(srt) - 1, int(round(0.9 * (len(srt) - 1))))]
            rate = f"clean {matched}/{len(walls)}" if fixed else f"reproduced {reproduced}/{len(walls)}"
            out.print(f"[bold]{label}[/]: {rate}; cold (cluster up + first run) {first:.1f}s "
                      f"(cluster up {cold_up:.1f}s); warm per run mean {statistics.mean(walls):.1f}s, "
                      f"median {statistics.median(walls):.1f}s, p90 {p90:.1f}s, max {max(walls):.1f}s")
            report.append({"scenario": sid, "fixed": fixed, "runs": len(walls), "matched": matched,
                           "reproduced": reproduced, "cluster_up_s": cold_up, "cold_first_run_s": first,
                           "warm_walls_s": walls})
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0 if all(r["matched"] == r["runs"] for r in report) else 1


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
