"""Run a test the way `harness run` does: its command line → a TestSpec → the run engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console


def run_test(store: Path, *argv: str, schedule: Any = None, console: Console | None = None) -> Any:
    from base.inventory import load_inventory
    from harness.cli import build_parser
    from harness.commands.run import spec_from_args
    from harness.engine import Engine

    args = build_parser().parse_args(["run", "--store", str(store), *argv])
    inv = load_inventory(args.inventory)
    with Engine(inv, args.store, console or Console(quiet=True), args.spark_master) as engine:
        return engine.run(spec_from_args(args, inv, schedule))
