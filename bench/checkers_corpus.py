"""Benchmark: our WGL checker (Spark, one job; and the pure path) vs Porcupine (Go) on the reference corpus.

Usage: python bench/checkers_corpus.py [--histories DIR] [--budget-seconds S]
Prints per-engine wall times for the files both can read (Porcupine etcd + kv), the ratio, and
verdict agreement; also our time for the whole corpus (Knossos files included). Not a test.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import porcupine_bin  # noqa: E402  (bench/ is on sys.path: this script's directory)

from base.parsing import summary  # noqa: E402
from checkers import linearizability, models, parsers  # noqa: E402
from checkers.testing import shared_histories  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=summary(__doc__))
    ap.add_argument("--histories", default=None)
    ap.add_argument("--budget-seconds", type=float, default=20.0)
    a = ap.parse_args()
    root = Path(a.histories) if a.histories else shared_histories()
    if root is None:
        print("reference corpus not found (set HARNESS_SHARED_HISTORIES)", file=sys.stderr)
        return 254
    rows = list(csv.DictReader(open(root / "VERDICTS.tsv"), delimiter="\t"))
    expected = {r["file"]: r["expected"] for r in rows}
    binary = porcupine_bin.build()
    try:
        t0 = time.monotonic()
        out = subprocess.run([str(binary), str(root)], check=True, capture_output=True, text=True).stdout
        go_wall = time.monotonic() - t0
    finally:
        shutil.rmtree(binary.parent, ignore_errors=True)
    go = {ln.split("\t")[0]: ln.split("\t")[1] for ln in out.splitlines() if not ln.startswith("TOTAL")}
    go_check = float(out.splitlines()[-1].split("\t")[2])

    t0 = time.monotonic()
    hs = []
    for r in rows:
        fmt, ops = parsers.load(root / r["file"])
        hs.append((r["file"], ops, models.make_model(parsers.default_model(fmt, ops))))
    parse_s = time.monotonic() - t0
    from checkers.spark import get_spark

    spark = get_spark()
    spark.range(1).count()
    sub = [h for h in hs if h[0] in go]
    res = {}
    for label, hist in (("porcupine-files", sub), ("whole-corpus", hs)):
        t0 = time.monotonic()
        res[label] = linearizability.check_spark(spark, hist, budget_seconds=a.budget_seconds)
        res[label + "-s"] = time.monotonic() - t0
        t0 = time.monotonic()
        res[label + "-pure"] = linearizability.check_local(hist, budget_seconds=a.budget_seconds)
        res[label + "-pure-s"] = time.monotonic() - t0

    def verdict(v: object) -> str:
        return "valid" if v is True else "invalid" if v is False else "unknown"

    ours = {k: verdict(v["valid"]) for k, v in res["porcupine-files"].items()}
    agree = sum(ours[k] == go[k] for k in go)
    print(f"files both engines read (Porcupine etcd+kv): {len(go)}")
    print(f"  Porcupine (Go) check time, sum over files : {go_check:8.3f} s (process wall incl. parsing {go_wall:.3f} s)")
    print(f"  ours, Spark, one job (session warm)       : {res['porcupine-files-s']:8.3f} s  ratio {res['porcupine-files-s'] / go_check:.1f}x")
    print(f"  ours, pure Python in-process              : {res['porcupine-files-pure-s']:8.3f} s  ratio {res['porcupine-files-pure-s'] / go_check:.1f}x")
    print(f"  verdict agreement ours vs Porcupine       : {agree}/{len(go)}")
    print(f"  Porcupine vs VERDICTS.tsv                 : {sum(go[k] == expected[k] for k in go)}/{len(go)}")
    allv = {k: verdict(v["valid"]) for k, v in res["whole-corpus"].items()}
    print(f"whole corpus ({len(hs)} files, parse {parse_s:.2f} s): Spark {res['whole-corpus-s']:.3f} s, "
          f"pure {res['whole-corpus-pure-s']:.3f} s, agreement with VERDICTS.tsv {sum(allv[k] == expected[k] for k in allv)}/{len(allv)}")
    for k in ("porcupine/kv/c50-ok.txt", "porcupine/kv/c50-bad.txt"):
        print(f"  {k}: Porcupine {go[k]}; ours {ours[k]} (cpu {res['porcupine-files'][k]['stats']['cpu_seconds']} s)")
    return 0


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
