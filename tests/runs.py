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


def told_runs(run: Any, n: int, spare: int = 2) -> list[Any]:
    """``n`` outcomes of ``run()`` whose story was told, running it at most ``spare`` more times: a
    run whose story could not be told (``RunOutcome.story_gaps``: a race went the other way) and that
    showed no anomaly is evidence of nothing, so it is run again; more than ``spare`` such runs fail,
    with their timelines. A run with an anomaly counts, told or not."""
    kept: list[Any] = []
    untold: list[Any] = []
    while len(kept) < n:
        outcome = run()
        if outcome.story_gaps and not outcome.reproduced and outcome.error is None:
            untold.append(outcome)
            assert len(untold) <= spare, "story not told in {} runs:\n{}".format(
                len(untold), "\n".join(explain(u) for u in untold))
            continue
        kept.append(outcome)
    return kept


def explain(outcome: Any, limit: int = 120) -> str:
    """A run as a failed assertion should show it: its directory, what it was, its verdicts, anomalies
    and story gaps, then the timeline ``harness repro`` prints (scenarios.timeline). CI keeps no run
    directory, so a reproduction that did not show must be readable from CI's output alone."""
    from rich.text import Text

    from scenarios.timeline import render

    lines = [f"{outcome.run_dir}: {outcome.spec.info} verdicts {outcome.verdicts}"]
    lines += [f"  anomaly: {a.get('message')}" for a in outcome.anomalies[:5]]
    lines += [f"  story not told: {why}" for why in outcome.story_gaps]
    history = Path(outcome.run_dir) / "history.jsonl"
    timeline = render(history) if history.exists() else ["  (no history)"]
    return "\n".join(lines + [Text.from_markup(line).plain for line in timeline[:limit]])
