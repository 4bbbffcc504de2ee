"""`harness agent`: run one broker agent (what the harness starts over SSH), with toggle overrides.

    harness agent --config FILE [--toggle NAME=VALUE ...]

`harness agent --help` lists every bug toggle, one line each, with its values and the JIRA it
brings back (``agent.config.TOGGLE_HELP``).
"""

from __future__ import annotations

import argparse
from typing import Any

from agent.config import (
    TOGGLE_CHOICES,
    TOGGLE_HELP,
    AgentConfig,
    ConfigError,
    Toggles,
    parse_toggle_args,
)
from harness.errors import UsageError


def toggle_epilog() -> str:
    defaults = Toggles().to_dict()
    lines = ["toggles (--toggle NAME=VALUE; defaults = Kafka 3.7 ZK mode):"]
    for name, help_text in TOGGLE_HELP.items():
        values = "|".join(str(v).lower() for v in TOGGLE_CHOICES[name])
        lines.append(f"  {name}={values} (default {str(defaults[name]).lower()}): {help_text}")
    return "\n".join(lines)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "agent",
        help="run one broker agent (ZK-mode Kafka semantics, bug toggles)",
        description=__doc__.splitlines()[0],
        epilog=toggle_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", required=True, metavar="FILE", help="agent config JSON (written by the harness)")
    p.add_argument("--toggle", action="append", default=[], metavar="NAME=VALUE",
                   help="override one toggle of the config file (repeatable)")
    p.set_defaults(func=run)


def load_config(path: str, toggles: list[str]) -> AgentConfig:
    try:
        cfg = AgentConfig.load(path)
        if toggles:
            cfg.toggles = Toggles.from_dict({**cfg.toggles.to_dict(), **parse_toggle_args(toggles)})
    except ConfigError as e:
        raise UsageError(str(e)) from e
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror or e}") from e
    return cfg


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.toggle)
    from agent.main import run_agent

    return run_agent(cfg)
