"""``python -m nemesis.zkproxy``: run the ZooKeeper wire proxy until SIGTERM/SIGINT.

    python -m nemesis.zkproxy --listen 127.0.0.1:0=127.0.0.1:2181 [--listen ...] --events FILE \\
        [--control 127.0.0.1:0] [--rules FILE] [--seed N] [--ready-file F] [--run RUN_ID] \\
        [--held-on-close deliver|discard]

The ready file (written atomically once every socket is bound) is JSON:
``{"pid", "seed", "events", "control": {"host", "port"}, "listeners": [{"index", "listen", "host",
"port", "upstream"}]}``. Exit codes: 0 clean stop, 254 bad arguments or rules, 255 crash.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from base.errors import EXIT_BAD_INPUT, EXIT_CRASH, UsageError
from history import EventWriter
from nemesis.zkproxy.control import ControlServer
from nemesis.zkproxy.proxy import HELD_ON_CLOSE, ListenerSpec, ZkProxy
from nemesis.zkproxy.rules import load_rules_file
from zkwire.constants import JUTE_EXTRASIZE, PROXY_MAX_FRAME


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _positive_int(s: str) -> int:
    try:
        n = int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
    if not 0 < n < 2**31:
        raise argparse.ArgumentTypeError(f"must be in [1, 2^31), got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m nemesis.zkproxy", description="ZooKeeper wire fault-injection proxy")
    p.add_argument("--listen", action="append", required=True, metavar="HOST:PORT=UPSTREAM_HOST:PORT",
                   help="one listener per upstream server; port 0 picks a free port")
    p.add_argument("--events", required=True, help="JSONL event file (src=zkproxy)")
    p.add_argument("--control", default="127.0.0.1:0", help="control API address (loopback)")
    p.add_argument("--rules", help="rules file (.toml or .json)")
    p.add_argument("--seed", type=int, default=0, help="seed of the rules' probability RNGs (logged)")
    p.add_argument("--ready-file", help="write the bound ports here as JSON when ready")
    p.add_argument("--run", default="", help="run id for the event envelope")
    p.add_argument("--held-on-close", choices=HELD_ON_CLOSE, default="deliver",
                   help="client closed while c2s frames are held by a delay: deliver them or discard them")
    p.add_argument("--max-frame", type=_positive_int, default=PROXY_MAX_FRAME, metavar="BYTES",
                   help="largest frame body accepted (match the servers' jute.maxbuffer; default "
                        f"{PROXY_MAX_FRAME} = jute.maxbuffer default + {JUTE_EXTRASIZE} slack)")
    return p


def _write_ready(path: str, doc: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    Path(tmp).write_text(json.dumps(doc))
    os.replace(tmp, path)


async def _amain(args: argparse.Namespace) -> int:
    specs = []
    for s in args.listen:
        try:
            specs.append(ListenerSpec.parse(s))
        except ValueError as e:
            raise UsageError(str(e)) from None
    chost, _, cport = args.control.rpartition(":")
    if not chost or not cport.isdigit():
        raise UsageError(f"--control {args.control!r}: expected HOST:PORT")
    rules = load_rules_file(args.rules) if args.rules else []
    ev = EventWriter(args.events, "zkproxy", run=args.run)
    proxy = ZkProxy(specs, ev, rules=rules, seed=args.seed, held_on_close=args.held_on_close,
                    max_frame=args.max_frame)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    control = None
    try:
        await proxy.start()
        control = ControlServer(proxy, loop, chost, int(cport))
        control.start()
        if args.ready_file:
            _write_ready(args.ready_file, {
                "pid": os.getpid(), "seed": args.seed, "events": str(args.events),
                "control": {"host": control.host, "port": control.port},
                "listeners": proxy.listeners_info(),
            })
        await stop.wait()
    finally:
        if control is not None:
            control.stop()
        await proxy.stop()
        ev.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(_amain(args))
    except UsageError as e:
        print(f"zkproxy: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        return EXIT_CRASH


if __name__ == "__main__":
    sys.exit(main())
