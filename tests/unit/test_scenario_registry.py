"""Scenarios are discovered from their modules (``scenarios.scenarios()``): each one found builds both
variants' tests, has its fix status recorded, and names checkers the registry has; `harness repro`'s
help names every JIRA found. Each failure names the scenario and what it lacks."""

from __future__ import annotations

from checkers.project import CHECKER_NAMES
from harness.cli import build_parser
from harness.spec import ANOMALY, VALID
from scenarios import jiras, scenarios
from scenarios.fixes import FIX_STATUS


def test_every_scenario_module_is_found() -> None:
    found = scenarios()
    assert {"KAFKA-14845", "KAFKA-6584", "KAFKA-7235-fast-bounce", "KAFKA-7235-lost-write", "KAFKA-14139"} <= set(found)
    assert list(found)[0] == "KAFKA-6584", "listing is in JIRA order"


def test_every_scenario_builds_its_two_tests() -> None:
    for sid, sc in scenarios().items():
        bug, fixed = sc.spec(False), sc.spec(True)
        assert bug.expect.outcome == ANOMALY and fixed.expect.outcome == VALID, sid
        assert bug.info["scenario"] == sid and bug.script is not None, sid
        unknown = [c for c in sc.checkers if c not in CHECKER_NAMES]
        assert not unknown, f"scenario {sid} expects checkers {unknown} that checkers.project does not register"


def test_every_jira_has_its_fix_status() -> None:
    missing = [j for j in jiras() if j not in FIX_STATUS]
    assert not missing, f"scenarios.fixes.FIX_STATUS has no entry for {', '.join(missing)}: say which release fixed it"


def test_repro_help_names_every_jira() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")  # noqa: SLF001 - argparse's own table
    helps = {c.dest: c.help for c in sub._choices_actions}  # noqa: SLF001
    missing = [j for j in jiras() if j.rpartition("-")[2] not in (helps["repro"] or "")]
    assert not missing, f"`harness repro`'s help does not name {', '.join(missing)}"
