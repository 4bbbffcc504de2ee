"""Project histories (docs/events.md) as Spark DataFrames with an explicit schema.

The envelope is read with a fixed schema; ``value`` is kept as its raw JSON text and the fields the
checkers need are parsed once with ``from_json`` into typed ``v_*`` columns. Malformed lines are
reported as ``file:line`` (a torn last line, from a crash mid-write, is tolerated as in
``history.events.read_events``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import UsageError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ENVELOPE_DDL = (
    "run STRING, src STRING, seq BIGINT, id STRING, t_wall DOUBLE, t_mono BIGINT, type STRING, f STRING, "
    "process STRING, value STRING, `index` BIGINT, _corrupt_record STRING"
)

# Every value field a checker reads. JSON ints are 64-bit: BIGINT keeps session ids and zxids exact.
# from_json is PERMISSIVE: a field of the wrong type (a string epoch, a null where a map belongs) parses
# to null on its own and never fails the row; checkers must treat null as "cannot decide".
VALUE_DDL = ", ".join(
    [
        "broker_id BIGINT, epoch BIGINT, czxid BIGINT, mzxid BIGINT, session_id BIGINT, recorded_session BIGINT",
        "owner BIGINT, state STRING, `exists` BOOLEAN, final BOOLEAN, reason STRING, error STRING",
        "controller_epoch BIGINT, epoch_zk_version BIGINT, checked_version BIGINT, op STRING, path STRING",
        "zxid BIGINT, live MAP<STRING, BIGINT>, new ARRAY<BIGINT>, dead ARRAY<BIGINT>, bounced ARRAY<BIGINT>",
        "request_id STRING, kind STRING, target BIGINT, broker_epoch BIGINT, max_broker_epoch BIGINT",
        "epoch_map MAP<STRING, BIGINT>, full BOOLEAN, `from` BIGINT, own_epoch BIGINT",
        "max_controller_epoch_seen BIGINT, outcome STRING, error_code BIGINT, cached_epoch BIGINT",
        "leader_moves STRING, stop_replicas STRING, topic STRING, `partition` BIGINT, replica BIGINT",
        "replica_epoch BIGINT, leader BIGINT, leader_epoch BIGINT, partition_epoch BIGINT",
        "new_isr_with_epochs ARRAY<STRUCT<id: BIGINT, epoch: BIGINT>>, based_on_fetch MAP<STRING, STRING>",
        "isr ARRAY<BIGINT>, zk_version BIGINT, offset BIGINT, acks STRING",
        "live_brokers ARRAY<BIGINT>, session_learned BOOLEAN",
    ]
)

def _value_fields() -> list[str]:
    return [p.split(":", 1)[0].strip().strip("`") for p in _top_level(_ddl_struct(VALUE_DDL))]


def _top_level(ddl: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in ddl:
        depth += ch in "<("
        depth -= ch in ">)"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _ddl_struct(ddl: str) -> str:
    """Turn 'a T, b U' into 'a: T, b: U' for a struct<...> literal (top-level commas only)."""
    parts = []
    for p in _top_level(ddl):
        name, typ = p.strip().split(" ", 1)
        parts.append(f"{name}: {typ}")
    return ", ".join(parts)


def load(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """One scan for many histories; column ``hist`` is the path as given (mapped from the file URI)."""
    from pyspark.sql import functions as F

    absolute = {str(Path(p).resolve()): str(p) for p in paths}
    if len(absolute) != len(paths):
        raise UsageError(f"{paths[0]}: the same history is given twice")
    raw = (
        spark.read.schema(ENVELOPE_DDL)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .json([str(Path(p).resolve()) for p in paths])
    )
    file_col = F.expr("url_decode(regexp_replace(input_file_name(), '^file:(//)?', ''))")
    mapping = F.create_map(*[x for kv in absolute.items() for x in (F.lit(kv[0]), F.lit(kv[1]))])
    return raw.withColumn("hist", F.coalesce(F.element_at(mapping, file_col), file_col))


def parse(df: DataFrame) -> DataFrame:
    """Typed columns: envelope plus ``v_<field>`` for every value field, ``node`` for agent sources."""
    from pyspark.sql import functions as F

    v = F.from_json(F.col("value"), VALUE_DDL, {"mode": "PERMISSIVE"})
    names = _value_fields()
    cols = [
        "hist", "run", "src", "seq", F.coalesce("id", F.concat_ws("/", "src", F.col("seq").cast("string"))).alias("id"),
        "t_wall", "t_mono", "type", "f", "process", F.col("index").alias("idx"), "value",
        F.expr(r"try_cast(nullif(regexp_extract(src, '^agent:(\\d+)$', 1), '') AS BIGINT)").alias("node"),
    ]
    return df.select(*cols, v.alias("_v")).select("*", *[F.col("_v")[n].alias(f"v_{n}") for n in names]).drop("_v")


def validate(df: DataFrame, paths: Sequence[str]) -> DataFrame:
    """Raise UsageError naming file:line for a malformed line; drop a torn final line."""
    from pyspark.sql import functions as F

    bad_cond = (
        F.col("_corrupt_record").isNotNull()
        | F.col("src").isNull()
        | F.col("seq").isNull()
        | F.col("type").isNull()
        | F.col("f").isNull()
    )
    bad = df.filter(bad_cond).groupBy("hist").count().collect()
    torn: list[str] = []
    for row in bad:
        path = row["hist"]
        line, torn_tail = _first_bad_line(path)
        if line is None:
            raise UsageError(f"{path}:1: malformed events (Spark could not read them)")
        if torn_tail and row["count"] == 1:
            torn.append(path)
            continue
        raise UsageError(f"{path}:{line}: not a valid event (see docs/events.md)")
    if torn:
        df = df.filter(~(F.col("hist").isin(torn) & bad_cond))
    return df.drop("_corrupt_record")


def _first_bad_line(path: str) -> tuple[int | None, bool]:
    """(first bad line number, whether it is a torn final line)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.readlines()
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s:
            continue
        try:
            d = json.loads(s)
            if not isinstance(d, dict) or not all(k in d for k in ("src", "seq", "type", "f")):
                raise ValueError("missing envelope fields")
            int(d["seq"])
        except (ValueError, TypeError):
            return n, n == len(lines) and not lines[-1].endswith("\n")
    return None, False


def load_events(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """Read, validate and parse histories. The result is cached: every checker scans it."""
    for p in paths:
        if not Path(p).is_file():
            raise UsageError(f"{p}: no such history")
    df = validate(load(spark, paths), paths)
    return parse(df).cache()


def write_parquet(ev: DataFrame, out: str) -> None:
    """Append this run's parsed events under OUT, partitioned by run (re-checks replace a run)."""
    (
        ev.write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy("run")
        .parquet(out)
    )
