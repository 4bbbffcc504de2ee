"""Reference histories checked where they are: parsed and paired in the JVM (``checkers.ref_ops``, ``zkfence.RefOps``),
each key's ops handed to the WGL search as Arrow columns (``mapInArrow``), in ONE Spark job.

The job: a task per file parses and pairs it (``zkfence.RefOps``) → shuffle on ``(hist, pkey)`` →
a Python task per group of keys, which gets its ops as Arrow record batches, sorts them by key and
line (Arrow's sort, in C++), builds each part's ops straight from the columns and runs the
interleaved search (``checkers.wgl.run_parts``). Early cancellation is the result board's
(``checkers.board``): each task announces the parts it holds, reports each verdict and polls
between slices; once every history is decided the driver cancels the job group. Verdicts and
anomalies are those of ``checkers.linearizability`` over ``checkers.parsers``' ops (the same ops,
the same search, the same summary), which the tests hold line for line.

A history this path cannot read (a line not in its format's canonical shape, a pairing error, a
value the parser refuses) is reported as given up, not checked: ``check_files`` returns its name in
``fallback`` and the caller parses it with ``checkers.parsers`` (which reads it or names the line).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from checkers.board import Board, BoardClient, run_until_decided
from checkers.linearizability import summarise
from checkers.models import make_model
from checkers.ops import OPEN, UNKNOWN, Op
from checkers.parsers import ParseError, _etcd_value
from checkers.ref_ops import ETCD, OPS, RefFile, kv_ops, ops, part_key
from checkers.result import Result
from checkers.wgl import Part, PartResult, run_parts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

GROUPS_PER_CORE = 4
GRACE_SECONDS = 0.25  # once every history is decided, how long the job may take to end before it is cancelled
_COLS = [c.split()[0] for c in OPS.split(", ")]


class Unreadable(Exception):
    """A history's ops cannot be built here; the driver's parser decides (it reads them or names the line)."""


def etcd_ops(name: str, cols: dict[str, list[Any]], rows: range) -> list[Op]:
    """The etcd ops of ``rows`` as ``parsers.parse_porcupine_etcd`` builds them; ``Unreadable`` where it
    raises."""
    out: list[Op] = []
    for i in rows:
        f, line, typ, rl = cols["f"][i], cols["line"][i], cols["ret_typ"][i], cols["ret_line"][i]
        try:
            val = _etcd_value(cols["val"][i].strip(), "") if cols["val"][i] is not None else None
            got = _etcd_value(cols["ret_val"][i].strip(), "") if cols["ret_val"][i] is not None else None
        except ParseError as e:
            raise Unreadable(str(e)) from None
        if f == "cas" and not (isinstance(val, tuple) and len(val) == 2):
            raise Unreadable(f"{name}:{line}: :cas needs [from to]")
        op = Op(len(out), cols["proc"][i], f, (f, val if f != "read" else None), UNKNOWN, float(line), OPEN, line)
        out.append(op)
        if typ is None:
            continue
        if cols["ret_f"][i] != f:
            raise Unreadable(f"{name}:{rl}: completes a :{f} invoked at line {line}")
        if typ == "ok":
            op.ret, op.ret_line = float(rl), rl
            op.output = got if f == "read" else None if f == "write" else True
        elif typ == "fail" and f == "cas":
            op.ret, op.ret_line, op.output = float(rl), rl, False
        elif typ not in ("fail", "info"):
            raise Unreadable(f"{name}:{rl}: unknown op type :{typ}")
    return out


def parts_of(table: Any, files: Sequence[RefFile]) -> tuple[list[Part], set[int]]:
    """The parts in an Arrow table of ``OPS`` rows (in any order), and the histories it cannot read."""
    import pyarrow.compute as pc

    table = table.take(pc.sort_indices(table, [("hist", "ascending"), ("key", "ascending"), ("line", "ascending")]))
    cols = {c: table.column(c).to_pylist() for c in _COLS}
    hists, keys = cols["hist"], cols["key"]
    bad = {h for h, e in zip(hists, cols["err"], strict=True) if e}
    parts: list[Part] = []
    n = table.num_rows
    i = 0
    while i < n:  # a run of rows of one part: one history, and one key if checked per key
        h = hists[i]
        f = files[h]
        j = i + 1
        if f.by_key:
            k = keys[i]
            while j < n and hists[j] == h and keys[j] == k:
                j += 1
        else:
            k = None
            while j < n and hists[j] == h:
                j += 1
        if h not in bad:
            try:
                ops_ = etcd_ops(f.name, cols, range(i, j)) if f.fmt == ETCD else kv_ops(cols, range(i, j))
                if not f.by_key:  # one part: in line order (the rows came sorted by key first)
                    ops_.sort(key=lambda o: o.line)
                    for x, o in enumerate(ops_):
                        o.index = x
                parts.append(Part(f.name, k, ops_, make_model(f.model)))
            except Unreadable:
                bad.add(h)
        i = j
    names = {files[h].name for h in bad}
    return [p for p in parts if p.history not in names], bad


def _task(files: Sequence[RefFile], address: Any, budget_seconds: float | None, budget_steps: int | None):  # noqa: ANN202
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import json

        import pyarrow as pa

        cpu0, wall0 = time.process_time(), time.monotonic()
        got = list(batches)  # waits for the shuffle: the parse and its write
        wait = time.monotonic() - wall0
        table = pa.Table.from_batches(got) if got else None  # none: an empty group (fewer parts than groups)
        client = BoardClient(address)
        try:
            rows: list[dict[str, Any]] = []
            cpu1 = time.process_time()
            parts, bad = parts_of(table, files) if table is not None else ([], set())
            cpu2 = time.process_time()
            for h in bad:
                client.give_up(files[h].name)
                rows.append({"history": files[h].name, "fallback": True})
            held: dict[str, list[int]] = {}
            for p in parts:
                c = held.setdefault(p.history, [0, 0])
                c[0] += 1
                c[1] += len(p.ops)
            client.announce(held)
            for r in run_parts(parts, budget_seconds=budget_seconds, budget_steps=budget_steps,
                               cancelled=client.cancelled, on_result=lambda r: client.report(r.to_dict())):
                rows.append(r.to_dict())
            spent = {"rows": 0 if table is None else table.num_rows, "arrow_cpu": cpu1 - cpu0, "wait": wait, "build_cpu": cpu2 - cpu1,
                     "search_cpu": time.process_time() - cpu2}
            client.spent(spent)  # the job may be cancelled before this task's rows are collected
            rows.append({"held": held})
        finally:
            client.close()
        yield pa.RecordBatch.from_pylist([{"r": json.dumps(r, default=str)} for r in rows],
                                         schema=pa.schema([("r", pa.string())]))

    return run


def check_files(
    spark: SparkSession,
    files: Sequence[RefFile],
    *,
    budget_seconds: float | None = 30.0,
    budget_steps: int | None = None,
    timings: dict[str, float] | None = None,
) -> tuple[dict[str, Result], list[str]]:
    """Each file's result, and the names of those this path declined or could not read (check them the
    old way: ``checkers.parsers`` on the driver, ``checkers.linearizability``)."""
    import json

    from pyspark.sql import functions as F

    from checkers import ref_jvm

    if any(ref_jvm.applies(f) for f in files):  # kv: searched in the task that reads it, in the JVM
        got, declined = ref_jvm.check_files(spark, [f for f in files if ref_jvm.applies(f)],
                                            budget_seconds=budget_seconds, budget_steps=budget_steps, timings=timings)
        rest, declined_rest = check_files(spark, [f for f in files if not ref_jvm.applies(f)],
                                          budget_seconds=budget_seconds, budget_steps=budget_steps)
        return {**got, **rest}, sorted(declined + declined_rest)
    if not files:
        return {}, []
    sc = spark.sparkContext
    n_groups = max(1, sc.defaultParallelism * GROUPS_PER_CORE)
    t0 = time.monotonic()
    df = ops(spark, files).repartition(n_groups, F.col("hist"), part_key(files))
    host = sc.getConf().get("spark.driver.host", "127.0.0.1")
    board = Board(dict.fromkeys((f.name for f in files), 0), host=host, tasks=n_groups).start()
    try:
        outcome = run_until_decided(
            sc, board, "wgl-ref", f"WGL over {len(files)} reference histories",
            lambda: [json.loads(r.r) for r in df.mapInArrow(
                _task(files, board.address, budget_seconds, budget_steps), "r string").collect()],
            # the tasks stop on their own once their histories are decided (they poll between
            # slices); a moment for that keeps their rows and what they spent; then cancel
            grace_seconds=GRACE_SECONDS)
    finally:
        board.close()
    if "error" in outcome and not outcome.get("cancelled"):
        # e.g. an executor that cannot open the file (a cluster's, without the driver's files): the
        # driver's parser reads them, and names what is wrong
        return {}, [f.name for f in files]
    if "rows" in outcome:
        rows = outcome["rows"]
        given_up = {r["history"] for r in rows if r.get("fallback")}
        parts = {f.name: 0 for f in files}
        n_ops = {f.name: 0 for f in files}
        for r in rows:
            for h, (p, o) in r.get("held", {}).items():
                parts[h] += p
                n_ops[h] += o
        results = [r for r in rows if "valid" in r]
    else:  # cancelled: every history was decided, and the board has what decided it
        given_up = set(board.given_up)
        parts = {f.name: board.expected.get(f.name, 0) for f in files}
        n_ops = {f.name: board.ops.get(f.name, 0) for f in files}
        results = board.snapshot()
    wall = time.monotonic() - t0
    if timings is not None:  # what the tasks spent: Arrow in, building ops, searching (CPU s), waiting for input
        with board.lock:
            spent = list(board.spent)
        timings.update({k: sum(t[k] for t in spent) for k in ("rows", "arrow_cpu", "build_cpu", "search_cpu")},
                       tasks=len(spent), wait_max=max((t["wait"] for t in spent), default=0.0), job=wall)
    by: dict[str, list[dict[str, Any]]] = {f.name: [] for f in files}
    for r in results:
        by[r["history"]].append(r)
    out: dict[str, Result] = {}
    for f in files:
        if f.name in given_up:
            continue
        res = summarise(f.name, make_model(f.model), n_ops[f.name], max(parts[f.name], len(by[f.name])), by[f.name])
        res["stats"].update(engine="spark-jvm-parse", job_seconds=round(wall, 4),
                            job_cancelled=bool(outcome.get("cancelled")))
        out[f.name] = res
    return out, sorted(given_up)


__all__ = ["PartResult", "check_files", "etcd_ops", "kv_ops", "parts_of"]
