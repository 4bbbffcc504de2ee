"""Checkers that are a Spark plan: ``plan(frame) -> anomaly rows``, all collected as one job.

A plan returns rows ``(hist, message, event_ids, key, verdict)`` (build them with ``anom``, or
with ``anoms`` for several kinds of anomaly found in one frame's rows, in one pass):
``event_ids`` are the ``<src>/<seq>`` ids that prove it, ``key`` a JSON object locating it
(broker, partition, controller_epoch), ``verdict`` ``"invalid"`` (a proven violation) or
``"unknown"`` (something it had to judge but could not decide from the history: a missing or
malformed field, an unresolvable reference; ``message`` says why). A checker with unknown rows
and no invalid ones is ``unknown``, never valid. Every cast is null-safe (to string, or
``try_cast``), so Spark's ANSI mode cannot crash a checker.

On large input all selected plans are unioned and collected in one Spark job (``collect``; a
frame a plan reads twice, ``reuse``, is a job before it with a local master). On
run-sized input (one in-memory partition, ``checkers.events_df``) each plan is its own job of one
stage over its own rows (``own_rows``), built and run on a few threads at once: windows, aggregates
and joins over one partition need no exchange, as long as every join's and union's output is made
one partition again (``one``).
Unioning them first would re-analyse the growing union at each step, the largest part of building
the plans (bench/check_latency.py).
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any, ClassVar

from checkers.checker import Events, Reads, columns
from checkers.result import Result, anomaly, result
from history.kinds import Need

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

MAX_ANOMALIES_PER_CHECKER = 20


@dataclass(frozen=True)
class PlanChecker:
    lane: ClassVar[str] = "plans"  # one collect for the family (``collect``)
    name: str
    reads: Reads
    plan: Callable[[DataFrame], DataFrame]
    local: bool = False
    needs: tuple[Need, ...] = ()  # beyond what every writer writes (``checkers.checker.needs_of``)

    def check(self, events: Events) -> dict[str, Result]:
        assert events.frame is not None, f"{self.name} runs on Spark"
        frame = events.frame
        found = events.shared(self, PlanChecker, lambda group: collect(group, frame, events.paths, small=events.small))
        return {p: found[p][self.name] for p in events.paths}


def collect(checkers: Sequence[PlanChecker], frame: DataFrame, paths: Sequence[str], *,
            small: bool) -> dict[str, dict[str, Result]]:
    """{path: {checker: result}} for every plan: one Spark job on large input, one small job per
    plan on run-sized input (``small``: ``frame`` is one partition)."""
    if not checkers:
        return {p: {} for p in paths}
    if small:
        with single_partition_conf(frame.sparkSession):
            if slots_usable(frame.sparkSession):
                got = _run_on_slot(checkers, frame)
            else:
                got = [r for rows in _pool().map(lambda c: one_partition_job(own_rows(frame, c), c).collect(),
                                                 checkers) for r in rows]
    else:
        got = _summary(anomalies(checkers, frame), ordered=True).collect()
    found: dict[tuple[str, str, str], Any] = {(r["hist"], r["checker"], r["verdict"]): r for r in got}
    return {p: {c.name: _result(c.name, found.get((p, c.name, "invalid")), found.get((p, c.name, "unknown")))
                for c in checkers} for p in paths}


def one_partition_job(frame: DataFrame, checker: PlanChecker) -> DataFrame:
    """``checker``'s summary rows over ``frame``, one partition, built with ``one`` active: one stage
    under ``single_partition_conf`` (tests/integration/test_check_fencing.py holds every plan to that)."""
    from pyspark.sql import functions as F

    token = _ONE_PARTITION.set(True)
    try:
        return _summary(one(checker.plan(frame)).withColumn("checker", F.lit(checker.name)))
    finally:
        _ONE_PARTITION.reset(token)


@dataclass
class _PlanSet:
    """The built jobs of one group of plans, reading slot ``slot`` (``zkfence.Slots``)."""

    spark: SparkSession
    slot: str
    jobs: dict[str, DataFrame | None]  # None: its plan shuffles, so it is built for every check


# free sets by (session, checkers, frame schema), least recently used first; a process keeps at
# most MAX_PLAN_SETS (a set's plans hold a few MB of the driver's heap; a check server or a campaign
# checks with one group of checkers, a test session with many)
_plan_sets: OrderedDict[tuple[int, tuple[str, ...], str], list[_PlanSet]] = OrderedDict()
_plan_sets_lock = threading.Lock()
MAX_PLAN_SETS = 8
SLOTS_ENV = "HARNESS_PLAN_REUSE"  # "off": every small check builds its plans again (the jobs are the same)


def slots_usable(spark: SparkSession) -> bool:
    """Plans built once per process can run here: a local master (the slot's rows are in the driver's
    JVM, which is the executor) with the project's jar (``checkers.udfs``) loaded."""
    if os.environ.get(SLOTS_ENV, "").lower() == "off" or not spark.sparkContext.master.startswith("local"):
        return False
    from checkers.udfs import jar_loaded

    return jar_loaded(spark)


