"""Benchmark: the epoch-fencing plans (``checkers.fencing.PLANS``) on synthetic histories of 1M and 10M
events. Not a test.

Usage: python bench/checkers_epoch.py [--sizes 1000000,10000000] [--out /tmp/zkfence-bench] [--repeat K]
       [--per-plan]

The generator is Spark itself (spark.range -> events of ten kinds, value as JSON text; every committed
ISR expansion decidable: its request, the state before it, the fetch it names and the replica's
registration current at commit are all there, and agree), parsed once
with every field of the event contract (checkers.events_df.parse_all) and written as Parquet in the
layout `harness check --parquet` keeps for cross-run work (checkers.events_df.write_events: a
directory per run, rows in kind order within each file). Timed: read that Parquet, run every
plan, collect the anomalies (one job). I/O floor: read the same Parquet and aggregate over a full
scan of every column the plans declare they read (``Checker.reads``: a superset of what each scans;
sum of hashes, so no metadata-only count), on the same session.
Figures are printed after the SparkSession is up, each run's with what the JVM spent during it
(CPU, of which JIT compiling and GC; classes Spark generated), the floor's too: a size's first run
compiles the plans' code and the engine's, the runs after it (``--repeat K``: K runs of the checkers
and of the floor at each size, alternated) show the same work on warm code. ``--per-plan`` then times
each plan alone on the largest size, once to warm and once measured, slowest first: where the
family's time goes.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizes import parse_sizes  # noqa: E402  (bench/ is on sys.path: this script's directory)
from spark_up import jvm_account, spent, warm_spark  # noqa: E402

from base.parsing import summary  # noqa: E402
from checkers import events_df, plans  # noqa: E402
from checkers.checker import columns, union  # noqa: E402
from checkers.fencing import PLANS  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402

BROKERS = 5
PARTITIONS = 50


def generate(spark, n: int):  # noqa: ANN001, ANN201
    from pyspark.sql import functions as F

    i = F.col("id")
    k = i % 10
    b = ((i / 10).cast("long") % BROKERS) + 1
    src = F.when(k.isin(0, 6), F.lit("agent:1")).when(k == 9, F.lit("zkproxy")).otherwise(F.concat(F.lit("agent:"), b))
    f = F.element_at(F.array(*[F.lit(x) for x in (
        "control_send", "control_recv", "partition_state", "fetch", "alter_partition", "alter_partition_handled",
        "controller_zk_write", "register", "register", "frame")]), (k + 1).cast("int"))
    typ = F.when(k == 6, "ok").when(k == 7, "invoke").when(k == 8, "ok").otherwise("event")
    epoch = i - (i % 1000)  # the broker epoch current at i (monotone)
    decade = (i / 10).cast("long")
    part = decade % PARTITIONS
    version = (i / (10 * PARTITIONS)).cast("long")  # partition_state's zk_version; it commits expansions
    emap = F.create_map(b.cast("string"), epoch)
    val = F.struct(
        F.when(k.isin(0, 1), i - k).alias("request_id"),
        F.when(k.isin(0, 1), F.lit("LeaderAndIsr")).alias("kind"),
        F.when(k == 0, b).alias("target"),
        F.when(k.isin(0, 1, 2, 6), F.lit(1)).alias("controller_epoch"),
        F.when(k.isin(0, 1), epoch).alias("broker_epoch"),
        F.when(k == 0, emap).alias("epoch_map"),
        F.when(k == 1, epoch).alias("own_epoch"),
        F.when(k == 1, F.lit("applied")).alias("outcome"),
        F.when(k.isin(2, 3, 4, 5), F.lit("t")).alias("topic"),
        F.when(k.isin(2, 3, 4, 5), part).alias("partition"),
        F.when(k == 2, F.lit(1)).when(k == 5, b).alias("leader"),
        F.when(k == 2, version).alias("leader_epoch"),
        F.when(k == 2, version).alias("zk_version"),
        F.when(k == 2, F.array(F.lit(1), F.lit(2))).when(k == 5, F.array_distinct(F.array(F.lit(1), F.lit(2), b)))
        .alias("isr"),
        F.when(k == 5, version).alias("partition_epoch"),
        F.when(k.isin(2, 6, 9), i).alias("zxid"),
        F.when(k == 3, b).alias("replica"),
        F.when(k == 3, i - 45).alias("replica_epoch"),  # b's registration (k == 8) five decades back
        F.when(k == 4, F.create_map(b.cast("string"), F.concat(F.lit("agent:"), b.cast("string"), F.lit("/"),
                                                              (i - 1).cast("string")))).alias("based_on_fetch"),
        F.when(k == 4, F.array(F.struct(b.alias("id"), epoch.alias("epoch")))).alias("new_isr_with_epochs"),
        F.when(k == 3, F.concat(F.lit("f"), i.cast("string")))
        .when(k == 4, F.concat(F.lit("a"), i.cast("string")))
        .when(k == 5, F.concat(F.lit("a"), (i - 1).cast("string"))).alias("rid"),
        F.when(k == 5, F.create_map(((((i - 1) / 10).cast("long") % BROKERS) + 1).cast("string"), epoch)).alias("live"),
        # the first round of a partition's states has no earlier one: those expansions are rejected
        F.when(k == 5, F.when(version == 0, F.lit(1)).otherwise(F.lit(0))).alias("error_code"),
        F.when(k == 6, F.lit(0)).alias("checked_version"),
        F.when(k.isin(7, 8), b).alias("broker_id"),
        F.when(k == 8, i).alias("epoch"),
        F.when(k == 8, i).alias("czxid"),
        F.when(k.isin(7, 8, 9), 1000 + b).alias("session_id"),
        F.when(k == 8, 1000 + b).alias("owner"),
        F.when(k == 9, F.lit("s2c")).alias("dir"),
    )
    value = F.to_json(val)
    value = F.regexp_replace(value, '"rid":', '"request_id":')  # fetch/alter ids are strings
    return spark.range(n).select(
        F.lit("bench").alias("hist"), F.lit("bench").alias("run"), src.alias("src"), i.alias("seq"),
        F.concat_ws("/", src, i.cast("string")).alias("id"), (F.lit(1.7e9) + i / 1e4).alias("t_wall"),
        (i * 1000).alias("t_mono"), typ.alias("type"), f.alias("f"), b.cast("string").alias("process"),
        value.alias("value"), i.alias("index"),
    )


def read_columns(df) -> list[str]:  # noqa: ANN001
    """Top-level columns the physical plan's Parquet scans read (their ReadSchema)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    names: set[str] = set()
    for m in re.finditer(r"ReadSchema: struct<(.*)>", plan):
        depth, cur = 0, ""
        for ch in m.group(1) + ",":
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
            elif ch == "," and depth == 0:
                names.add(cur.split(":", 1)[0])
                cur = ""
                continue
            cur += ch
    return sorted(n for n in names if n)


