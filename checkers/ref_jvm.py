"""Porcupine kv histories searched in the JVM, in the task that reads them (``zkfence.RefSearch``,
``zkfence.KvSearch``): a task per file parses and pairs it (``zkfence.RefOps``' scanner), groups
its ops by key in memory and runs the WGL search of ``checkers.wgl`` over the kv model of
``checkers.models`` on the task's threads, one part per key, interleaved in slices. Only verdicts
leave the JVM: a row per key, and for an illegal key its blocker, from which the driver builds the
same cited anomaly as the Python search (``ref_ops.kv_ops`` makes the op, ``Op.describe`` words it).

This is the path for the ``kv`` model (per key). The other models and formats, and a file this path
declines (a line ``RefOps`` does not read, a put or append of nil), go the Arrow path of
``checkers.ref_search``, which runs the Python search; the tests hold both searches equal part by
part: verdict, steps, deepest linearization and blocker.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from py4j.protocol import Py4JError

from checkers.linearizability import summarise
from checkers.models import make_model
from checkers.ref_ops import KV, RefFile, kv_ops
from checkers.result import Result
from checkers.wgl import UNKNOWN, blocked, over_budget

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CANCELLED = "cancelled"
# the share of the JVM's heap the search caches of the tasks running at once may hold (then the part
# growing them is unknown): the heap is the session's, and this search fills a cache 20-50x faster
# than the Python one
HEAP_SHARE = 0.25
_VALID = {"true": True, "false": False, "unknown": UNKNOWN, CANCELLED: CANCELLED}


def applies(f: RefFile) -> bool:
    return f.fmt == KV and f.model == "kv"


def message(row: Any) -> tuple[str, list[int]]:
    """An illegal part's anomaly and its lines, as the Python search words them (``checkers.wgl.blocked``)."""
    cols = {"f": [row.f], "key": [row.key], "val": [row.val], "line": [row.line], "ret_typ": [row.ret_typ],
            "ret_line": [row.ret_line], "ret_f": [row.ret_f], "ret_val": [row.ret_val], "proc": [row.proc]}
    (op,) = kv_ops(cols, range(1))
    return blocked(row.depth, op)


def part_rows(spark: SparkSession, files: Sequence[RefFile], *, budget_seconds: float | None,
              budget_steps: int | None, stop_on_illegal: bool = True) -> list[Any]:
    """``zkfence.RefSearch``'s rows for ``files`` (each a ``kv`` file): one RDD job, a task per file (no
    query plan to build: on a warm session a small file's check took 0.4-0.6 s as a DataFrame job)."""
    import json
    from types import SimpleNamespace

    sc = spark.sparkContext
    at_once = min(len(files), sc.defaultParallelism)
    threads = max(1, sc.defaultParallelism // len(files))  # the task's threads share the cores with the other files'
    text = sc._jvm.zkfence.RefSearch.checkPaths(sc._jsc, [f.path for f in files], float(budget_seconds or 0),
                                                int(budget_steps or 0), threads, HEAP_SHARE / at_once, stop_on_illegal)
    return [SimpleNamespace(**json.loads(line)) for line in text.splitlines()]


def check_files(spark: SparkSession, files: Sequence[RefFile], *, budget_seconds: float | None = 30.0,
                budget_steps: int | None = None,
                timings: dict[str, float] | None = None) -> tuple[dict[str, Result], list[str]]:
    """Each file's result, and the names of those declined (the caller checks them another way)."""
    if not files:
        return {}, []
    t0 = time.monotonic()
    try:
        rows = part_rows(spark, files, budget_seconds=budget_seconds, budget_steps=budget_steps)
    except Py4JError:
        # e.g. an executor that cannot open a file (a cluster's, without the driver's files): the
        # driver's parser reads them, and names what is wrong
        return {}, [f.name for f in files]
    wall = time.monotonic() - t0
    declined = {r.hist for r in rows if r.kind == "err"}
    by: dict[int, list[Any]] = {}
    for r in rows:
        by.setdefault(r.hist, []).append(r)
    out: dict[str, Result] = {}
    for h, f in enumerate(files):
        if h in declined:
            continue
        parts = [r for r in by.get(h, []) if r.kind == "part"]
        reported = []
        for r in parts:
            valid = _VALID[r.valid]
            if valid == CANCELLED:
                continue  # stopped by an illegal part of its history: not reported, as the Python scheduler drops it
            text, lines = message(r) if valid is False else ("", [])
            if valid == UNKNOWN:
                text = r.note or over_budget(r.steps, r.seconds)
            reported.append({"history": f.name, "key": r.key, "valid": valid, "ops": r.ops, "steps": r.steps,
                             "seconds": r.seconds, "message": text, "lines": lines})
        res = summarise(f.name, make_model(f.model), sum(r.ops for r in parts), len(parts), reported)
        res["stats"].update(engine="spark-jvm-search", job_seconds=round(wall, 4))
        out[f.name] = res
    if timings is not None:
        spent = [r for r in rows if r.kind == "spent"]
        timings.update(tasks=len(spent), parse_cpu=sum(r.seconds for r in spent),
                       search_cpu=sum(r.steps for r in spent) / 1e9, job=wall)
    return out, sorted(files[h].name for h in declined)


__all__ = ["applies", "check_files", "message", "part_rows"]
