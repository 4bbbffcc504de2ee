"""Fuzz the reading of histories (issue 46.5): damaged lines and histories through the one validator
(``history.validate``), and a smaller sample through the real check on Spark. Surfaces for
bench/fuzz.py, each a runner ``(rng, n, scratch) -> Tally``; runnable alone with the same table:

    .venv/bin/python bench/fuzz_history.py [--seed N] [--inputs N] [--spark N] [--measure LINES]

* ``history files``: each input is a small history of real lines (checkers/warm_up.jsonl, a real
  run's 37 kinds) with one line changed. Damage of a known class (a mistyped envelope or declared
  value field, an int beyond 64 bits, ``NaN``, a byte-order mark, bytes that are not UTF-8, a lone
  surrogate, a carriage return, a truncated line, trailing garbage, a duplicated line...) must be a
  clean refusal naming that line; an intact control (keys reordered, spaces, an escaped letter, an
  undeclared or a null field) must be accepted: a refusal of one counts as wrong too (the validator
  misjudged it). Random byte edits have no known answer: accepted or refused, and an accepted line
  must read back the same. The plain reader (``read_records``) must agree with the scan.
* ``history check``: histories of a registration and a queue workload with one damaged line through
  ``checkers.project.check_histories`` on a local SparkSession, each judged twice (so 2n inputs):
  refused naming the line; with ``skip_damaged`` (one batch) unknown, the line counted.

``--measure LINES`` times the validator over a history of that many real lines (and ``json.loads``
alone, for scale). A benchmark, not a test: nothing asserts timings.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzzlib import Tally, WrongAcceptance  # noqa: E402 - bench/fuzz.py's bookkeeping

from history import HistoryFormatError, read_records, scan_file  # noqa: E402
from history.kinds import KINDS  # noqa: E402

WARM_UP = Path(__file__).resolve().parents[1] / "checkers" / "warm_up.jsonl"
HISTORY_LINES = 12  # lines per fuzzed history: the changed one somewhere among intact ones
WRONG_TYPED = {  # per declared type: values of another type, or out of its range
    "int": ["5", 5.0, True, 2**63, -(2**63) - 1, [5], {"a": 5}],
    "float": [True, "x", [1.5], {"a": 1}],
    "bool": [0, 1, "true", [True]],
    "str": [5, 1.5, True, ["x"], {"a": "x"}],
    "ints": [5, ["5"], [1.5], [True], [2**64], {"a": 1}],
    "strs": ["x", [5], [None, 5], {"a": "x"}],
    "int_map": [[1], {"a": "1"}, {"a": 2**64}, {"a": 1.5}],
    "str_map": [["x"], {"a": 5}, {"a": ["x"]}],
}
ENVELOPE_DAMAGE: list[tuple[str, Any]] = [
    ("src", 5), ("src", ""), ("src", ["a"]), ("seq", "1"), ("seq", 1.0), ("seq", 0), ("seq", -3), ("seq", True),
    ("seq", 2**63), ("t_wall", "1.5"), ("t_wall", True), ("t_wall", None), ("t_mono", "7"), ("t_mono", 1.5),
    ("t_mono", 2**64), ("t_mono", None), ("type", "done"), ("type", 3), ("f", ""), ("f", 5), ("id", "x/1"),
    ("id", 5), ("index", -1), ("index", "3"), ("index", 2**63), ("run", 5), ("process", [1]),
    ("process", {"a": 1}), ("process", 1.5), ("process", 2**70), ("value", "x"), ("value", [1]), ("value", 5),
]
REQUIRED = ("src", "seq", "t_wall", "type", "f")


def real_lines() -> list[str]:
    return WARM_UP.read_text(encoding="utf-8").splitlines()


def _declared(d: dict[str, Any]) -> list[tuple[str, str]]:
    kind = KINDS.get(d.get("f", ""))
    return [] if kind is None else [(k, t) for k, t in kind.fields.items() if t in WRONG_TYPED]


# --- one changed line: (label, lines to put in its place, expected: "damaged" | "intact" | None) ---------
def damage(rng: random.Random, line: str) -> tuple[str, list[bytes], str | None]:
    d = json.loads(line)
    enc: Callable[[Any], bytes] = lambda x: json.dumps(x).encode()  # noqa: E731
    r = rng.random()
    if r < 0.25:  # a declared value field of the wrong type or out of range
        fields = _declared(d)
        if fields:
            name, t = rng.choice(fields)
            bad = rng.choice(WRONG_TYPED[t])
            return f"value.{name}:{t}={json.dumps(bad)[:20]}", [enc({**d, "value": {**d["value"], name: bad}})], "damaged"
    if r < 0.45:
        name, bad = rng.choice(ENVELOPE_DAMAGE)
        return f"{name}={json.dumps(bad)[:20]}", [enc({**d, name: bad})], "damaged"
    if r < 0.5:
        name = rng.choice(REQUIRED)
        return f"no {name}", [enc({k: v for k, v in d.items() if k != name})], "damaged"
    if r < 0.7:
        raw = line.encode()
        how = rng.choice(["bom", "nan", "inf", "huge", "surrogate", "cr", "utf8", "truncate", "trailing", "two",
                          "quote", "comma", "duplicate", "array"])
        i = rng.randrange(1, len(raw) - 1)
        out = {
            "bom": lambda: ["\ufeff".encode() + raw],
            "nan": lambda: [raw.replace(b'"t_wall":', b'"t_wall":NaN,"x":', 1)],
            "inf": lambda: [raw.replace(b'"t_wall":', b'"t_wall":-Infinity,"x":', 1)],
            "huge": lambda: [raw.replace(b'"t_wall":', b'"t_wall":1e999,"x":', 1)],
            "surrogate": lambda: [enc({**d, "run": "\udc80" + str(d.get("run") or "")})],  # an escape
            "cr": lambda: [raw.replace(b",", b",\r", 1)],
            "utf8": lambda: [raw[:i] + rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80"]) + raw[i:]],
            "truncate": lambda: [raw[:i]],
            "trailing": lambda: [raw + rng.choice([b"x", b"}", b",", b"{}", b" 1"])],
            "two": lambda: [raw + raw],
            "quote": lambda: [raw.replace(b'"src"', b"'src'", 1)],
            "comma": lambda: [raw[:-1] + b",}"],
            "duplicate": lambda: [raw, raw],
            "array": lambda: [b"[" + raw + b"]"],
        }[how]()
        return how, out, "damaged"
    if r < 0.85:  # intact controls: the same event written another way
        how = rng.choice(["reorder", "spaces", "escape", "undeclared", "null", "drop", "crlf"])
        if how == "reorder":
            return how, [enc(dict(reversed(list(d.items()))))], "intact"
        if how == "spaces":
            return how, [json.dumps(d, indent=None, separators=(" , ", " : ")).encode() + b" \t"], "intact"
        if how == "escape":
            return how, [line.replace('"type"', '"\\u0074ype"', 1).encode()], "intact"
        if how == "crlf":
            return how, [line.encode() + b"\r"], "intact"
        fields = list(d.get("value") or {})
        if how == "undeclared" or not fields:
            return "undeclared", [enc({**d, "value": {**(d.get("value") or {}), "zz_not_declared": [1, "x"]}})], "intact"
        name = rng.choice(fields)
        if how == "null":
            return how, [enc({**d, "value": {**d["value"], name: None}})], "intact"
        return how, [enc({**d, "value": {k: v for k, v in d["value"].items() if k != name}})], "intact"
    raw = bytearray(line.encode())  # random edits: no known answer
    for _ in range(rng.randint(1, 4)):
        j = rng.randrange(len(raw))
        op = rng.random()
        if op < 0.4:
            raw[j] = rng.randrange(256)
        elif op < 0.7:
            del raw[j]
        else:
            raw.insert(j, rng.choice(b'{}[]":,0123456789eE.-+ntfu\\\xff'))
    return "random", [bytes(raw)], None


def _history(rng: random.Random, lines: list[str]) -> tuple[list[str], int]:
    """HISTORY_LINES consecutive real lines, and which one to change (not the first)."""
    start = rng.randrange(len(lines) - HISTORY_LINES)
    return lines[start:start + HISTORY_LINES], rng.randrange(1, HISTORY_LINES)


def history_files(rng: random.Random, n: int, scratch: Path) -> Tally:
    """Surface ``history files``: n small histories, one changed line each, through the validator."""
    tally, lines = Tally(), real_lines()
    path = scratch / "h.jsonl"
    for k in range(n):
        window, at = _history(rng, lines)
        label, changed, expected = damage(rng, window[at])
        body = [x.encode() for x in window[:at]] + changed + [x.encode() for x in window[at + 1:]]
        path.write_bytes(b"".join(x + b"\n" for x in body))
        bad_line = at + len(changed)  # a duplicate's second copy; else the changed line itself
        tally.judge(f"#{k} line {at + 1} {label}",
                    lambda e=expected, b=bad_line, c=at + 1: _judge_file(path, e, b, c))
    return tally


def _judge_file(path: Path, expected: str | None, bad_line: int, changed_line: int) -> str:
    scan = scan_file(path)
    try:
        plain = sum(1 for _ in read_records(path))
        plain_error = None
    except HistoryFormatError as e:
        plain, plain_error = None, str(e)
    if scan.torn:
        raise WrongAcceptance("a line with a newline after it was taken for a torn tail")
    if scan.damaged_total == 0:
        if plain_error is not None or plain != scan.events:
            raise WrongAcceptance(f"the scan accepted every line, the plain reader: {plain_error or plain}")
        if expected == "damaged":
            raise WrongAcceptance("damage accepted as an event")
        return "accepted"
    where = [d.line for d in scan.damaged]
    if plain_error is None or not plain_error.startswith(f"{path}:{where[0]}: not a valid event: "):
        raise WrongAcceptance(f"the scan refused line {where}, the plain reader said {plain_error or plain}")
    if expected == "intact":
        raise WrongAcceptance(f"an intact line refused: {scan.damaged[0].reason}")
    if expected == "damaged" and where != [bad_line]:
        raise WrongAcceptance(f"damage at line {bad_line}, refused {where}")
    # a random edit may write a newline (two lines of one, the rest shifted) or make the event's id
    # another's (that other line is then its duplicate): the first line refused is still the changed one
    if expected is None and where[0] not in (changed_line, changed_line + 1):
        raise WrongAcceptance(f"random edit at line {changed_line}, refused {where}")
    return "refused"


# --- the real check on Spark ---------------------------------------------------------------------------
def _check_histories() -> list[list[str]]:
    """Intact histories a registration and a queue workload write (every checker valid on them)."""
    from checkers.testing import EventLog

    out = []
    for build in (_registered, _queue):
        log = EventLog()
        build(log)
        out.append([json.dumps(e) for e in log.events])
    return out


def _registered(log: Any) -> None:
    log.emit("agent:1", "agent_start", process=1, broker_id=1, pid=11, toggles={}, session_timeout_ms=6000)
    log.emit("agent:1", "session", process=1, broker_id=1, state="connected", session_id=256)
    log.emit("agent:1", "register", "invoke", 1, broker_id=1, attempt=1, mode="3x", session_id=256)
    log.emit("agent:1", "register", "ok", 1, broker_id=1, epoch=8589934597, czxid=8589934597, session_id=256,
             owner=256, path_existed=False)
    log.t += 10
    log.emit("observer", "broker_znode", broker_id=1, exists=True, czxid=8589934597, owner=256,
             mzxid=8589934597, final=True)
    log.emit("harness", "run_end", live_brokers=[1])


def _queue(log: Any) -> None:
    for offset, v in enumerate("abc"):
        log.emit("client", "send", "invoke", 0, topic="q", partition=0, value=v, acks="all")
        log.emit("client", "send", "ok", 0, topic="q", partition=0, value=v, acks="all", offset=offset, leader=1)
    for recs in ([(0, "a"), (1, "b")], [(2, "c")]):
        log.emit("client", "poll", "invoke", 1, topic="q", partition=0, consumer=1, offset=recs[0][0])
        log.emit("client", "poll", "ok", 1, topic="q", partition=0, consumer=1, offset=recs[0][0],
                 offsets=[o for o, _ in recs], values=[v for _, v in recs], hw=3, leader=1, leader_epoch=0)
    log.emit("client", "final_read", "invoke", "final", topic="q", partition=0)
    log.emit("client", "final_read", "ok", "final", topic="q", partition=0, offsets=[0, 1, 2], values=list("abc"),
             hw=3, leader=1, leader_epoch=0)


def history_check(rng: random.Random, n: int, scratch: Path) -> Tally:
    """Surface ``history check``: n damaged histories through the real check on a local SparkSession."""
    from base.errors import UsageError
    from checkers.project import check_histories
    from checkers.spark import get_spark

    spark, tally, bases = get_spark(), Tally(), _check_histories()
    made: list[tuple[str, int, str]] = []
    while len(made) < n:
        base = rng.choice(bases)
        at = rng.randrange(len(base))
        label, changed, expected = damage(rng, base[at])
        if expected != "damaged":
            continue
        p = scratch / f"{len(made)}.jsonl"
        p.write_bytes(b"".join(x + b"\n" for x in [y.encode() for y in base[:at]] + changed
                               + [y.encode() for y in base[at + 1:]]))
        made.append((str(p), at + len(changed), label))

    def refused(path: str, line: int) -> str:
        try:
            check_histories([path], spark=spark)
        except UsageError as e:
            if not str(e).startswith(f"{path}:{line}: not a valid event: "):
                raise WrongAcceptance(f"refused, but not naming line {line}: {e}") from None
            return "refused"
        raise WrongAcceptance("a damaged history was checked")

    for path, line, label in made:
        tally.judge(f"{Path(path).name} line {line} {label}", lambda path=path, line=line: refused(path, line))
    t0 = time.monotonic()
    skipped = check_histories([p for p, _, _ in made], spark=spark, skip_damaged=True)  # one batch
    took = time.monotonic() - t0
    for path, line, label in made:
        r = skipped[path]
        what = f"{Path(path).name} --skip-damaged line {line} {label}"
        if r["valid"] != "unknown":
            tally.add("wrong", f"{what}: checked {r['valid']} with a damaged line skipped")
        elif r["stats"].get("damaged_lines") != 1:
            tally.add("wrong", f"{what}: damaged_lines {r['stats'].get('damaged_lines')}")
        elif took > 5.0 * len(made):
            tally.add("hang", f"{what}: the batch took {took:.0f}s")
        else:
            tally.add("refused")
    return tally


# --- the cost of the one reading -----------------------------------------------------------------------
def measure(lines: int, scratch: Path) -> dict[str, float]:
    """Seconds to validate a history of ``lines`` real lines (renumbered: unique ids), and to
    ``json.loads`` them alone."""
    src = [json.loads(x) for x in real_lines()]
    path = scratch / "big.jsonl"
    seqs: dict[str, int] = {}
    with open(path, "w", encoding="utf-8") as out:
        for i in range(lines):
            d = dict(src[i % len(src)])
            seqs[d["src"]] = seqs.get(d["src"], 0) + 1
            d.update(seq=seqs[d["src"]], id=f"{d['src']}/{seqs[d['src']]}", index=i)
            out.write(json.dumps(d, separators=(",", ":")) + "\n")
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for raw in fh:
            json.loads(raw)
    parse = time.perf_counter() - t0
    t0 = time.perf_counter()
    scan = scan_file(path)
    validate = time.perf_counter() - t0
    assert scan.events == lines and not scan.damaged_total, scan.problems()[:3]
    return {"lines": lines, "bytes": os.path.getsize(path), "json_loads_s": round(parse, 2),
            "validate_s": round(validate, 2), "us_per_line": round(validate / lines * 1e6, 2)}


SURFACES: dict[str, tuple[Callable[[random.Random, int, Path], Tally], int, str]] = {
    "history files": (history_files, 10_000, "real history lines, one damaged/intact/random-edited, by the validator"),
    "history check": (history_check, 200, "damaged histories through check_histories on Spark, refused and skipped"),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=46)
    ap.add_argument("--inputs", type=int, default=SURFACES["history files"][1], help="history files inputs")
    ap.add_argument("--spark", type=int, default=SURFACES["history check"][1],
                    help="history check inputs (0: not run)")
    ap.add_argument("--measure", type=int, metavar="LINES", help="only time the validator over LINES lines")
    args = ap.parse_args(argv)
    from base.localstate import bench_scratch

    scratch = bench_scratch()  # named after this process: `harness teardown` leaves it alone while it runs
    try:
        if args.measure:
            print(json.dumps(measure(args.measure, scratch)))
            return 0
        results = {}
        for name, n in (("history files", args.inputs), ("history check", args.spark)):
            if n <= 0:
                continue
            t0 = time.monotonic()
            results[name] = SURFACES[name][0](random.Random(f"{args.seed}/{name}"), n, scratch)
            results[name].seconds = time.monotonic() - t0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    head = ("surface", "inputs", "accepted", "clean refusals", "crashes", "hangs", "wrong acceptances", "seconds")
    rows = [head] + [(n, *(str(v) for v in (t.inputs, t.counts["accepted"], t.counts["refused"], t.counts["crash"],
                                           t.counts["hang"], t.counts["wrong"])), f"{t.seconds:.0f}")
                     for n, t in results.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    print(f"fuzz, seed {args.seed}")
    for i, r in enumerate(rows):
        print(" | ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True))))
        if i == 0:
            print("-+-".join("-" * w for w in widths))
    for n, t in results.items():
        for ex in t.examples:
            print(f"  {n}: {ex}")
    return 0 if all(t.failures == 0 for t in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