def main() -> int:
    ap = argparse.ArgumentParser(description=summary(__doc__))
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--out", default="/tmp/zkfence-bench")
    ap.add_argument("--repeat", type=int, default=2, metavar="K",
                    help="runs of the checkers and of the floor at each size, alternated (default 2: the first and a warm one)")
    ap.add_argument("--per-plan", action="store_true", help="then each plan alone on the largest size, warm")
    a = ap.parse_args()
    if a.repeat < 1:
        print(f"bench/checkers_epoch.py: --repeat {a.repeat}: must be at least 1", file=sys.stderr)
        return 254
    sizes = parse_sizes(a.sizes)
    spark = warm_spark()
    from pyspark.sql import functions as F

    needed = None
    times = {}
    for n in sizes:
        out = Path(a.out) / f"events-{n}"
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.monotonic()
        events_df.write_events(events_df.parse_all(generate(spark, n)), str(out))
        gen = time.monotonic() - t0
        ev = spark.read.parquet(str(out))
        if needed is None:
            read = read_columns(plans.anomalies(PLANS, ev))
            needed = list(columns(union(c.reads for c in PLANS)))  # what the plans declare they read
            print(f"checkers' Parquet ReadSchema columns: {len(read)}; floor scans {len(needed)} (their declared reads)")
        cols = [F.map_entries(c) if dict(ev.dtypes)[c].startswith("map") else F.col(c) for c in needed]
        for run in range(1, a.repeat + 1):
            before = jvm_account(spark)
            res, check = timed_collect(spark, PLANS, out)
            jvm = spent(before, jvm_account(spark))
            before = jvm_account(spark)
            t0 = time.monotonic()
            scan = spark.read.parquet(str(out)).select(F.sum(F.hash(*cols)).alias("h"), F.count(F.lit(1)).alias("n")).collect()
            floor = time.monotonic() - t0
            floor_jvm = spent(before, jvm_account(spark))
            if run == 1:
                bad = {k: v["stats"]["anomalies_total"] for k, v in res["bench"].items() if v["valid"] is False}
                unknown = {k: v["stats"].get("unknown_total", 0) for k, v in res["bench"].items()
                           if v["valid"] == "unknown"}
                times[n] = check
                print(f"{n:>10,} events: generate+parse+write {gen:6.1f} s | checkers {check:6.1f} s = {n / check:>10,.0f} "
                      f"events/s | I/O floor (full scan of the {len(needed)} declared columns, hash-sum + count) "
                      f"{floor:5.1f} s | checkers/floor {check / floor:4.1f}x | rows {scan[0]['n']:,} | anomalies "
                      f"{bad or 'none'} | unknown {unknown or 'none'}")
                print(f"{'':>10}  run 1: {jvm}")
                print(f"{'':>10}  floor: {floor_jvm}")
            else:
                print(f"{'':>10}  run {run} (warm): checkers {check:6.1f} s | I/O floor {floor:5.1f} s"
                      f" | checkers/floor {check / floor:4.1f}x | {jvm} | floor: {floor_jvm}")
    if len(sizes) >= 2:
        lo, hi = sizes[0], sizes[-1]
        print(f"time ratio {hi:,}/{lo:,} events: {times[hi] / times[lo]:.2f} (size ratio {hi / lo:.0f})")
    if a.per_plan:
        per_plan(spark, Path(a.out) / f"events-{sizes[-1]}", sizes[-1], times[sizes[-1]])
    return 0


def timed_collect(spark, checkers, path: Path):  # noqa: ANN001, ANN201
    """The plans' results on the Parquet at ``path`` (one job) and the seconds it took."""
    t0 = time.monotonic()
    res = plans.collect(checkers, spark.read.parquet(str(path)), ["bench"], small=False)
    return res, time.monotonic() - t0


def per_plan(spark, path: Path, n: int, together: float) -> None:  # noqa: ANN001
    """Each plan alone on ``path``, its second run timed (the first compiles and warms its code)."""
    alone = {c.name: [timed_collect(spark, [c], path)[1] for _ in range(2)][-1] for c in PLANS}
    print(f"each plan alone on {n:,} events, warm: " + ", ".join(
        f"{k} {v:.1f} s" for k, v in sorted(alone.items(), key=lambda kv: -kv[1]))
        + f" | sum {sum(alone.values()):.1f} s (all together, its first run at this size: {together:.1f} s)")


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