def _run_on_slot(checkers: Sequence[PlanChecker], frame: DataFrame) -> list[Any]:
    """Every plan's summary rows over ``frame``, by jobs built once per process and run again.

    Building a plan (the DataFrame calls from Python, Spark's analysis of each step) was most of a
    small check: ~0.45 s a plan against ~0.12 s to run it again. Each group of plans (the same
    checkers, the same frame schema) is built over a slot (``zkfence.Slots``), whose rows are read
    when a job runs; a check puts ``frame``'s rows in a free set's slot (one job), runs its jobs and
    empties it. A set is one check's at a time; concurrent checks build sets of their own. The jobs
    are those ``own_rows`` and ``one_partition_job`` build (the same rows, in the same order, as one
    partition), except that ``reuse`` keeps no intermediate result: a job that held one would give
    the first history's rows to the next."""
    spark = frame.sparkSession
    key = (id(spark), tuple(c.name for c in checkers), frame.schema.json())
    with _plan_sets_lock:  # no key holds an empty list
        free = [s for s in _plan_sets.pop(key, []) if s.spark is spark]
        plan_set = free.pop() if free else _PlanSet(spark, uuid.uuid4().hex, {})
        if free:
            _plan_sets[key] = free
    slots = spark.sparkContext._jvm.zkfence.Slots  # type: ignore[union-attr]
    try:
        slots.fill(plan_set.slot, frame._jdf)

        def run(c: PlanChecker) -> list[Any]:
            job = plan_set.jobs.get(c.name)
            if job is not None:
                return job.collect()
            built = c.name in plan_set.jobs  # known to shuffle: built again, not looked at again
            job = _slot_job(frame, plan_set.slot, c)
            rows = job.collect()
            if not built:  # a shuffle's output would be read again by the next run
                plan_set.jobs[c.name] = None if _shuffles(job) else job
            return rows

        got = [r for rows in _pool().map(run, checkers) for r in rows]
    except BaseException:
        plan_set.jobs.clear()  # a job that failed part-built is built again
        raise
    finally:
        slots.clear(plan_set.slot)
        with _plan_sets_lock:
            _plan_sets.setdefault(key, []).append(plan_set)
            _plan_sets.move_to_end(key)
            while sum(map(len, _plan_sets.values())) > MAX_PLAN_SETS:
                oldest = next(iter(_plan_sets))
                _plan_sets[oldest].pop(0)
                if not _plan_sets[oldest]:
                    del _plan_sets[oldest]
    return got


def _slot_job(frame: DataFrame, slot: str, checker: PlanChecker) -> DataFrame:
    wanted = [c for c in columns(checker.reads) if c in frame.columns]
    rows = (frame.sparkSession.read.format("zkfence.Slots").schema(frame.schema)
            .option("slot", slot).option("kinds", ",".join(checker.reads)).load().select(*wanted)
            .coalesce(1))  # Spark takes a scan's one input partition as of unknown partitioning
    token = _REUSABLE.set(True)
    try:
        return one_partition_job(rows, checker)
    finally:
        _REUSABLE.reset(token)


def _shuffles(job: DataFrame) -> bool:
    """The job's executed plan exchanges rows (then it is built again for each check, not kept)."""
    return "Exchange" in job._jdf.queryExecution().executedPlan().toString()


def own_rows(frame: DataFrame, checker: PlanChecker) -> DataFrame:
    """The rows and columns of ``frame`` that ``checker`` reads, materialised as a leaf of their own.

    A scan of an in-memory leaf converts every row in full, and a plan scans its input once per
    reference (bounce_handling and isr_expansion about thirty times): over a whole run's frame (70
    columns, 9,000 events) that was 1-2 s a plan; over its own rows (a few hundred events, a dozen
    columns) it is a few milliseconds."""
    from pyspark.sql import functions as F

    wanted = [c for c in columns(checker.reads) if c in frame.columns]
    return _leaf(frame.filter(F.col("f").isin(*checker.reads)).select(*wanted))


