"""Project histories (docs/events.md) as one Spark DataFrame, projected to what the checkers read.

``load`` reads every history once with a fixed envelope schema, parses from ``value`` exactly the
fields the selected checkers read (``checkers.checker.field_types``: types from the event contract
``history.kinds``) into ``v_<field>`` columns and keeps the rows of the kinds they read. Run-sized
input (``SMALL_BYTES``) is materialised once as one in-memory partition: the per-history counts,
the validation and every checker then read that, not the files. A line Spark cannot read is judged
by the history's own validator (``history.read_records``): a torn final line is dropped, anything
else is a ``file:line`` error. So is a line whose strings hold bytes that are not UTF-8: Spark's JSON
source passes some (an overlong encoding, an encoded surrogate) through as they are.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING

from base.errors import UsageError
from checkers.checker import Reads, field_types
from checkers.rows import check_paths
from checkers.spark import literal_paths, source_files
from history import HistoryFormatError, has_torn_tail, read_records
from history.kinds import FIELD_TYPES, TYPES

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

ENVELOPE_DDL = (
    "run STRING, src STRING, seq BIGINT, id STRING, t_wall DOUBLE, t_mono BIGINT, type STRING, f STRING, "
    "process STRING, value STRING, `index` BIGINT, _corrupt_record STRING"
)
# Up to this many bytes of JSONL (a real run is well under 1 MB; 64 MB is ~200,000 events) the
# events are kept as one partition in memory (``checkers.plans`` runs the plans as one job on it).
SMALL_BYTES = 64 << 20


@dataclass
class Loaded:
    frame: DataFrame  # rows of the kinds read: envelope (``checkers.checker.ENVELOPE``) + v_<field>
    counts: dict[str, int]  # events per history (every kind, a dropped torn line not counted)
    small: bool
    cached: DataFrame | None = None  # what to unpersist when done (a persisted frame)

    def release(self) -> None:
        if self.cached is not None:
            self.cached.unpersist()


def read(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """The envelope of every line of every history, one scan; ``hist`` is the path as given."""
    from pyspark.sql import functions as F

    check_paths(paths)
    absolute = {str(Path(p).resolve()): str(p) for p in paths}
    raw = (
        spark.read.schema(ENVELOPE_DDL)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .json(literal_paths(absolute))
    )
    # every file Spark lists, keyed by its URI: no path is decoded per row
    given = {uri: absolute.get(path, path) for uri, path in source_files(raw).items()}
    mapping = F.create_map(*[F.lit(x) for kv in given.items() for x in kv])
    return raw.withColumn("hist", F.element_at(mapping, F.input_file_name()))


def _bad() -> Column:
    """Lines Spark could not read as an event (the history's validator then names them)."""
    from pyspark.sql import functions as F

    not_utf8 = [~F.coalesce(F.is_valid_utf8(c), F.lit(True)) for c in ("run", "src", "id", "type", "f", "process", "value")]
    return reduce(lambda a, b: a | b, not_utf8, F.col("_corrupt_record").isNotNull() | F.col("src").isNull()
                  | F.col("seq").isNull() | F.col("t_wall").isNull() | F.col("type").isNull() | F.col("f").isNull())


def parse(raw: DataFrame, types: dict[str, str], extra: Sequence[str] = ()) -> DataFrame:
    """Envelope columns plus ``v_<field>`` for each ``{field: Spark type}``. ``from_json`` is
    PERMISSIVE: a wrong-typed or missing field is null on its own and never fails the row, so
    checkers treat null as "cannot decide"."""
    from pyspark.sql import functions as F

    cols: list[Column | str] = [
        "hist", "src", "seq", F.coalesce("id", F.concat_ws("/", "src", F.col("seq").cast("string"))).alias("id"),
        F.col("index").alias("idx"), "t_wall", "type", "f", "process",
        F.expr(r"try_cast(nullif(regexp_extract(src, '^agent:(\\d+)$', 1), '') AS BIGINT)").alias("node"), *extra,
    ]
    if not types:
        return raw.select(*cols)
    ddl = ", ".join(f"`{name}` {t}" for name, t in types.items())
    base = raw.select(*cols, F.from_json(F.col("value"), ddl, {"mode": "PERMISSIVE"}).alias("_v"))
    return base.select(*[c for c in base.columns if c != "_v"],
                       *[F.col("_v").getField(n).alias(f"v_{n}") for n in types])


def small_input(paths: Sequence[str | os.PathLike[str]]) -> bool:
    """Run-sized: at most ``SMALL_BYTES`` of JSONL in all (a path that is not a file is the reader's to
    report)."""
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p)) <= SMALL_BYTES


def load(spark: SparkSession, paths: Sequence[str], reads: Reads) -> Loaded:
    """Read, validate and project the histories for checkers reading ``reads``."""
    from pyspark.sql import functions as F

    raw = read(spark, paths)
    scan = parse(raw.withColumn("_bad", _bad()), field_types(reads), extra=("_bad",))
    small = small_input(paths)
    if small and spark.sparkContext.master.startswith("local"):
        # One leaf instead of the read-parse lineage, which every checker's plan re-analyses (~1 s
        # on a small run). Local only: a local checkpoint lives on executors a cluster may take away.
        cached, keep = None, scan.coalesce(1).localCheckpoint()
    else:
        cached = keep = (scan.coalesce(1) if small else scan).persist()
    stats = keep.groupBy("hist").agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("_bad").cast("int")).alias("bad"))
    counts: dict[str, int] = {}
    for row in stats.collect():
        counts[row["hist"]] = int(row["n"]) - _validate(row["hist"], int(row["bad"] or 0))
    frame = keep.filter(~F.col("_bad") & F.col("f").isin(*reads)).drop("_bad")
    return Loaded(frame, counts, small, cached)


def _validate(path: str, bad: int) -> int:
    """How many bad lines of ``path`` to drop: a torn tail (0 or 1); raises for anything else."""
    if bad == 0:
        return 0
    if bad == 1 and has_torn_tail(path):
        return 1
    try:
        for _ in read_records(path):
            pass
    except HistoryFormatError as e:
        raise UsageError(f"{e} (see docs/events.md)") from None
    raise UsageError(f"{path}:1: malformed events (Spark could not read them)")


def parse_all(raw: DataFrame) -> DataFrame:
    """Every contract field at its canonical type, plus ``run``, ``t_mono`` and the raw ``value``:
    what ``--parquet`` keeps for work across runs."""
    types = {f: TYPES[t] for f, t in sorted(FIELD_TYPES.items())}
    return parse(raw, types, extra=("run", "t_mono", "value"))


def write_parquet(spark: SparkSession, paths: Sequence[str], out: str) -> None:
    """Append these histories' parsed events under OUT, partitioned by run (a re-check replaces a run)."""
    from pyspark.sql import functions as F

    write_events(parse_all(read(spark, paths).filter(~_bad())).withColumn("run", F.coalesce("run", F.lit(""))), out)


def write_events(ev: DataFrame, out: str) -> None:
    """``parse_all`` rows under OUT in the ``--parquet`` layout: a directory per run, each file's rows
    in kind (``f``) then history-position order. Every plan reads a few kinds and filters on ``f``
    first; with the kinds in runs, Parquet's page statistics let its scan skip the pages of every
    other kind instead of decoding them (bench/checkers_epoch.py reads this layout; bench/RESULTS.md
    has the figures). The writer wants its input ordered by ``run``: a prefix of this order, so this
    sort is the only one."""
    (
        ev.sortWithinPartitions("run", "f", "idx")
        .write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy("run")
        .parquet(out)
    )
