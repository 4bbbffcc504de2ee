"""Benchmark: WGL on a generated register history (1M operations over 1,000 keys), ours on Spark vs
Porcupine (Go) on the same file. Not a test.

Usage: python bench/wgl_register.py [--sizes 1e6] [--keys 1000] [--processes 100] [--no-stale]
                                    [--seed 7] [--out /tmp/zkfence-bench-wgl] [--budget-seconds 600]
                                    [--old-path [--edn-parser]]

The history is a register per key (Porcupine's kv format: ``put`` / ``get``, one file), written by
a simulation that is linearizable by construction: ``--processes`` clients each run one op at a
time on a random key; an op takes effect at the moment it completes (a put sets the key, a get
returns the key's value then), so that moment is its linearization point. With ``--stale`` (the
default) a second history is the same run with one injected stale read: a get, invoked after
two puts of its key had completed, returns the value before the later put (unique values: no
linearization can explain it), so it must be invalid.

Timed on each history: Porcupine (``bench/porcupine``, kv model partitioned by key) — its own
check time and its process wall time with parsing; ours — the whole check from the file
(``checkers.ref_search.check_files``: one Spark job that parses and pairs the file in the JVM on an
executor, shuffles the ops by key and runs the search in a task per group of keys, fed Arrow
columns; ``local[*]``), on a warm session (one check of a 20,000-op history first, untimed). Printed side by side with the ratio ours ÷ Porcupine and
both verdicts, then where our time went: the session JVM's CPU (parse, pairing, shuffle, Arrow
out) and the Python tasks' CPU (Arrow in, building ops, search), and the load average.
``--old-path`` times the former path instead: the file parsed on the driver (a regex per line),
its ops shipped to ``checkers.linearizability.check_spark``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import porcupine_bin  # noqa: E402  (bench/ is on sys.path: this script's directory)
from sizes import parse_sizes  # noqa: E402  (bench/ is on sys.path: this script's directory)
from spark_up import jvm_cpu, warm_spark  # noqa: E402

from base.parsing import summary  # noqa: E402
from checkers import linearizability, models, parsers, ref_ops, ref_search  # noqa: E402
from checkers.ops import OPEN, UNKNOWN, Op  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402


def generate(n: int, keys: int, processes: int, seed: int, stale: bool) -> list[str]:
    """Porcupine kv lines of an n-op history; with ``stale``, one get returns an overwritten value."""
    rng = random.Random(seed)
    value: dict[int, str] = {}  # key -> current value ("" initially, as Porcupine's kv model)
    before_last: dict[int, str] = {}  # key -> the value the latest completed put replaced
    pending: list[tuple[int, int, str, str, str | None]] = []  # (process, key, f, put value, stale candidate)
    idle = list(range(processes))
    lines: list[str] = []
    started = 0
    injected = not stale

    def line(p: int, typ: str, f: str, k: int, v: str | None) -> str:
        val = "nil" if v is None else f'"{v}"'
        return f'{{:process {p}, :type :{typ}, :f :{f}, :key "{k}", :value {val}}}'

    while started < n or pending:
        if started < n and idle and (not pending or rng.random() < 0.5):
            p = idle.pop(rng.randrange(len(idle)))
            k = rng.randrange(keys)
            if rng.random() < 0.5:
                v = f"x{started}"
                pending.append((p, k, "put", v, None))
                lines.append(line(p, "invoke", "put", k, v))
            else:
                # an overwritten value this get may never return: a put replaced it before this call
                pending.append((p, k, "get", "", before_last.get(k)))
                lines.append(line(p, "invoke", "get", k, None))
            started += 1
            continue
        p, k, f, v, candidate = pending.pop(rng.randrange(len(pending)))
        idle.append(p)
        if f == "put":  # takes effect now: its linearization point
            before_last[k] = value.get(k, "")
            value[k] = v
            lines.append(line(p, "ok", "put", k, v))
        else:
            out = value.get(k, "")
            if not injected and started >= n // 2 and candidate is not None and candidate != out:
                out, injected = candidate, True
            lines.append(line(p, "ok", "get", k, out))
    return lines


_KV = re.compile(r'{:process (\d+), :type :(\w+), :f :(\w+), :key "(.*)", :value (nil|"(.*)")}')


def parse_fast(path: Path) -> list[Op]:
    """The kv lines this bench writes, to the ops ``checkers.parsers.parse_porcupine_kv`` builds
    (same fields, times = line numbers), with one regex per line as Porcupine's parser does: the
    project's parser goes through a general EDN reader, ~0.4 ms a line on this machine, which
    would dominate a 2M-line file. ``--edn-parser`` uses it anyway."""
    ops: list[Op] = []
    pending: dict[int, Op] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, 1):
            m = _KV.match(text)
            if m is None:
                continue
            proc, typ, f, key, val = int(m[1]), m[2], m[3], m[4], m[6]
            if typ == "invoke":
                op = Op(len(ops), proc, f, (f, key, val if f != "get" else None), UNKNOWN, lineno, OPEN, lineno)
                ops.append(op)
                pending[proc] = op
            else:
                op = pending.pop(proc)
                op.ret, op.ret_line = float(lineno), lineno
                op.output = val if f == "get" else None
    return ops


def porcupine(binary: Path, root: Path, timeout_s: float) -> tuple[dict[str, tuple[str, float]], float]:
    t0 = time.monotonic()
    out = subprocess.run([str(binary), "-timeout", f"{timeout_s:g}s", str(root)], check=True, capture_output=True,
                         text=True).stdout
    wall = time.monotonic() - t0
    got = {}
    for ln in out.splitlines():
        name, verdict, secs = ln.split("\t")
        if name != "TOTAL":
            got[name] = (verdict, float(secs))
    return got, wall


def verdict(v: object) -> str:
    return "valid" if v is True else "invalid" if v is False else "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=summary(__doc__))
    ap.add_argument("--sizes", default="1e6", help="operations per history, comma-separated (default 1e6)")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--processes", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-stale", action="store_true", help="only the valid history")
    ap.add_argument("--old-path", action="store_true",
                    help="the former path: parse on the driver (a regex per line), ship the ops to the Spark job")
    ap.add_argument("--edn-parser", action="store_true",
                    help="with --old-path: parse with checkers.parsers.load (the general EDN reader; slow on 2M lines)")
    ap.add_argument("--out", default="/tmp/zkfence-bench-wgl")
    ap.add_argument("--budget-seconds", type=float, default=600.0,
                    help="per-part CPU budget of ours and per-file timeout of Porcupine (default 600)")
    a = ap.parse_args()
    sizes = parse_sizes(a.sizes)
    root = Path(a.out)
    shutil.rmtree(root, ignore_errors=True)
    (root / "porcupine" / "kv").mkdir(parents=True)
    files: list[tuple[str, str]] = []
    for n in sizes:
        for stale in (False,) if a.no_stale else (False, True):
            name = f"porcupine/kv/register-{n}-{'stale' if stale else 'ok'}.txt"
            t0 = time.monotonic()
            lines = generate(n, a.keys, a.processes, a.seed, stale)
            (root / name).write_text("\n".join(lines) + "\n")
            print(f"generated {name}: {n:,} ops over {a.keys:,} keys, {a.processes} processes, "
                  f"{len(lines):,} lines in {time.monotonic() - t0:.1f} s", flush=True)
            files.append((name, "invalid" if stale else "valid"))
    (root / "VERDICTS.tsv").write_text("file\tmodel\texpected\n" + "".join(f"{f}\tkv register\t{e}\n" for f, e in files))

    binary = porcupine_bin.build()
    try:
        go, go_wall = porcupine(binary, root, a.budget_seconds)
    finally:
        shutil.rmtree(binary.parent, ignore_errors=True)
    print(f"Porcupine: {len(go)} files in {go_wall:.1f} s of process wall time (parsing included)", flush=True)

    spark = warm_spark()
    # "warm" as a checking session is: the same job once on a small history first (the JIT compiles
    # the parser, the shuffle and the Arrow path; Python workers start), untimed
    warm = root / "porcupine" / "warm-up.txt"
    warm.write_text("\n".join(generate(20_000, 100, a.processes, a.seed, False)) + "\n")
    if a.old_path:
        linearizability.check_spark(spark, [("w", parse_fast(warm), models.make_model("kv"))])
    else:
        ref_search.check_files(spark, [ref_ops.RefFile("w", str(warm), ref_ops.KV, "kv")])
    for name, expected in files:
        load0 = os.getloadavg()[0]
        cpu0, t0 = jvm_cpu(spark), time.monotonic()
        timings: dict[str, float] = {}
        parse_s = 0.0
        if a.old_path:
            ops = parsers.load(root / name)[1] if a.edn_parser else parse_fast(root / name)
            parse_s = time.monotonic() - t0
            res = linearizability.check_spark(spark, [(name, ops, models.make_model("kv"))],
                                              budget_seconds=a.budget_seconds)[name]
        else:
            got, fallback = ref_search.check_files(
                spark, [ref_ops.RefFile(name, str(root / name), ref_ops.KV, "kv")],
                budget_seconds=a.budget_seconds, timings=timings)
            if fallback:
                raise SystemExit(f"{name}: the JVM parser declined it (a line not in the bench's shape)")
            res = got[name]
        ours_s = time.monotonic() - t0
        jvm_s = jvm_cpu(spark) - cpu0
        gv, gs = go[name]
        ov = verdict(res["valid"])
        st = res["stats"]
        how = f"parse on the driver {parse_s:.1f} s + job" if a.old_path else "one job from the file"
        print(f"{name}: {st['ops']:,} ops, {st['parts']} keys | Porcupine check {gs:7.2f} s -> {gv} | ours on Spark "
              f"{ours_s:7.2f} s ({how}) -> {ov} | ratio ours/Porcupine {ours_s / gs:6.1f}x (target <= 1x, "
              f"then 0.5x) | verdicts {'agree' if gv == ov else 'DIFFER'}, expected {expected}", flush=True)
        where = (f"  where: session JVM CPU {jvm_s:.1f} s{' (with --old-path also the driver)' if a.old_path else ''}; "
                 f"search CPU in parts "
                 f"{st['cpu_seconds']:.1f} s")
        if timings:
            where += (f"; in the file's task: read, parse, pair and group {timings['parse_cpu']:.1f} s CPU, "
                      f"search on its threads {timings['search_cpu']:.1f} s CPU")
        print(f"{where}; load average {load0:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
        if res["valid"] is False:
            print(f"  ours cites: {res['anomalies'][0]['message'][:300]} {res['anomalies'][0]['event_ids']}")
    return 0


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
