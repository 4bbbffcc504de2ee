"""`harness agent`: run one broker agent here, exactly as the harness starts it over SSH.

    harness agent --config FILE [--toggle NAME=VALUE ...]

The agent owns this command line (``agent.config.add_arguments``), so `harness agent --help` lists
every bug toggle, one line each, with its values, its default and the JIRA it brings back. The
config is checked here (bad input is exit 254 with one line); then this process becomes
``python -m agent`` with the same arguments. The control node reaches the agent only through its
config file, its command line and its wire protocol, never by importing its internals.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from agent.config import ConfigError, add_arguments, load_config
from base.errors import UsageError
from base.parsing import summary


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "agent",
        help="run one broker agent (ZK-mode Kafka semantics, bug toggles)",
        description=summary(__doc__),
    )
    add_arguments(p)
    p.set_defaults(func=run)


def agent_argv(args: argparse.Namespace) -> list[str]:
    """The agent's own command line for these arguments."""
    argv = [sys.executable, "-m", "agent", "--config", args.config]
    for toggle in args.toggle:
        argv += ["--toggle", toggle]
    return argv


def run(args: argparse.Namespace) -> int:
    try:
        load_config(args.config, args.toggle)
    except ConfigError as e:
        raise UsageError(str(e)) from e
    argv = agent_argv(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)  # same pid: signals from whoever started us reach the agent itself
    return 0  # not reached
