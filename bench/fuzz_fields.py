"""A missing field is never evidence (issue 46.2): delete one value field of one event of each
checker's holding and breaking history (tests/integration/test_check_fencing.py's ``CASES``) and
check every such history in one batch on a local SparkSession. A checker's verdict may stay as it
was or become ``unknown``; a definite verdict that differs from the intact history's (valid to
invalid, or invalid to valid) is a *wrong acceptance*: the missing field was read as data.

    .venv/bin/python bench/fuzz_fields.py [--list]     # every deletion, a table of flips by checker

Also the surface ``missing fields`` of bench/fuzz.py (``missing_fields``): every single deletion (a
seeded sample when n is smaller), then random cuts of two to four fields of one history up to n.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzzlib import Tally  # noqa: E402

from base.localstate import bench_scratch  # noqa: E402


def cases() -> dict[str, tuple[str, Any]]:
    """The checker cases of the integration test, loaded from its file (tests are not a package of
    the project, and this bench must run on a fresh clone the same way)."""
    spec = importlib.util.spec_from_file_location(
        "fencing_cases", ROOT / "tests" / "integration" / "test_check_fencing.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def intact() -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """{history name: (its checker, its events)} for each case, holding and broken."""
    from checkers.testing import EventLog

    out = {}
    for case, (checker, build) in cases().items():
        for bad in (False, True):
            log = EventLog(run=f"{case}-{bad}")
            build(log, bad)
            out[f"{case}-{'bad' if bad else 'good'}"] = (checker, log.events)
    return out


Cut = tuple[str, tuple[tuple[int, str], ...]]  # a history and the (event index, field) pairs it loses


def deletions(bases: dict[str, tuple[str, list[dict[str, Any]]]]) -> list[Cut]:
    """One cut for every value field of every event."""
    return [(name, ((i, k),)) for name, (_, events) in bases.items()
            for i, e in enumerate(events) if isinstance(e["value"], dict) for k in e["value"]]


def inputs(rng: random.Random, n: int, bases: dict[str, tuple[str, list[dict[str, Any]]]]) -> list[Cut]:
    """n cuts: every single deletion first (a seeded sample of them when n is smaller), then random cuts
    of two to four fields of one history."""
    singles = deletions(bases)
    if n <= len(singles):
        return rng.sample(singles, n)
    by_history: dict[str, list[tuple[int, str]]] = {}
    for name, ((i, k),) in singles:
        by_history.setdefault(name, []).append((i, k))
    names = sorted(n for n, fields in by_history.items() if len(fields) >= 2)
    out: list[Cut] = list(singles)
    while len(out) < n:
        name = rng.choice(names)
        out.append((name, tuple(sorted(rng.sample(by_history[name], min(len(by_history[name]), rng.randint(2, 4)))))))
    return out


def _write(path: Path, events: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return str(path)


def sweep(scratch: Path, chosen: list[Cut] | None = None, spark: Any = None) -> list[tuple[str, str, str, Any, Any]]:
    """Check every single deletion (or the ``chosen`` cuts) with the intact histories in one batch;
    returns each verdict change (what, checker, kind, before, after): kind "flip" (definite to
    definite) or "unknown" (definite to unknown, allowed)."""
    from checkers.project import check_histories
    from checkers.spark import get_spark

    bases = intact()
    chosen = deletions(bases) if chosen is None else chosen
    base_paths = {name: _write(scratch / f"{name}.jsonl", events) for name, (_, events) in bases.items()}
    cut_paths = {}
    for n, (name, cut) in enumerate(chosen):
        events = [dict(e) for e in bases[name][1]]
        for i, k in cut:
            events[i] = {**events[i], "value": {kk: v for kk, v in events[i]["value"].items() if kk != k}}
        cut_paths[(n, name, cut)] = _write(scratch / f"cut-{n}.jsonl", events)
    res = check_histories([*base_paths.values(), *cut_paths.values()], spark=spark or get_spark())
    changes = []
    for (_, name, cut), p in cut_paths.items():
        before, after = res[base_paths[name]]["checkers"], res[p]["checkers"]
        evs = bases[name][1]
        what = f"{name} without " + ", ".join(f"{k} of event {i} ({evs[i]['f']}/{evs[i]['type']})" for i, k in cut)
        for checker, c in after.items():
            b, a = before[checker]["valid"], c["valid"]
            if a != b:
                changes.append((what, checker, "unknown" if a == "unknown" else "flip", b, a))
    return changes


def missing_fields(rng: random.Random, n: int, scratch: Path) -> Tally:
    """Surface ``missing fields``: each deletion is one input; a flip is a wrong acceptance."""
    chosen = inputs(rng, n, intact())
    flips: dict[str, str] = {}
    for what, checker, kind, b, a in sweep(scratch, chosen):
        if kind == "flip":
            flips.setdefault(what, f"{what}: {checker} {b} -> {a}")
    tally = Tally()
    for _ in range(len(chosen) - len(flips)):
        tally.add("accepted")
    for example in flips.values():
        tally.add("wrong", example)
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print every flip, not only the table")
    args = ap.parse_args(argv)
    scratch = bench_scratch()  # harness teardown finds it if this is killed
    try:
        changes = sweep(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = len(deletions(intact()))
    flips = [c for c in changes if c[2] == "flip"]
    by_checker = Counter(c[1] for c in flips)
    print(f"{total} deletions, {len(flips)} flips, {sum(c[2] == 'unknown' for c in changes)} to unknown")
    for checker, count in by_checker.most_common():
        print(f"  {checker:32} {count}")
    if args.list:
        for what, checker, _, b, a in flips:
            print(f"{checker}: {what}: {b} -> {a}")
    return 1 if flips else 0


if __name__ == "__main__":
    sys.exit(main())
