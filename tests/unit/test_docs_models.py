"""The docs name exactly the linearizability models ``checkers.models.MODELS`` has: the Models table
of docs/checking.md (what ``harness check --model`` takes) and the Model row of
docs/architecture.md's protocol table."""

from __future__ import annotations

import re
from pathlib import Path

from checkers.models import MODELS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def checking_table() -> list[str]:
    """The first cell of every row of the table under ``### Models`` in docs/checking.md."""
    section = (DOCS / "checking.md").read_text(encoding="utf-8").split("### Models", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [m.group(1) for line in rows if (m := re.match(r"\| `([\w-]+)` \|", line))]


def architecture_row() -> set[str]:
    """The backticked names in the implementations cell of the protocol table's Model row."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| Model |"))
    return set(re.findall(r"`([a-z][\w-]*)`", row.strip().strip("|").split("|")[-1]))


def test_checking_md_lists_every_model_once() -> None:
    names = checking_table()
    assert len(names) == len(set(names)), f"listed twice: {sorted(n for n in names if names.count(n) > 1)}"
    assert set(names) == set(MODELS), (sorted(set(MODELS) - set(names)), sorted(set(names) - set(MODELS)))


def test_architecture_md_model_row_names_every_model() -> None:
    names = architecture_row()
    assert names == set(MODELS), (sorted(set(MODELS) - names), sorted(names - set(MODELS)))
