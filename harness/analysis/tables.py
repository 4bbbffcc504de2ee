"""The four cross-run tables, computed on Spark from the dataset (``dataset.read_checks`` /
``read_events``), and their outputs: a rich table, a CSV file and a Parquet directory each.

Grouping, percentiles and both pairings (heals with registrations, invokes with completions) are
Spark SQL, each the window form of its plain-Python rule in ``pairing`` (tests hold the two to the
same pairs); no event goes through Python.
"""

from __future__ import annotations

import csv
import math
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.analysis import pairing
from harness.analysis.pairing import Flaky, LatencyRow, Rate, RecoveryRow
from history.ops import COMPLETIONS, NOT_CLIENTS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_PCT = "percentile(ms, array(0.5, 0.9, 0.99))"


@dataclass(frozen=True)
class Table:
    name: str  # file stem under --out: <name>.csv, <name>.parquet/
    title: str
    rows: Sequence[Any]  # dataclass instances of one type
    kind: type


def anomaly_rates(checks: DataFrame) -> list[Rate]:
    """Anomaly rate (runs where the checker said invalid ÷ runs it checked) per checker × toggle
    set × fault type, sorted by rate descending."""
    from pyspark.sql import functions as F

    agg = (checks.groupBy("checker", "toggles", "faults")
           .agg(F.countDistinct("run_dir").alias("runs"),
                F.countDistinct(F.when(F.col("valid") == "invalid", F.col("run_dir"))).alias("invalid"),
                F.countDistinct(F.when(F.col("valid") == "unknown", F.col("run_dir"))).alias("unknown")))
    rates = [Rate(r["checker"], r["toggles"], r["faults"], r["runs"], r["invalid"], r["unknown"]) for r in agg.collect()]
    return sorted(rates, key=pairing.rate_order)


def pairing_events(events: DataFrame) -> DataFrame:
    """The events the pairing reads (nemesis ops, registrations, run_start, client ops), as the
    columns of ``pairing.Ev`` plus ``run_dir``."""
    from pyspark.sql import functions as F

    # an event without seq or t_wall is no event (docs/events.md): the plain reading skips it too
    return events.filter((_recovery_events() | _client_events()) & F.col("seq").isNotNull()
                         & F.col("t_wall").isNotNull()).select(
        "run_dir", *(_ended_fault().alias(f.name) if f.name == "ended" else f.name for f in fields(pairing.Ev)))


def _ended_fault() -> Column:
    """``pairing.ended_fault`` of the ``ended`` column (the JSON text of a heal's list of faults)."""
    from pyspark.sql import functions as F

    names = F.from_json("ended", "array<string>")
    fault = F.array_join(F.array_sort(F.array_distinct(names)), "+")
    # a null name makes it no list of names. Not F.exists(names, lambda): with it, a warm session compiled
    # two more classes on every analysis (Spark's CodegenMetrics)
    return F.when((F.size(F.array_compact(names)) == F.size(names)) & (fault != ""), fault)


def _recovery_events() -> Column:
    """What ``pairing.recoveries`` reads: nemesis ops, registrations and the harness's run_start."""
    from pyspark.sql import functions as F

    return ((F.col("src") == "nemesis") | ((F.col("f") == "register") & (F.col("type") == "ok"))
            | ((F.col("src") == "harness") & (F.col("f") == "run_start")))


def _client_events() -> Column:
    """``history.ops.is_client_event``: invokes and completions of every source but the agents and
    the harness's own."""
    from pyspark.sql import functions as F

    return (~F.col("src").startswith("agent:") & ~F.col("src").isin(*NOT_CLIENTS)
            & F.col("type").isin("invoke", *COMPLETIONS))


