"""The agent process's entry point: ``python -m agent --config FILE [--toggle NAME=VALUE ...]``.

Parses the command line defined in ``agent.config.add_arguments``, runs one ``BrokerAgent`` until it
stops, and turns SIGTERM/SIGINT into a controlled shutdown (a second signal, or one during startup,
stops at once). Exit codes: 0 after a stop, 1 when the startup registration fails, 254 for a bad
config file or toggle.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from agent.broker import BrokerAgent
from agent.config import AgentConfig, ConfigError, add_arguments, load_config

EXIT_BAD_INPUT = 254  # the harness's code for bad arguments or input


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(
        prog="python -m agent", description="Run one broker agent (ZK-mode Kafka semantics, bug toggles)."))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = load_config(args.config, args.toggle)
    except ConfigError as e:
        print(f"agent: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_agent(cfg)


def run_agent(cfg: AgentConfig) -> int:
    agent = BrokerAgent(cfg)
    stop_requested = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        if stop_requested.is_set() or not agent.startup_done:
            agent.stopping.set()  # second signal, or still starting: stop now
        stop_requested.set()
        agent.shutdown_requested.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    rc = 0
    try:
        rc = agent.run()
    finally:
        agent.stop("signal" if stop_requested.is_set() else ("startup_failed" if rc else "exit"))
    return rc
