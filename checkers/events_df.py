"""Project histories (docs/events.md) as one Spark DataFrame, projected to what the checkers read.

``load`` first reads every history with the history's own validator (``history.validate``: the one
definition of an event, which the plain reader and the report use too), streaming, in this process:
Spark's JSON reader is laxer (a number for a string, a byte-order mark, single quotes, ``NaN``), and
a line it took as data that the validator calls damaged made a verdict of damage. A damaged line is
then one ``file:line`` error, or, with ``skip_damaged``, left out and counted (the history is read
from a copy without those lines). Spark then reads each history once with a fixed envelope schema,
parses from ``value`` exactly the fields the selected checkers read (``checkers.checker.field_types``:
types from the event contract ``history.kinds``) into ``v_<field>`` columns and keeps the rows of
the kinds they read. Run-sized input (``SMALL_BYTES``) is materialised once as one in-memory
partition: every checker then reads that, not the files. A line Spark could not
read beyond the torn tail the validator dropped is an error, never a row silently lost.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING

from base.errors import UsageError
from checkers.checker import Reads, field_types
from checkers.rows import check_paths
from checkers.spark import literal_paths, source_files
from history import Lacking, Need, Scan, scan_lines
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
    damaged: dict[str, Scan] = field(default_factory=dict)  # histories with lines skipped (``skip_damaged``)
    scratch: str | None = None  # the copies without those lines, removed on release
    lacking: dict[str, list[Lacking]] = field(default_factory=dict)  # events without a needed field (``Need``)

    def release(self) -> None:
        if self.cached is not None:
            self.cached.unpersist()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def read(spark: SparkSession, paths: Sequence[str], files: dict[str, str] | None = None) -> DataFrame:
    """The envelope of every line of every history, one scan; ``hist`` is the path as given.
    ``files`` maps a path to the file to read in its place (a copy without its damaged lines)."""
    from pyspark.sql import functions as F

    check_paths(paths)
    files = files or {}
    absolute = {str(Path(files.get(p, p)).resolve()): str(p) for p in paths}
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
                       *[_finite(F.col("_v").getField(n), t).alias(f"v_{n}") for n, t in types.items()])


def _finite(c: Column, spark_type: str) -> Column:
    """A DOUBLE field as the plain reader has it: Spark reads a writer's ``"NaN"``/``"Infinity"``
    (``history.validate.NON_FINITE``) as that double, the plain reader (``checkers.rows``) as null."""
    from pyspark.sql import functions as F

    if spark_type != "DOUBLE":
        return c
    return F.when(F.isnan(c) | (F.abs(c) == F.lit(float("inf"))), F.lit(None).cast("double")).otherwise(c)


def small_input(paths: Sequence[str | os.PathLike[str]]) -> bool:
    """Run-sized: at most ``SMALL_BYTES`` of JSONL in all (a path that is not a file is the reader's to
    report)."""
    return sum(os.path.getsize(p) for p in paths if os.path.isfile(p)) <= SMALL_BYTES


def validated(paths: Sequence[str], *, skip_damaged: bool = False,
              needs: Sequence[Need] = ()) -> tuple[dict[str, Scan], dict[str, str], str | None]:
    """Each history read by the validator: ``({path: Scan}, {path: copy to read instead}, scratch
    directory of the copies or None)``. A damaged line raises ``UsageError`` naming file and line;
    with ``skip_damaged`` the history's lines that are events are copied, to be read instead.
    Events lacking a field of ``needs`` are in each ``Scan.lacking``."""
    check_paths(paths)
    scans = {str(p): scan(p, raise_damage=not skip_damaged, needs=needs) for p in paths}
    damaged = [p for p, s in scans.items() if s.damaged_total]
    if not damaged:
        return scans, {}, None
    scratch = tempfile.mkdtemp(prefix="zkfence-undamaged-")
    files = {}
    for i, p in enumerate(damaged):
        files[p] = os.path.join(scratch, f"{i}.jsonl")
        with open(files[p], "wb") as out:
            for _ in scan_lines(p, Scan(p), skip=True, keep=out):
                pass
    return scans, files, scratch


def scan(path: str, *, raise_damage: bool = True, needs: Sequence[Need] = ()) -> Scan:
    """The validator's pass over one history; its first damaged line is a ``UsageError`` unless
    ``raise_damage`` is false (then the lines are counted in the ``Scan``)."""
    from history import HistoryFormatError

    out = Scan(str(path))
    try:
        for _ in scan_lines(path, out, skip=not raise_damage, needs=needs):
            pass
    except HistoryFormatError as e:
        raise UsageError(f"{e} (see docs/events.md)") from None
    return out


def load(spark: SparkSession, paths: Sequence[str], reads: Reads, *, skip_damaged: bool = False,
         needs: Sequence[Need] = ()) -> Loaded:
    """Validate, read and project the histories for checkers reading ``reads`` (and needing ``needs``)."""
    from pyspark.sql import functions as F

    scans, files, scratch = validated(paths, skip_damaged=skip_damaged, needs=needs)
    try:
        raw = read(spark, paths, files)
        scan_df = parse(raw.withColumn("_bad", _bad()), field_types(reads), extra=("_bad",))
        small = small_input(paths)
        if small and spark.sparkContext.master.startswith("local"):
            # One leaf instead of the read-parse lineage, which every checker's plan re-analyses (~1 s
            # on a small run). Local only: a local checkpoint lives on executors a cluster may take away.
            cached, keep = None, scan_df.coalesce(1).localCheckpoint()
        else:
            cached = keep = (scan_df.coalesce(1) if small else scan_df).persist()
        stats = keep.groupBy("hist").agg(F.sum(F.col("_bad").cast("int")).alias("bad"))
        for row in stats.collect():
            s = scans[row["hist"]]
            torn = int(s.torn and row["hist"] not in files)  # a copy holds only events
            if int(row["bad"] or 0) != torn:
                raise UsageError(f"{row['hist']}: Spark could not read {int(row['bad'] or 0) - torn} line(s) that are "
                                 "valid events (see docs/events.md)")
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    frame = keep.filter(~F.col("_bad") & F.col("f").isin(*reads)).drop("_bad")
    return Loaded(frame, {p: s.events for p, s in scans.items()}, small, cached,
                  {p: s for p, s in scans.items() if s.damaged_total}, scratch,
                  {p: s.lacking for p, s in scans.items() if s.lacking})


def parse_all(raw: DataFrame) -> DataFrame:
    """Every contract field at its canonical type, plus ``run``, ``t_mono`` and the raw ``value``:
    what ``--parquet`` keeps for work across runs."""
    types = {f: TYPES[t] for f, t in sorted(FIELD_TYPES.items())}
    return parse(raw, types, extra=("run", "t_mono", "value"))


def write_parquet(spark: SparkSession, paths: Sequence[str], out: str) -> None:
    """Append these histories' parsed events under OUT, partitioned by run (a re-check replaces a run)."""
    from pyspark.sql import functions as F

    scans, files, scratch = validated(paths)  # a damaged line is an error here: no flag skips it
    try:
        write_events(parse_all(read(spark, paths, files).filter(~_bad())).withColumn("run", F.coalesce("run", F.lit(""))),
                     out)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def write_events(ev: DataFrame, out: str) -> None:
    """``parse_all`` rows under OUT in the ``--parquet`` layout: a directory per run, each file's rows
    in kind (``f``) then history-position order. Every plan reads a few kinds and filters on ``f``
    first; with the kinds in runs, Parquet's page statistics let its scan skip the pages of every
    other kind instead of decoding them (bench/checkers_epoch.py reads this layout; docs/checking.md
    has the figures). The writer wants its input ordered by ``run``: a prefix of this order, so this
    sort is the only one."""
    (
        ev.sortWithinPartitions("run", "f", "idx")
        .write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy("run")
        .parquet(out)
    )