def recovery_pairs(events: DataFrame) -> DataFrame:
    """Every heal of ``pairing_events`` as ``(run_dir, fault, heal_id, ms)`` (``ms`` null: unpaired):
    the pairing of ``pairing.recoveries`` as one sorted pass per run. Heals (from the run's first
    ``run_start`` on) and registrations in ``t_wall`` order, a heal before a registration of the
    same instant: a registration belongs to the last heal before it, and a heal's time is its first
    registration's, so the row right after the heal when that is a registration."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col, no = F.col, F.lit(False)
    heal = ((col("src") == "nemesis") & (col("type") == "info") & F.coalesce(col("stage") == "complete", no)
            & F.when(col("f") == "heal", ~F.coalesce(col("reason").isin("setup", "teardown"), no)
                     & ~F.coalesce(col("noop"), no))
            .otherwise(F.coalesce(col("phase") == "stop", no) | F.coalesce(col("instant"), no)))
    registration = col("src").startswith("agent:") & (col("f") == "register") & (col("type") == "ok")
    start = (col("src") == "harness") & (col("f") == "run_start")
    # one order for all three windows: the run's rows are sorted once
    in_order = Window.partitionBy("run_dir").orderBy("t_wall", "kind", "seq")
    whole_run = in_order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    kind = F.when(heal, 0).when(registration, 1).when(start, 2)
    fault = F.when((col("f") == "heal") & col("ended").isNotNull(), col("ended")).otherwise(col("f"))  # pairing.fault_type
    ev = (events.select("run_dir", fault.alias("f"), "seq", "t_wall", kind.alias("kind")).filter(col("kind").isNotNull())
          .withColumn("start", F.min(F.when(col("kind") == 2, col("t_wall"))).over(whole_run))
          .filter((col("kind") == 1) | ((col("kind") == 0) & (col("t_wall") >= F.coalesce("start", F.lit(float("-inf"))))))
          .select("run_dir", "f", "seq", "t_wall", "kind", *(F.lead(c).over(in_order).alias(f"next_{c}")
                                                             for c in ("kind", "t_wall"))))
    return ev.filter(col("kind") == 0).select(
        "run_dir", col("f").alias("fault"), F.concat(F.lit("nemesis/"), col("seq").cast("string")).alias("heal_id"),
        F.when(col("next_kind") == 1, (col("next_t_wall") - col("t_wall")) * 1000.0).alias("ms"))


def recovery_times(pairs: DataFrame) -> list[RecoveryRow]:
    """Heal → re-registration percentiles per fault type, from ``recovery_pairs``' rows."""
    from pyspark.sql import functions as F

    agg = pairs.groupBy("fault").agg(
        F.count("*").alias("heals"), F.count("ms").alias("paired"), F.expr(_PCT).alias("p"), F.max("ms").alias("max"))
    return sorted((RecoveryRow(r["fault"], r["heals"], r["paired"], r["heals"] - r["paired"], *_pcts(r["p"]), r["max"])
                   for r in agg.collect()), key=lambda r: r.fault)


def op_pairs(events: DataFrame) -> DataFrame:
    """Every client operation of ``pairing_events`` as ``(run_dir, op, outcome, ms)``: the pairing
    of ``pairing.op_latencies`` (``history.ops.pair_operations``) as a window, so that the
    thousands of operations of a run never leave the JVM. In one run, source and process, in ``seq``
    order, an invoke pairs with the event right after it when that is a completion, and is ``open``
    otherwise (another invoke, or nothing); a completion not right after an invoke (a torn history)
    pairs with nothing."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    after = Window.partitionBy("run_dir", "src", "process").orderBy("seq")
    ev = events.filter(_client_events()).select(
        "run_dir", "f", "type", "t_mono", "t_wall",
        *(F.lead(c).over(after).alias(f"next_{c}") for c in ("type", "t_mono", "t_wall")))
    done = F.col("next_type").isin(*COMPLETIONS)
    by_mono = F.col("t_mono").isNotNull() & F.col("next_t_mono").isNotNull()
    ms = F.when(by_mono, (F.col("next_t_mono") - F.col("t_mono")) / 1e6).otherwise(
        (F.col("next_t_wall") - F.col("t_wall")) * 1000.0)
    return ev.filter(F.col("type") == "invoke").select(
        "run_dir", F.col("f").alias("op"), F.when(done, F.col("next_type")).otherwise(F.lit("open")).alias("outcome"),
        F.when(done, ms).alias("ms"))


def run_pairs(events: DataFrame) -> DataFrame:
    """The rows of ``recovery_pairs`` (``kind`` "heal", ``key`` the fault) and of ``op_pairs``
    (``kind`` "op", ``key`` the op) of ``pairing_events``, both from one exchange of the events by
    run and one walk of each run in the JVM (``zkfence.RunPairs``, with the project's jar: the
    windows step by step), instead of two windows' sorts over the cached events. ``heals_and_ops``
    splits them."""
    from pyspark.sql import DataFrame

    spark = events.sparkSession
    by_run = events.repartition("run_dir").sortWithinPartitions("run_dir")
    return DataFrame(spark._jvm.zkfence.RunPairs.walk(by_run._jdf, list(COMPLETIONS), sorted(NOT_CLIENTS)), spark)


def heals_and_ops(pairs: DataFrame) -> tuple[DataFrame, DataFrame]:
    """``run_pairs``' rows as ``recovery_pairs``' and ``op_pairs``' columns."""
    from pyspark.sql import functions as F

    heals = pairs.filter(F.col("kind") == "heal").select("run_dir", F.col("key").alias("fault"), "heal_id", "ms")
    ops = pairs.filter(F.col("kind") == "op").select("run_dir", F.col("key").alias("op"), "outcome", "ms")
    return heals, ops


