"""``python -m nemesis.kafkaproxy``: run the Kafka wire proxy until SIGTERM/SIGINT.

    python -m nemesis.kafkaproxy --listen 127.0.0.1:0=127.0.0.1:9092 [--listen ...] --events FILE \\
        [--broker-ids 1,2] [--control 127.0.0.1:0] [--rules FILE] [--seed N] [--ready-file F] [--run RUN_ID]

Role in the data path: the process entry of the Kafka proxy. The arguments, ready file and serve
loop are the shared ones (``nemesis.wireproxy.cli``); ``--broker-ids`` names the broker behind
each listener, in order (rules' ``dst_broker``). Exit codes: 0 clean stop, 254 bad arguments or
rules (one line naming the key), 255 crash.
"""

from __future__ import annotations

import argparse
import sys

from base.errors import UsageError
from history import EventWriter
from nemesis.kafkaproxy.codec import KAFKA_MAX_FRAME
from nemesis.kafkaproxy.proxy import KafkaProxy
from nemesis.kafkaproxy.rules import load_rules_file
from nemesis.wireproxy import cli


def build_parser() -> argparse.ArgumentParser:
    p = cli.build_parser("python -m nemesis.kafkaproxy", "Kafka wire fault-injection proxy", "kafkaproxy",
                         KAFKA_MAX_FRAME, f"largest frame accepted (default {KAFKA_MAX_FRAME}: the brokers' "
                                          "socket.request.max.bytes default)")
    p.add_argument("--broker-ids", default="", metavar="ID,ID,...",
                   help="the broker behind each --listen, in order (rules' dst_broker)")
    return p


def parse_broker_ids(s: str, listeners: int) -> list[int | None]:
    if not s.strip():
        return []
    out: list[int | None] = []
    for x in s.split(","):
        x = x.strip()
        if not x.isdigit():
            raise UsageError(f"--broker-ids {s!r}: {x!r} is not a broker id")
        out.append(int(x))
    if len(out) > listeners:
        raise UsageError(f"--broker-ids {s!r}: {len(out)} ids for {listeners} --listen")
    return out


async def _amain(args: argparse.Namespace) -> int:
    specs = cli.parse_listeners(args)
    ids = parse_broker_ids(args.broker_ids, len(specs))
    rules = load_rules_file(args.rules) if args.rules else []
    ev = EventWriter(args.events, "kafkaproxy", run=args.run)
    proxy = KafkaProxy(specs, ev, broker_ids=ids, rules=rules, seed=args.seed, held_on_close=args.held_on_close,
                       max_frame=args.max_frame)
    return await cli.serve(args, proxy, ev)


def main(argv: list[str] | None = None) -> int:
    return cli.run("kafkaproxy", build_parser(), _amain, argv)


if __name__ == "__main__":
    sys.exit(main())
