"""Fuzz every surface that takes hostile input and print one table (issue 46.5): surface, inputs,
accepted, clean refusals, crashes, hangs, wrong acceptances. Exit 0 only when every surface has 0
crashes, 0 hangs and 0 wrong acceptances.

    .venv/bin/python bench/fuzz.py [--seed N] [--inputs N] [--only NAME ...] [--list] [--json]

Deterministic for a seed (each surface gets its own ``random.Random(f"{seed}/{name}")``). ``--inputs``
sets the inputs per surface (default: each surface's own, >= 10,000 for pure ones). A surface that
starts servers (ZooKeeper, the proxy) starts them in a scratch directory and stops them, and removes
it, even on error or SIGTERM. A benchmark, not a test: nothing asserts timings.

Adding a surface is one entry in ``SURFACES``: a name, a runner ``(rng, n, scratch) -> Tally`` and a
default input count. A runner judges each input with ``Tally.judge`` (or counts itself): an input is
*accepted* or *cleanly refused*; a *crash* is any other exception (or a 5xx, a dead server); a *hang*
is an input that neither answers nor closes in bounded time; a *wrong acceptance* is an input known
invalid (or misread) that was accepted.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import random
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the runners, bench/fuzz_*.py

from fuzz_inputs import SURFACES as INPUT_SURFACES  # noqa: E402
from fuzzlib import Tally  # noqa: E402

from base.localstate import bench_scratch  # noqa: E402
from base.parsing import summary  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402


@dataclass(frozen=True)
class Surface:
    runner: str  # "module:function" under bench/, imported when the surface runs
    inputs: int  # default inputs
    doc: str

    def run(self, rng: random.Random, n: int, scratch: Path) -> Tally:
        mod, _, fn = self.runner.partition(":")
        module = importlib.import_module(mod)
        # a function of the module, or a surface of a module's own table (fuzz_inputs.SURFACES)
        run: Callable[[random.Random, int, Path], Tally] = getattr(module, fn, None) or \
            functools.partial(module.run_named, fn)
        return run(rng, n, scratch)


# One entry per surface: name -> runner (rng, n, scratch) -> Tally, default inputs, what it feeds.
SURFACES: dict[str, Surface] = {
    "zkwire decode": Surface("fuzz_wire:zkwire_decode", 10_000,
                             "random, mutated and nested-multi request/reply/handshake bodies, by zkwire"),
    "zkproxy live": Surface("fuzz_wire:zkproxy_live", 2_000,
                            "frames and garbage through the proxy process to a real ZooKeeper"),
    "control API": Surface("fuzz_wire:control_api", 10_000,
                           "raw HTTP requests to the proxy's control API handler on loopback"),
    "kafka decode": Surface("fuzz_kafka:kafka_decode", 10_000,
                            "random and mutated Kafka request/response bodies, by the kio codec (round trip)"),
    "kafkaproxy live": Surface("fuzz_kafka:kafkaproxy_live", 2_000,
                               "malformed frames and hostile sizes through the Kafka proxy process to an echo server"),
    "history files": Surface("fuzz_history:history_files", 10_000,
                             "real lines with one changed: refused on exactly that line, or read the same"),
    "missing fields": Surface("fuzz_fields:missing_fields", 10_000,
                              "each value field of each checker case deleted: unknown or as before, never a flip"),
    "history check": Surface("fuzz_history:history_check", 200,
                             "damaged histories through the real check on Spark: refused, or skipped and unknown"),
    # every command's flags, schedule, campaign and inventory files, EDN: bench/fuzz_inputs.py's table
    **{name: Surface(f"fuzz_inputs:{name}", 10_000, f"{name}: random and mutated input to the real parser")
       for name in INPUT_SURFACES},
}


def run_surfaces(names: list[str], seed: int, inputs: int | None) -> dict[str, Tally]:
    out: dict[str, Tally] = {}
    for name in names:
        s = SURFACES[name]
        scratch = bench_scratch()  # harness teardown finds it (and what runs in it) if this is killed
        t0 = time.monotonic()
        try:
            tally = s.run(random.Random(f"{seed}/{name}"), inputs or s.inputs, scratch)
        except Exception as e:  # noqa: BLE001 - a runner that dies is a crash of its surface
            tally = Tally()
            tally.add("crash", f"runner: {type(e).__name__}: {e} @ {traceback.format_exc(limit=-3)!r}")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        tally.seconds = time.monotonic() - t0
        out[name] = tally
        print(f"  {name}: {tally.inputs} inputs in {tally.seconds:.1f}s", file=sys.stderr, flush=True)
    return out


def table(results: dict[str, Tally]) -> str:
    head = ("surface", "inputs", "accepted", "clean refusals", "crashes", "hangs", "wrong acceptances")
    rows = [head] + [
        (n, *(str(v) for v in (t.inputs, t.counts["accepted"], t.counts["refused"], t.counts["crash"],
                               t.counts["hang"], t.counts["wrong"])))
        for n, t in results.items()
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=summary(__doc__))
    ap.add_argument("--seed", type=int, default=46, help="seed (each surface derives its own RNG from it)")
    ap.add_argument("--inputs", type=int, help="inputs per surface (default: each surface's own)")
    ap.add_argument("--only", action="append", metavar="NAME", help="run only this surface (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the surfaces and exit")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    surfaces = SURFACES
    if args.list:
        width = max(map(len, surfaces))
        for n, s in surfaces.items():
            print(f"{n:<{width}}  {s.inputs:>7}  {s.doc}")
        return 0
    names = args.only or list(surfaces)
    unknown = [n for n in names if n not in surfaces]
    if unknown:
        ap.error(f"unknown surface {unknown[0]!r} (one of: {', '.join(surfaces)})")
    if args.inputs is not None and args.inputs < 1:
        ap.error("--inputs must be >= 1")
    results = run_surfaces(names, args.seed, args.inputs)
    if args.json:
        print(json.dumps({n: {**t.counts, "inputs": t.inputs, "seconds": round(t.seconds, 1),
                              "examples": t.examples} for n, t in results.items()}, indent=2))
    else:
        print(f"fuzz, seed {args.seed}")
        print(table(results))
        for n, t in results.items():
            for ex in t.examples:
                print(f"  {n}: {ex}")
    return 0 if all(t.failures == 0 and t.inputs > 0 for t in results.values()) else 1


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what a surface started is stopped on SIGTERM too
        sys.exit(main())
