"""JIRA reproductions as test definitions (`harness repro`): each module holds one or more
``Scenario``s (toggles that bring the bug back, toggles that fix it, the story as a script, the
checkers that must fire), which the run engine runs like any other test."""

from __future__ import annotations

import importlib

from scenarios.base import Scenario

SCENARIO_MODULES = (
    "scenarios.kafka_14845",
    "scenarios.kafka_7235",
    "scenarios.kafka_7235_lost_write",
    "scenarios.kafka_6584",
    "scenarios.kafka_14139",
)


def scenarios() -> dict[str, Scenario]:
    """Scenario id → scenario, in listing order."""
    out: dict[str, Scenario] = {}
    for name in SCENARIO_MODULES:
        mod = importlib.import_module(name)
        for sc in getattr(mod, "SCENARIOS", None) or [mod.SCENARIO]:
            out[sc.id] = sc
    return out
