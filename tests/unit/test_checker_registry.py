"""The checker registry (``checkers.project.make_checkers``) is the one list of project checkers: the
families' own lists are in it, and docs/checking.md lists it in report order. Each failure names
what is missing and where it goes."""

from __future__ import annotations

import re
from pathlib import Path

from checkers.fencing import PLANS
from checkers.project import CHECKER_NAMES
from checkers.queue import QUEUE_PLANS

DOC = Path(__file__).resolve().parents[2] / "docs" / "checking.md"
LIST_START = "The project-history checkers, in"


def documented() -> list[str]:
    text = DOC.read_text()
    start = text.index(LIST_START)
    paragraph = text[start:text.index("\n\n", start)]
    return re.findall(r"`([a-z_]+)`", paragraph.split("checker missing from it):", 1)[1])


def list_gaps(registered: list[str], listed: list[str]) -> list[str]:
    missing = [n for n in registered if n not in listed]
    unknown = [n for n in listed if n not in registered]
    out = [f"docs/checking.md's checker list lacks {n}: add it where make_checkers has it" for n in missing]
    out += [f"docs/checking.md lists {n}, which checkers.project.make_checkers does not register" for n in unknown]
    if not out and registered != listed:
        out.append(f"docs/checking.md lists the checkers out of report order; make_checkers has {registered}")
    return out


def test_every_family_checker_is_registered() -> None:
    missing = [c.name for c in (*PLANS, *QUEUE_PLANS) if c.name not in CHECKER_NAMES]
    assert not missing, f"checkers.project.make_checkers does not register {', '.join(missing)}: add a line for it"


def test_docs_list_the_registered_checkers_in_report_order() -> None:
    assert list_gaps(list(CHECKER_NAMES), documented()) == []


def test_a_checker_missing_from_the_docs_is_named() -> None:
    assert list_gaps([*CHECKER_NAMES, "leader_in_isr"], documented()) == [
        "docs/checking.md's checker list lacks leader_in_isr: add it where make_checkers has it"]
