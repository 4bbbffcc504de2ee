"""`harness COMMAND --help`: each description is its module docstring's whole first paragraph (the
first line alone cut campaign's and hunt's mid-sentence)."""

from __future__ import annotations

import argparse

import pytest

from base.parsing import summary
from harness.cli import build_parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_summary_is_the_first_paragraph_on_one_line() -> None:
    doc = """`x`: one sentence that
    wraps onto a second line.

    Details nobody asked for."""
    assert summary(doc) == "`x`: one sentence that wraps onto a second line."
    assert summary(None) == ""


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_describes_itself_in_whole_sentences(name: str) -> None:
    description = (_commands()[name].description or "").strip()
    assert description.endswith((".", ")")), f"{name}: {description[-40:]!r}"
