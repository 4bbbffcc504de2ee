"""JIRA reproductions as test definitions (`harness repro`): each module holds one or more
``Scenario``s (toggles that bring the bug back, toggles that fix it, the story as a script, the
checkers that must fire), which the run engine runs like any other test.

A module declares its scenarios itself (``SCENARIO``, or ``SCENARIOS`` for several); ``scenarios()``
finds every module of this package that does, so a new scenario is one new module: ``harness repro
--list`` and ``--help``, and the tests that run every scenario, derive their lists from here.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from types import ModuleType

from scenarios.base import Scenario


def _order(name: str) -> tuple[int, str]:
    """Modules in JIRA order (kafka_6584 before kafka_14139), then by name."""
    m = re.search(r"_(\d+)", name)
    return (int(m.group(1)) if m else 1 << 30, name)


def scenario_modules() -> list[ModuleType]:
    """Every module of this package that declares a scenario, in JIRA order."""
    names = sorted((m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])), key=_order)
    mods = [importlib.import_module(f"{__name__}.{n}") for n in names]
    return [m for m in mods if hasattr(m, "SCENARIO") or hasattr(m, "SCENARIOS")]


def module_scenarios(mod: ModuleType) -> list[Scenario]:
    """The scenarios one module declares (``SCENARIOS``, else its one ``SCENARIO``)."""
    return list(getattr(mod, "SCENARIOS", None) or [mod.SCENARIO])


def scenarios() -> dict[str, Scenario]:
    """Scenario id → scenario, in listing order (JIRA order, then each module's own)."""
    out: dict[str, Scenario] = {}
    for mod in scenario_modules():
        for sc in module_scenarios(mod):
            if sc.id in out:
                raise ValueError(f"scenario id {sc.id} is declared twice (again in {mod.__name__})")
            out[sc.id] = sc
    return out


def jiras() -> list[str]:
    """The JIRAs reproduced, each once, in listing order."""
    return list(dict.fromkeys(sc.jira for sc in scenarios().values()))