def _summary(rows: DataFrame, *, ordered: bool = False) -> DataFrame:
    """Per (hist, checker, verdict): how many anomaly rows, and the first few. On one partition they
    come in the plan's row order; on several (``ordered``) the order the tasks finish would decide
    which few are reported, so they are sorted first (by message, then event ids)."""
    from pyspark.sql import functions as F

    found = F.collect_list(F.struct("message", "event_ids", "key"))
    return rows.groupBy("hist", "checker", "verdict").agg(
        F.count(F.lit(1)).alias("n"),
        F.slice(F.array_sort(found) if ordered else found, 1, MAX_ANOMALIES_PER_CHECKER).alias("first"),
    )


_ONE_PARTITION: ContextVar[bool] = ContextVar("one_partition", default=False)
_REUSABLE: ContextVar[bool] = ContextVar("reusable", default=False)
_pool_lock = threading.Lock()
_pool_threads: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    """Threads that build and run the plans of run-sized input side by side: building a plan is mostly
    the JVM analysing it, and one Python thread leaves the other cores idle. Kept for the process (a
    check server's checks reuse them and their Py4J connections)."""
    global _pool_threads
    with _pool_lock:
        if _pool_threads is None:
            _pool_threads = ThreadPoolExecutor(max(2, os.cpu_count() or 2), thread_name_prefix="zkfence-plans")
        return _pool_threads


def one(df: DataFrame) -> DataFrame:
    """``df`` as one partition again, when the plans run on run-sized input (else ``df`` itself).

    Spark reports an inner join's output as "either side's partitioning" and a union's as unknown,
    never as the single partition both came from; the next join or aggregate then shuffles its
    inputs into one partition, a stage each (bounce_handling had 12). Coalescing to one partition
    moves no data and keeps the plan one stage. Call it on a join's or union's result that feeds
    another join, aggregate or window."""
    return df.coalesce(1) if _ONE_PARTITION.get() else df


def cluster(df: DataFrame, *keys: str) -> DataFrame:
    """``df`` hash-partitioned by ``keys``, so that every window and aggregate that follows on a
    superset of them needs no exchange of its own (Spark takes a partitioning by a subset of their
    clustering keys; a join still wants all of its keys); on run-sized input ``one(df)``. Several
    kinds unioned, clustered once and paired by windows replace a join per pair of them: one
    exchange, where each join shuffled both of its sides."""
    return one(df) if _ONE_PARTITION.get() else df.repartition(*keys)


def few(df: DataFrame) -> DataFrame:
    """``df``, the side of a join expected to hold a handful of rows (the suspects a cheap aggregate
    left), broadcast on large input so that the other side is probed where it is read, not shuffled;
    on run-sized input ``df`` itself (a broadcast is a job of its own)."""
    return df if _ONE_PARTITION.get() else F().broadcast(df)


def reuse(df: DataFrame) -> DataFrame:
    """``df`` computed once, when a plan reads it in more than one place (else Spark plans and runs
    the whole subtree again for each: bounce_handling's registrations). With a local master it
    becomes a leaf of its own (``_leaf``: a job of its own now), whatever the input's size: on
    run-sized input every later plan that reads it is that much smaller to analyse, optimise and
    run; on large input the subtree runs once, where one job would run it once per reader
    (bounce_handling scanned, shuffled and windowed 1M registrations three times over). On a
    cluster ``df`` itself; in a plan built to run again (``_run_on_slot``) ``df`` itself too."""
    return df if _REUSABLE.get() else _leaf(df)


def settle(df: DataFrame) -> DataFrame:
    """``df``, the narrow side of a join that is often empty, computed first on large input: when it
    has no rows, an empty relation of its schema, which the optimizer carries through the joins and
    aggregates it feeds, so that their other sides are never read; else ``reuse(df)``. Spark alone
    learns that a side is empty only once its stage has run, while the other side's stage scans and
    shuffles beside it and runs on after the query has its answer (max_broker_epoch's control
    requests and their epoch maps, at 10M events 0.6-1.7 s of the family's time, on every history
    not in max-broker-epoch mode). On run-sized input ``df`` itself: one stage, nothing to save.
    Select the columns the plan needs first: all of ``df``'s are computed."""
    if _ONE_PARTITION.get():
        return df
    kept = reuse(df)
    return df.limit(0) if kept.isEmpty() else kept  # a limit of 0 is planned as an empty relation


def _leaf(df: DataFrame) -> DataFrame:
    """``df`` materialised as a leaf of its own (``localCheckpoint``) with a local master; on a
    cluster, whose executors may be taken away with the blocks, ``df`` itself (its input there is a
    columnar cache, whose scans read only the columns needed)."""
    return df.localCheckpoint() if df.sparkSession.sparkContext.master.startswith("local") else df


def anomalies(checkers: Sequence[PlanChecker], frame: DataFrame) -> DataFrame:
    """Every plan's anomaly rows, with a ``checker`` column, as one DataFrame (one Spark plan)."""
    from pyspark.sql import functions as F

    out = [c.plan(frame).withColumn("checker", F.lit(c.name)) for c in checkers]
    return reduce(lambda a, b: a.unionByName(b), out)


