"""`harness repro`: JIRA reproductions as scenarios (toggles + workload + fault schedule + the checker
that must fire + the expected outcome). See docs/repro.md and ``workloads.repro.framework``."""

from __future__ import annotations

import importlib

from workloads.repro.framework import Scenario

SCENARIO_MODULES = (
    "workloads.repro.kafka_14845",
    "workloads.repro.kafka_7235",
    "workloads.repro.kafka_6584",
    "workloads.repro.kafka_14139",
)


def scenarios() -> dict[str, Scenario]:
    """Scenario id → scenario, in listing order."""
    out: dict[str, Scenario] = {}
    for name in SCENARIO_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        for sc in getattr(mod, "SCENARIOS", None) or [mod.SCENARIO]:
            out[sc.id] = sc
    return out
