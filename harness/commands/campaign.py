"""`harness campaign [FILE]`: a matrix of runs from a campaign file, each stored and checked, on one warm
cluster; an index page, JUnit XML and resumption.

``store/campaigns/<name>/<time>/`` holds ``campaign.json`` (the plan and every finished run, rewritten
after each), ``index.html`` (the runs coloured by verdict, linking each run's report), ``junit.xml``
(a testsuite per run, a testcase per checker) and ``runs/`` (the run directories). Started again on
the same plan, a campaign that did not finish continues in its directory and skips the runs it has.
Exit: 0 every run valid, 1 any invalid, 2 any unknown (or no run done) and none invalid, 254 bad
campaign file.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from checkers.result import worst
from harness.campaign import DEFAULT_CAMPAIGN, Campaign, CampaignError, PlannedRun, load_campaign
from harness.errors import EXIT_UNKNOWN, UsageError, exit_code_for
from harness.store import new_run_dir, write_json

STATE = "campaign.json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign", help="a matrix of runs from a campaign file: index.html, junit.xml, resumable",
                       description=__doc__.splitlines()[0])
    p.add_argument("file", metavar="FILE", nargs="?", default=None,
                   help=f"campaign TOML (default: {DEFAULT_CAMPAIGN.relative_to(DEFAULT_CAMPAIGN.parents[1])})")
    p.add_argument("--store", metavar="DIR", default="store", help="store directory (default: ./store)")
    p.add_argument("--spark-master", metavar="URL", help="Spark master (default local[*], env HARNESS_SPARK_MASTER)")
    p.add_argument("--budget", type=float, metavar="S", help="wall-clock seconds; overrides the file's budget")
    p.add_argument("--new", action="store_true", help="start a new campaign directory even if the last one is unfinished")
    p.add_argument("--junit", metavar="FILE", help="also copy the campaign's JUnit XML to FILE")
    p.set_defaults(func=run)


def plan_specs(campaign: Campaign, inv: Any) -> list[tuple[PlannedRun, Any]]:
    """Every planned run as a TestSpec, built the way `harness run` builds one: all checked before any starts."""
    from harness.cli import build_parser
    from harness.commands.run import spec_from_args

    parser = build_parser()
    out = []
    for planned in campaign.plan():
        try:
            out.append((planned, spec_from_args(parser.parse_args(["run", *planned.argv(campaign)]), inv)))
        except UsageError as e:
            raise CampaignError(f"{campaign.path}: run {planned.key} ({planned.label}): {e}") from None
    return out


def _resume_dir(root: Path, campaign: Campaign) -> Path | None:
    latest = root / campaign.name / "latest"
    try:
        state = json.loads((latest / STATE).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if state.get("finished") or state.get("plan_hash") != campaign.plan_hash():
        return None
    return latest.resolve()


def run(args: argparse.Namespace) -> int:
    from harness.engine import Engine, sigterm_as_interrupt
    from harness.inventory import load_inventory

    campaign = load_campaign(args.file)
    if args.budget is not None and args.budget <= 0:
        raise UsageError(f"--budget: must be > 0 seconds, got {args.budget}")
    budget = args.budget if args.budget is not None else campaign.budget
    inv = load_inventory(campaign.inventory)
    planned = plan_specs(campaign, inv)
    console = Console()
    root = Path(args.store) / "campaigns"
    cdir = None if args.new else _resume_dir(root, campaign)
    if cdir is not None:
        state = json.loads((cdir / STATE).read_text())
        console.print(f"[bold]campaign[/] {campaign.name}: resuming {cdir} ({len(state['runs'])}/{len(planned)} done)")
    else:
        cdir = new_run_dir(root, campaign.name)
        state = {"name": campaign.name, "file": campaign.path, "plan_hash": campaign.plan_hash(), "finished": False,
                 "started": time.time(), "plan": [{"key": p.key, "label": p.label} for p, _ in planned], "runs": {}}
        console.print(f"[bold]campaign[/] {campaign.name}: {len(planned)} runs → {cdir}")
    todo = [(p, s) for p, s in planned if p.key not in state["runs"]]
    t0 = time.monotonic()
    walls: list[float] = []
    skipped: list[str] = []
    # SIGTERM between runs unwinds like Ctrl-C too, so the warm cluster is torn down.
    with sigterm_as_interrupt(), Engine(inv, cdir / "runs", console, args.spark_master, keep_warm=True) as engine:
        for n, (p, spec) in enumerate(todo, 1):
            if budget is not None and time.monotonic() - t0 >= budget:
                skipped = [q.key for q, _ in todo[n - 1:]]
                console.print(f"[yellow]budget of {budget:g}s spent: {len(skipped)} runs not started[/]")
                break
            done = len(state["runs"])
            console.print(f"[bold][{done + 1}/{len(planned)}][/] {p.key} {p.label}", highlight=False)
            started = time.monotonic()
            outcome = engine.run(spec)
            rec = _record(p, outcome, cdir, time.monotonic() - started)
            state["runs"][p.key] = rec
            walls.append(rec["wall_s"])
            write_outputs(cdir, state)
            so_far = sum(r["anomalies"] for r in state["runs"].values())
            eta = sum(walls) / len(walls) * (len(todo) - n)
            if budget is not None:
                eta = min(eta, max(0.0, budget - (time.monotonic() - t0)))
            console.print(f"  → {_word(rec['valid'])} ({rec['anomalies']} anomalies) in {rec['wall_s']:.1f}s · "
                          f"{len(state['runs'])}/{len(planned)} done · anomalies so far {so_far} · ETA {eta:.0f}s",
                          highlight=False)
    state["finished"], state["skipped"] = True, skipped
    write_outputs(cdir, state)
    if args.junit:
        Path(args.junit).parent.mkdir(parents=True, exist_ok=True)
        Path(args.junit).write_bytes((cdir / "junit.xml").read_bytes())
    verdicts = [r["valid"] for r in state["runs"].values()]
    counts = {w: sum(1 for v in verdicts if _word(v) == w) for w in ("valid", "invalid", "unknown")}
    console.print(f"[bold]campaign {campaign.name}[/]: {len(verdicts)} runs ({counts}) · index {cdir / 'index.html'}"
                  f" · junit {cdir / 'junit.xml'}", highlight=False)
    return exit_code_for(worst(*verdicts)) if verdicts else EXIT_UNKNOWN


def _word(valid: Any) -> str:
    return "valid" if valid is True else "invalid" if valid is False else "unknown"


def _record(p: PlannedRun, outcome: Any, cdir: Path, wall_s: float) -> dict[str, Any]:
    valid = outcome.valid if outcome.error is None else "unknown"
    anomalies = outcome.results.get("anomalies") or []
    return {"key": p.key, "label": p.label, "faults": p.faults, "toggles": p.toggles, "workload": p.workload,
            "seed": p.seed, "repeat": p.repeat, "run_dir": outcome.run_dir.relative_to(cdir).as_posix(),
            "valid": valid, "anomalies": len(anomalies),
            "first_anomaly": f"[{anomalies[0].get('checker')}] {anomalies[0].get('message')}" if anomalies else "",
            "error": outcome.error, "wall_s": round(wall_s, 1)}


def write_outputs(cdir: Path, state: dict[str, Any]) -> None:
    """campaign.json, index.html and junit.xml from the state so far (after every run, so a killed
    campaign still has them)."""
    from checkers.junit import suite_for, write_junit
    from harness.report.campaign import campaign_index

    write_json(cdir / STATE, state)
    (cdir / "index.html").write_text(campaign_index(state), encoding="utf-8")
    suites = []
    for rec in state["runs"].values():
        try:
            results = json.loads((cdir / rec["run_dir"] / "results.json").read_text())
        except (OSError, json.JSONDecodeError):
            results = {"valid": "unknown", "anomalies": []}
        if rec.get("error"):
            results = {**results, "valid": "unknown"}
        props = {k: rec[k] for k in ("faults", "toggles", "workload", "seed", "repeat", "run_dir")}
        suites.append(suite_for(f"{state['name']}/{rec['key']}", results, props, rec["wall_s"]))
    write_junit(cdir / "junit.xml", suites, name=f"campaign {state['name']}")