def _result(name: str, bad: Any, unk: Any) -> Result:
    unknown_stats: dict[str, Any] = {}
    if unk is not None:  # what the checker could not decide: the reason, never a silent pass
        unknown_stats = {"unknown_total": int(unk["n"]), "unknown_reasons": [
            {"message": a["message"], "event_ids": list(a["event_ids"] or [])} for a in unk["first"]]}
    if bad is None:
        return result("unknown" if unk is not None else True, [], anomalies_total=0, **unknown_stats)
    ans = [anomaly(name, a["message"], a["event_ids"] or [], **json.loads(a["key"] or "{}")) for a in bad["first"]]
    return result(False, ans, anomalies_total=int(bad["n"]), **unknown_stats)


@contextmanager
def single_partition_conf(spark: SparkSession) -> Iterator[None]:
    """Settings for input on one partition, restored afterwards. Windows, aggregates and sort-merge
    joins over one partition need no exchange (with ``one`` after joins and unions). Spark keeps a
    join's two single-partition inputs as they are only when their estimated size is at most
    ``spark.sql.maxSinglePartitionBytes``, and an in-memory leaf has no estimate (it counts as
    unbounded): hence no limit. Joins are not broadcast (each broadcast is a job of its own) and AQE
    is off (it runs every query stage as a job): each plan is one job of one stage. Whole-stage
    codegen is off: compiling the generated code costs more than interpreting a few thousand rows."""
    from checkers.spark import session_conf

    with session_conf(spark, {"spark.sql.adaptive.enabled": "false", "spark.sql.autoBroadcastJoinThreshold": "-1",
                              "spark.sql.shuffle.partitions": "1", "spark.sql.codegen.wholeStage": "false",
                              "spark.sql.maxSinglePartitionBytes": str(2**63 - 1)}):
        yield


# --- building anomaly rows -----------------------------------------------------------------------------
def F():  # noqa: ANN201, N802 - lazy pyspark import so importing a checker module is free
    from pyspark.sql import functions

    return functions


def W():  # noqa: ANN201, N802
    from pyspark.sql import Window

    return Window


def anom(df: DataFrame, message: Column, ids: Column, *, verdict: str | Column = "invalid", **keys: Column) -> DataFrame:
    return df.select("hist", *_anomaly_fields(message, ids, verdict, keys))


@dataclass(frozen=True)
class Case:
    """One kind of anomaly ``anoms`` finds in a row: when ``where`` holds, a row like ``anom``'s."""

    where: Column
    message: Column
    ids: Column
    verdict: str | Column = "invalid"
    keys: dict[str, Column] | None = None


def anoms(df: DataFrame, *cases: Case) -> DataFrame:
    """``anom``'s rows for every case that holds in a row of ``df``, in one pass over it.

    The same as a union of ``anom(df.filter(case.where), ...)``, but Spark plans a union's branches
    apart: each would scan, shuffle, sort and window ``df``'s rows again (partition_states did that
    three times over)."""
    f = F()
    found = [f.when(c.where, f.struct(*_anomaly_fields(c.message, c.ids, c.verdict, c.keys or {}))) for c in cases]
    return df.select("hist", f.inline(f.filter(f.array(*found), lambda a: a.isNotNull())))


def _anomaly_fields(message: Column, ids: Column, verdict: str | Column, keys: dict[str, Column]) -> list[Column]:
    f = F()
    key = f.to_json(f.struct(*[c.alias(k) for k, c in keys.items()])) if keys else f.lit("{}")
    return [message.alias("message"), ids.alias("event_ids"), key.alias("key"),
            (f.lit(verdict) if isinstance(verdict, str) else verdict).alias("verdict")]


def fmt(template: str, *cols: Column | str) -> Column:
    """format_string with every argument rendered as text (null -> "null"). Arguments are cast to string
    first: ``coalesce(<bigint>, 'null')`` would make Spark cast 'null' to BIGINT, which ANSI mode rejects."""
    f = F()
    return f.format_string(
        template, *[f.coalesce((f.col(c) if isinstance(c, str) else c).cast("string"), f.lit("null")) for c in cols]
    )


def ids(*cols: str) -> Column:
    """The non-null ids among ``cols`` (event_ids never holds nulls)."""
    f = F()
    return f.filter(f.array(*[f.col(c) for c in cols]), lambda x: x.isNotNull())


def broker() -> Column:
    """The broker an event is about: its ``broker_id``, else the agent that wrote it."""
    f = F()
    return f.coalesce(f.col("v_broker_id"), f.col("node"))
