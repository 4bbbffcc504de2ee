"""The `harness` command line: one entry point, subcommands registered by the modules that own them.

Each module in ``COMMAND_MODULES`` exposes ``register(subparsers)``; its parser sets
``func(args) -> int``. Exit codes follow Jepsen: 0 valid, 1 invalid, 2 unknown (also when the environment failed: a node
unreachable, a component that would not start), 254 bad arguments or input, 255 crash.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from harness.errors import (
    EXIT_BAD_INPUT,
    EXIT_CRASH,
    EXIT_UNKNOWN,
    EnvironmentFailed,
    RunInterrupted,
    UsageError,
)

COMMAND_MODULES = (
    "harness.commands.run",
    "harness.commands.teardown",
    "harness.commands.analyze",
    "harness.commands.doctor",
    "harness.commands.setup",
    "harness.commands.agent",
    "checkers.command",
    "harness.commands.checkserver",
    "harness.commands.hunt",
    "harness.commands.repro",
    "harness.commands.report",
    "harness.commands.campaign",
)


def summary(doc: str | None) -> str:
    """A module docstring's first paragraph as one line: a parser's description (its first line
    alone cut sentences that wrap)."""
    return " ".join((doc or "").strip().split("\n\n", 1)[0].split())


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default exit code 2 means "unknown" here
        # one line like every other bad input (the usage is one --help away), whatever was given
        line = " ".join(message.split())
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {line} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harness", description=summary(__doc__))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # The control node's own ZooKeeper clients (observer, admin) lose connections whenever a fault
    # hits a server; kazoo logs each drop as a warning. Expected here, so keep them off the terminal.
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UsageError as e:
        print(f"harness: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as e:
        done = f"; partial history checked ({_verdict(e.valid)}): {e.run_dir}" if isinstance(e, RunInterrupted) else ""
        print(f"harness: interrupted; everything started was torn down{done}", file=sys.stderr)
        return 130
    except EnvironmentFailed as e:
        # The environment failed (a node unreachable, a component that would not start): nothing
        # was decided about the system under test, so the verdict is unknown, said in one line.
        print(f"harness: {e}", file=sys.stderr)
        return EXIT_UNKNOWN
    except Exception:  # noqa: BLE001 - a crash is exit 255 with the traceback, like Jepsen
        import traceback

        traceback.print_exc()
        return EXIT_CRASH


def _verdict(valid: bool | str) -> str:
    return "valid" if valid is True else "invalid" if valid is False else "unknown"


if __name__ == "__main__":
    sys.exit(main())