def op_latencies(pairs: DataFrame, checks: DataFrame) -> list[LatencyRow]:
    """Client operation latency percentiles per workload and op type, from ``op_pairs``' rows; runs
    without a workload (``none``) contribute nothing."""
    from pyspark.sql import functions as F

    runs = checks.filter(F.col("workload") != "none").select("run_dir", "workload").distinct()
    df = pairs.join(runs, "run_dir")
    counts = [F.count(F.when(F.col("outcome") == o, 1)).alias(o) for o in (*COMPLETIONS, "open")]
    agg = df.groupBy("workload", "op").agg(F.count("*").alias("ops"), *counts, F.expr(_PCT).alias("p"),
                                           F.max("ms").alias("max"))
    return sorted((LatencyRow(r["workload"], r["op"], r["ops"], r["ok"], r["fail"], r["info"], r["open"],
                              *_pcts(r["p"]), r["max"]) for r in agg.collect()), key=lambda r: (r.workload, r.op))


def flaky_configs(checks: DataFrame) -> list[Flaky]:
    """Configurations (test, toggles, faults, workload, ZooKeeper version; not the seed) whose runs'
    verdicts differ."""
    from pyspark.sql import functions as F

    key = ["test", "toggles", "faults", "workload", "zk_version"]
    runs = checks.select("run_dir", "run_id", *key, "run_valid").distinct()
    agg = (runs.groupBy(*key)
           .agg(F.count("*").alias("runs"), F.countDistinct("run_valid").alias("verdicts"),
                *(F.count(F.when(F.col("run_valid") == v, 1)).alias(v) for v in ("valid", "invalid", "unknown")),
                F.array_join(F.array_sort(F.collect_list("run_id")), " ").alias("run_ids"))
           .filter(F.col("verdicts") > 1))
    return sorted((Flaky(*(r[k] for k in key), r["runs"], r["valid"], r["invalid"], r["unknown"], r["run_ids"])
                   for r in agg.collect()), key=pairing.flaky_order)


def _pcts(p: list[float] | None) -> tuple[float | None, float | None, float | None]:
    return (p[0], p[1], p[2]) if p else (None, None, None)


def cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return f"{v:.1f}" if isinstance(v, float) else str(v)


def columns(t: Table) -> list[str]:
    names = [f.name for f in fields(t.kind)]
    return [*names, "rate"] if t.kind is Rate else names


def values(t: Table, row: Any) -> list[Any]:
    vals = list(astuple(row))
    return [*vals, round(row.rate, 4)] if t.kind is Rate else vals


def write_csv(t: Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".csv.part")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns(t))
        for r in t.rows:
            w.writerow(["" if v is None else v for v in values(t, r)])
    tmp.replace(path)


def write_parquet(spark: Any, t: Table, path: Path) -> None:
    """The table as one Parquet file in directory ``path``, replaced whole (written beside, then renamed)."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    spark_type = {int: LongType(), float: DoubleType(), str: StringType()}
    hints = {f.name: f.type for f in fields(t.kind)}
    schema = StructType([StructField(c, spark_type[_base(hints.get(c, "float"))], True) for c in columns(t)])
    tmp = path.with_name(f"_{path.name}-{uuid.uuid4().hex[:8]}")
    spark.createDataFrame([tuple(values(t, r)) for r in t.rows], schema).coalesce(1).write.parquet(str(tmp))
    old = path.with_name(f"_{path.name}-old")
    if path.exists():
        path.replace(old)
    tmp.replace(path)
    shutil.rmtree(old, ignore_errors=True)


def _base(hint: Any) -> type:
    text = str(hint)
    return int if text.startswith("int") else str if text.startswith("str") else float


def render(t: Table) -> object:
    from rich.table import Table as RichTable
    from rich.text import Text

    if not t.rows:
        return Text(f"{t.title}: no rows", style="italic")

    rt = RichTable(title=t.title)
    cols = columns(t)
    numeric = {f.name for f in fields(t.kind) if _base(f.type) is not str} | {"rate"}
    for c in cols:
        rt.add_column(c, justify="right" if c in numeric else "left", overflow="fold")
    for r in t.rows:
        vals = values(t, r)
        rt.add_row(*(f"{v:.0%}" if c == "rate" else cell(v) for c, v in zip(cols, vals, strict=True)))
    return rt
