"""``python -m nemesis.zkproxy``: run the ZooKeeper wire proxy until SIGTERM/SIGINT.

    python -m nemesis.zkproxy --listen 127.0.0.1:0=127.0.0.1:2181 [--listen ...] --events FILE \\
        [--control 127.0.0.1:0] [--rules FILE] [--seed N] [--ready-file F] [--run RUN_ID] \\
        [--held-on-close deliver|discard]

The arguments, ready file and serve loop are the shared ones (``nemesis.wireproxy.cli``). Exit
codes: 0 clean stop, 254 bad arguments or rules, 255 crash.
"""

from __future__ import annotations

import argparse
import sys

from history import EventWriter
from nemesis.wireproxy import cli
from nemesis.zkproxy.proxy import ZkProxy
from nemesis.zkproxy.rules import load_rules_file
from zkwire.constants import JUTE_EXTRASIZE, PROXY_MAX_FRAME


def build_parser() -> argparse.ArgumentParser:
    return cli.build_parser(
        "python -m nemesis.zkproxy", "ZooKeeper wire fault-injection proxy", "zkproxy", PROXY_MAX_FRAME,
        "largest frame body accepted (match the servers' jute.maxbuffer; default "
        f"{PROXY_MAX_FRAME} = jute.maxbuffer default + {JUTE_EXTRASIZE} slack)")


async def _amain(args: argparse.Namespace) -> int:
    specs = cli.parse_listeners(args)
    rules = load_rules_file(args.rules) if args.rules else []
    ev = EventWriter(args.events, "zkproxy", run=args.run)
    proxy = ZkProxy(specs, ev, rules=rules, seed=args.seed, held_on_close=args.held_on_close,
                    max_frame=args.max_frame)
    return await cli.serve(args, proxy, ev)


def main(argv: list[str] | None = None) -> int:
    return cli.run("zkproxy", build_parser(), _amain, argv)


if __name__ == "__main__":
    sys.exit(main())
