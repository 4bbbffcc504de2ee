"""Run a test the way `harness run` does: its command line → a TestSpec → the run engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console


def spec_for(store: Path, *argv: str, schedule: Any = None) -> tuple[Any, Any]:
    """The parsed `harness run` arguments and the TestSpec they build."""
    from base.inventory import load_inventory
    from harness.cli import build_parser
    from harness.commands.run import spec_from_args

    args = build_parser().parse_args(["run", "--store", str(store), *argv])
    return args, spec_from_args(args, load_inventory(args.inventory), schedule)


def run_on(engine: Any, store: Path, spec: Any, console: Console | None = None) -> Any:
    """One run on a shared engine (its cluster and Spark session kept warm), stored under ``store``,
    as a campaign runs on its engine."""
    store = Path(store)
    store.mkdir(parents=True, exist_ok=True)
    engine.store, engine.console = store, console or Console(quiet=True)
    return engine.run(spec)


def run_test(store: Path, *argv: str, schedule: Any = None, console: Console | None = None,
             engine: Any = None) -> Any:
    """``harness run ARGV``: on ``engine`` when given (the session's warm one), else on a new engine
    whose cluster starts cold and is torn down before this returns."""
    from base.inventory import load_inventory
    from harness.engine import Engine

    args, spec = spec_for(store, *argv, schedule=schedule)
    if engine is not None:
        return run_on(engine, store, spec, console)
    with Engine(load_inventory(args.inventory), args.store, console or Console(quiet=True),
                args.spark_master) as cold:
        return cold.run(spec)


def repro_runs() -> int:
    """How many times a reproduction test runs each variant: once per commit (``make test``), three
    times in ``make nightly`` (ZKFENCE_REPRO_RUNS=3), where a rate below N/N shows."""
    import os

    return int(os.environ.get("ZKFENCE_REPRO_RUNS", "1"))


def explain(outcome: Any, limit: int = 80) -> str:
    """A run as a failed assertion should show it: its directory, what it was, its verdicts and
    anomalies, then its timeline: the script's steps, the nemesis operations and the brokers'
    sessions and registrations, each at its second of the run. CI keeps no run directory, so a
    reproduction that did not show must be readable from CI's output alone."""
    import json

    lines = [f"{outcome.run_dir}: {outcome.spec.info} verdicts {outcome.verdicts}"]
    lines += [f"  anomaly: {a.get('message')}" for a in outcome.anomalies[:5]]
    history = Path(outcome.run_dir) / "history.jsonl"
    if not history.exists():
        return "\n".join([*lines, "  (no history)"])
    events = [json.loads(line) for line in history.read_text().splitlines() if line.strip()]
    t0 = next((e["t_mono"] for e in events if e.get("f") == "run_start"), events[0]["t_mono"] if events else 0)
    timeline = []
    for e in events:
        v = e.get("value") if isinstance(e.get("value"), dict) else {}
        if e.get("f") == "repro_step":
            what = v.get("what")
        elif e.get("src") == "nemesis" and v.get("stage") == "complete":
            what = f"nemesis {e['f']} {v.get('phase')} {v.get('targets') or ''}"
        elif e.get("f") in ("session", "register") and e.get("type") != "invoke":
            detail = v.get("state") or v.get("error") or v.get("epoch")
            what = f"{e['src']} {e['f']} {e.get('type')} {detail} session {v.get('session_id')}"
        else:
            continue
        timeline.append(f"  {(e['t_mono'] - t0) / 1e9:7.2f}s {what}")
    return "\n".join(lines + timeline[:limit])
