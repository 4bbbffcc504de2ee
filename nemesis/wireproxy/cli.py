"""``python -m nemesis.<proxy>``'s shared half: the common arguments, the ready file, and the serve
loop (start the proxy and its control API, run until SIGTERM/SIGINT, stop everything, also on error).

Role in the data path: process entry of every wire proxy (``nemesis.zkproxy.__main__``,
``nemesis.kafkaproxy.__main__``); each adds its own arguments and builds its proxy.

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
from collections.abc import Callable
from pathlib import Path

from base.errors import EXIT_BAD_INPUT, EXIT_CRASH, UsageError
from history import EventWriter
from nemesis.wireproxy.control import ControlServer
from nemesis.wireproxy.proxy import HELD_ON_CLOSE, ListenerSpec, WireProxy


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def positive_int(s: str) -> int:
    try:
        n = int(s, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
    if not 0 < n < 2**31:
        raise argparse.ArgumentTypeError(f"must be in [1, 2^31), got {n}")
    return n


def build_parser(prog: str, description: str, src: str, max_frame: int, max_frame_help: str) -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description=description)
    p.add_argument("--listen", action="append", required=True, metavar="HOST:PORT=UPSTREAM_HOST:PORT",
                   help="one listener per upstream server; port 0 picks a free port")
    p.add_argument("--events", required=True, help=f"JSONL event file (src={src})")
    p.add_argument("--control", default="127.0.0.1:0", help="control API address (loopback)")
    p.add_argument("--rules", help="rules file (.toml or .json)")
    p.add_argument("--seed", type=int, default=0, help="seed of the rules' probability RNGs (logged)")
    p.add_argument("--ready-file", help="write the bound ports here as JSON when ready")
    p.add_argument("--run", default="", help="run id for the event envelope")
    p.add_argument("--held-on-close", choices=HELD_ON_CLOSE, default="deliver",
                   help="client closed while c2s frames are held by a delay: deliver them or discard them")
    p.add_argument("--max-frame", type=positive_int, default=max_frame, metavar="BYTES", help=max_frame_help)
    return p


def parse_listeners(args: argparse.Namespace) -> list[ListenerSpec]:
    specs = []
    for s in args.listen:
        try:
            specs.append(ListenerSpec.parse(s))
        except ValueError as e:
            raise UsageError(str(e)) from None
    return specs


def _write_ready(path: str, doc: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    Path(tmp).write_text(json.dumps(doc))
    os.replace(tmp, path)


async def serve(args: argparse.Namespace, proxy: WireProxy, ev: EventWriter) -> int:
    chost, _, cport = args.control.rpartition(":")
    if not chost or not cport.isdigit():
        ev.close()
        raise UsageError(f"--control {args.control!r}: expected HOST:PORT")
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


def run(name: str, parser: argparse.ArgumentParser, amain: Callable[[argparse.Namespace], object],
        argv: list[str] | None = None) -> int:
    """Parse, run ``amain(args)`` (a coroutine) to the end; bad input is one line and exit 254."""
    args = parser.parse_args(argv)
    try:
        return asyncio.run(amain(args))  # type: ignore[arg-type]
    except UsageError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        return EXIT_CRASH
