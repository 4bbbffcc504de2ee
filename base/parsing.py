"""Command-line parsing shared by every command: a parser whose errors exit 254 (bad input) and a
module docstring's first paragraph as a parser's description.

Apart from ``harness.cli`` so that a command module (``harness.commands.*``), which the CLI loads
from its table, never imports the CLI back, and so that a parser of one command can be built
without loading every other (``harness campaign`` parses its runs' command lines with ``run``'s).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any

from base.errors import EXIT_BAD_INPUT


def summary(doc: str | None) -> str:
    """A module docstring's first paragraph as one line: a parser's description (its first line
    alone cut sentences that wrap)."""
    return " ".join((doc or "").strip().split("\n\n", 1)[0].split())


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default exit code 2 means "unknown" here
        # one line like every other bad input (the usage is one --help away), whatever was given
        line = " ".join(message.split())
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {line} (see {self.prog} --help)\n")


def command_parser(prog: str, description: str, registers: Iterable[Callable[[Any], None]]) -> Parser:
    """A parser with one subcommand per ``register(subparsers)`` in ``registers``, one required."""
    parser = Parser(prog=prog, description=description)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for register in registers:
        register(sub)
    return parser
