"""`harness campaign [FILE]`: a matrix of runs from a campaign file, each stored and checked, on one warm
cluster; an index page, JUnit XML and resumption.

``store/campaigns/<name>/<time>/`` holds ``campaign.json`` (the plan and every finished run, rewritten
after each), ``index.html`` (the runs coloured by verdict, linking each run's report), ``junit.xml``
(one testcase per run: its configuration as the name, faults, toggles, workload, seed and run dir as
properties, the anomaly summary as the failure) and ``runs/`` (the run directories). Started again on
the same plan, a campaign that did not finish continues in its directory and skips the runs it has.
Exit: 0 every run valid, 1 any invalid, 2 any unknown (or no run done) and none invalid, 254 bad
campaign file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from base.bounds import MAX_BUDGET_S, finite_float
from base.errors import EXIT_UNKNOWN, UsageError, exit_code_for
from base.parsing import command_parser, summary
from checkers.result import worst
from checkers.spark import add_master_flag
from harness.campaign import AGENTS, DEFAULT_CAMPAIGN, Campaign, CampaignError, PlannedRun, load_campaign
from harness.checkserver import add_no_server_flag
from harness.outputs import writable_dir, writable_file
from harness.store import new_run_dir, write_json
from harness.terminal import output_console

STATE = "campaign.json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign", help="a matrix of runs from a campaign file: index.html, junit.xml, resumable",
                       description=summary(__doc__))
    p.add_argument("file", metavar="FILE", nargs="?", default=None,
                   help=f"campaign TOML (default: {DEFAULT_CAMPAIGN.relative_to(DEFAULT_CAMPAIGN.parents[1])})")
    p.add_argument("--store", metavar="DIR", default="store", help="store directory (default: ./store)")
    add_master_flag(p)
    add_no_server_flag(p, "check each run")
    p.add_argument("--budget", type=finite_float(0, MAX_BUDGET_S, lo_open=True), metavar="S", help="wall-clock seconds; overrides the file's budget")
    p.add_argument("--new", action="store_true", help="start a new campaign directory even if the last one is unfinished")
    p.add_argument("--junit", metavar="FILE", help="also copy the campaign's JUnit XML to FILE")
    p.set_defaults(func=run)


def plan_specs(campaign: Campaign, inv: Any) -> list[tuple[PlannedRun, Any]]:
    """Every planned run as a TestSpec, built the way `harness run` builds one: all checked before any starts."""
    from harness.commands import run as run_command

    parser = command_parser("harness", "", [run_command.register])  # `harness run`'s parser alone
    out = []
    for planned in campaign.plan():
        try:
            out.append((planned, run_command.spec_from_args(parser.parse_args(["run", *planned.argv(campaign)]), inv)))
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
    from base.inventory import load_inventory

    campaign = load_campaign(args.file)
    if args.budget is not None and args.budget <= 0:
        raise UsageError(f"--budget: must be > 0 seconds, got {args.budget}")
    budget = args.budget if args.budget is not None else campaign.budget
    writable_dir(args.store, "--store")
    if args.junit:
        writable_file(args.junit, "--junit")
    inv = load_inventory(campaign.inventory)
    console = output_console()
    cdir, state = run_campaign(campaign, inv, Path(args.store), console, args.spark_master, budget, new=args.new,
                               check_server=not args.no_server)
    if args.junit:
        junit = Path(args.junit)
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_bytes((cdir / "junit.xml").read_bytes())
    verdicts = [r["valid"] for r in state["runs"].values()]
    counts = {w: sum(1 for v in verdicts if _word(v) == w) for w in ("valid", "invalid", "unknown")}
    console.print(f"[bold]campaign {campaign.name}[/]: {len(verdicts)} runs ({counts}) · index {cdir / 'index.html'}"
                  f" · junit {cdir / 'junit.xml'}", highlight=False)
    return exit_code_for(worst(*verdicts)) if verdicts else EXIT_UNKNOWN


def run_campaign(campaign: Campaign, inv: Any, store: Path, console: Console, spark_master: str | None = None,
                 budget: float | None = None, new: bool = False, stop_at_invalid: bool = False,
                 max_runs: int | None = None, engine: Any = None,
                 check_server: bool = True) -> tuple[Path, dict[str, Any]]:
    """Run (or resume) a campaign under ``store/campaigns/``; returns its directory and final state.
    ``stop_at_invalid`` ends it after its first invalid run and ``max_runs`` after that many runs
    (``bench/mutation.py``); either way the state records why in ``stopped``. ``engine``: a warm
    engine (``keep_warm``) to run on, left open for the next campaign; by default one of its own."""
    from harness.engine import Engine
    from harness.phases import sigterm_as_interrupt

    planned = plan_specs(campaign, inv)
    root = store / "campaigns"
    cdir = None if new else _resume_dir(root, campaign)
    if cdir is not None:
        state = json.loads((cdir / STATE).read_text())
        console.print(f"[bold]campaign[/] {campaign.name}: resuming {cdir} ({len(state['runs'])}/{len(planned)} done)")
        for rec in note_interrupted(cdir, state):
            console.print(f"  [yellow]interrupted[/] run {rec['key'] or '?'}: its partial directory {rec['run_dir']} "
                          f"(partial verdict {_word(rec['valid'])}) is listed as interrupted in the index; the run "
                          "is done again", highlight=False)
        write_outputs(cdir, state)
    else:
        cdir = new_run_dir(root, campaign.name)
        state = {"name": campaign.name, "file": campaign.path, "plan_hash": campaign.plan_hash(), "finished": False,
                 "started": time.time(), "plan": [{"key": p.key, "label": p.label} for p, _ in planned], "runs": {}}
        console.print(f"[bold]campaign[/] {campaign.name}: {len(planned)} runs → {cdir}")
    todo = [(p, s) for p, s in planned if p.key not in state["runs"]]
    t0 = time.monotonic()
    walls: list[float] = []
    skipped: list[str] = []
    stopped: str | None = None
    now: dict[str, Any] = {"n": 0}

    def eta() -> float | None:
        if not walls:
            return None
        left = sum(walls) / len(walls) * (len(todo) - now["n"] + (1 if now.get("running") else 0))
        return min(left, max(0.0, budget - (time.monotonic() - t0))) if budget is not None else left

    def on_faults(faults: list[str]) -> None:
        console.print("  " + progress_line(len(state["runs"]), len(planned), _anomalies(state), eta(),
                                           faults), highlight=False)

    # SIGTERM between runs unwinds like Ctrl-C too, so the warm cluster is torn down.
    if engine is None:
        owned = Engine(inv, cdir / "runs", console, spark_master, keep_warm=True, on_faults=on_faults,
                       check_server=check_server)
    else:
        owned = contextlib.nullcontext(engine)
        engine.store, engine.console, engine.on_faults = cdir / "runs", console, on_faults
    with sigterm_as_interrupt(), owned as engine:
        for n, (p, spec) in enumerate(todo, 1):
            if budget is not None and time.monotonic() - t0 >= budget:
                skipped = [q.key for q, _ in todo[n - 1:]]
                stopped = "budget"
                console.print(f"[yellow]budget of {budget:g}s spent: {len(skipped)} runs not started[/]")
                break
            if max_runs is not None and n > max_runs:
                stopped = f"{max_runs} runs"
                break
            now.update(n=n, running=True)
            console.print(f"[bold][{len(state['runs']) + 1}/{len(planned)}][/] {p.key} {p.label}", highlight=False)
            started = time.monotonic()
            try:
                outcome = engine.run(spec)
            except KeyboardInterrupt:
                note_interrupted(cdir, state)  # the killed run's partial directory, listed before unwinding
                write_outputs(cdir, state)
                raise
            now["running"] = False
            rec = _record(p, outcome, cdir, time.monotonic() - started)
            rec["t_end_s"] = round(time.monotonic() - t0, 1)
            state["runs"][p.key] = rec
            walls.append(rec["wall_s"])
            write_outputs(cdir, state)
            console.print(f"  → {_word(rec['valid'])} ({rec['anomalies']} anomalies) in {rec['wall_s']:.1f}s · "
                          + progress_line(len(state["runs"]), len(planned), _anomalies(state), eta()),
                          highlight=False)
            if stop_at_invalid and rec["valid"] is False:
                stopped = "first invalid run"
                break
    state["finished"], state["skipped"], state["stopped"] = True, skipped, stopped
    write_outputs(cdir, state)
    return cdir, state


def progress_line(done: int, planned: int, anomalies: int, eta_s: float | None,
                  faults: list[str] | None = None) -> str:
    """``3/12 done · anomalies so far 2 · ETA 4m05s`` and, during a run, `` · fault: partition n1``."""
    eta = "?" if eta_s is None else _duration(eta_s)
    line = f"{done}/{planned} done · anomalies so far {anomalies} · ETA {eta}"
    if faults is not None:
        line += f" · fault: {', '.join(faults) if faults else 'none active'}"
    return line


def _duration(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _anomalies(state: dict[str, Any]) -> int:
    return sum(r["anomalies"] for r in state["runs"].values())


def note_interrupted(cdir: Path, state: dict[str, Any]) -> list[dict[str, Any]]:
    """Run directories under ``runs/`` that no finished run owns (a run killed midway) go into
    ``state["interrupted"]`` with their partial verdict, so the index shows them; the run itself is
    still to do. Returns the ones newly noted."""
    owned = {r["run_dir"] for r in state["runs"].values()} | {r["run_dir"] for r in state.get("interrupted", [])}
    keys = {f"{state['name']}-{p['key']}": p for p in state.get("plan", [])}
    found = []
    # runs/latest and runs/<test>/latest are the store's symlinks to run directories, not runs
    tests = [t for t in (cdir / "runs").glob("*") if t.is_dir() and not t.is_symlink()]
    for run_dir in sorted(d for t in tests for d in t.iterdir() if d.is_dir() and not d.is_symlink()):
        rel = run_dir.relative_to(cdir).as_posix()
        if rel in owned:
            continue
        try:
            results = json.loads((run_dir / "results.json").read_text())
        except (OSError, json.JSONDecodeError):
            results = {}  # killed before its partial history was checked
        planned = keys.get(run_dir.parent.name, {})
        anomalies = results.get("anomalies") or []
        found.append({"key": planned.get("key"), "label": planned.get("label", run_dir.parent.name), "run_dir": rel,
                      "valid": results.get("valid", "unknown") if results.get("valid") is not True else "unknown",
                      "anomalies": len(anomalies),
                      "reason": results.get("interrupted") or "killed before its history was checked"})
    state.setdefault("interrupted", []).extend(found)
    return found


def _word(valid: Any) -> str:
    return "valid" if valid is True else "invalid" if valid is False else "unknown"


def _record(p: PlannedRun, outcome: Any, cdir: Path, wall_s: float) -> dict[str, Any]:
    valid = outcome.valid if outcome.error is None else "unknown"
    anomalies = outcome.results.get("anomalies") or []
    return {"key": p.key, "label": p.label, "brokers": p.brokers, "faults": p.faults, "toggles": p.toggles,
            "workload": p.workload, "seed": p.seed, "repeat": p.repeat, "zookeeper": p.zookeeper,
            "run_dir": outcome.run_dir.relative_to(cdir).as_posix(),
            "valid": valid, "anomalies": len(anomalies), "fired": fired_checkers(outcome.results),
            "first_anomaly": f"[{anomalies[0].get('checker')}] {anomalies[0].get('message')}" if anomalies else "",
            "error": outcome.error, "wall_s": round(wall_s, 1)}


def fired_checkers(results: dict[str, Any]) -> list[str]:
    """The checkers whose verdict is invalid, or that reported an anomaly."""
    subs = results.get("checkers") or {}
    named = {n for n, r in subs.items() if isinstance(r, dict) and r.get("valid") is False}
    return sorted(named | {str(a.get("checker")) for a in results.get("anomalies") or [] if a.get("checker")})


def write_outputs(cdir: Path, state: dict[str, Any]) -> None:
    """campaign.json, index.html and junit.xml from the state so far (after every run, so a killed
    campaign still has them)."""
    from checkers.junit import case_for, case_name, write_junit
    from harness.report.campaign import campaign_index

    write_json(cdir / STATE, state)
    (cdir / "index.html").write_text(campaign_index(state), encoding="utf-8")
    cases = []
    for rec in state["runs"].values():
        try:
            results = json.loads((cdir / rec["run_dir"] / "results.json").read_text())
        except (OSError, json.JSONDecodeError):
            results = {"valid": "unknown", "anomalies": []}
        if rec.get("error"):
            results = {**results, "valid": "unknown", "error": rec["error"]}
        props = {"test": f"{state['name']}-{rec['key']}",
                 **({"brokers": rec["brokers"]} if rec.get("brokers", AGENTS) != AGENTS else {}),  # a release
                 **{k: rec[k] for k in ("faults", "toggles", "workload", "seed", "repeat", "run_dir")},
                 **({"zookeeper": rec["zookeeper"]} if rec.get("zookeeper") else {})}  # a fault set's own settings
        cases.append(case_for(case_name(props, rec["key"]), results, props, rec["wall_s"],
                              classname=f"campaign.{state['name']}"))
    write_junit(cdir / "junit.xml", cases, name=f"campaign {state['name']}")
