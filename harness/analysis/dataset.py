"""The Parquet dataset of checked runs: ``<out>/checks/`` (one row per run and checker) and
``<out>/events/`` (one row per history line), both ``test=<t>/date=<d>/part-<batch>-*.parquet``.

An event row keeps its raw ``line`` and the fields the tables read, parsed once at ingest
(``PARSED``): the tables read those columns and never parse a line again. Each row says which
fields were parsed (``parsed_version``); rows written before the current ``PARSED_VERSION`` (before
``noop`` was one of them: null; before ``ended``: 2) have their lines parsed again when read.

Incremental: runs whose directory is already in the dataset are skipped. Safe to interrupt: a
batch is written by Spark under ``<out>/_staging-<id>/`` (ignored by readers, names starting with
``_``), the check rows one file per (test, date) partition, and each file is then moved into place
with an atomic rename, events first. A run's check rows live in exactly one file, and they decide whether the run
is in the dataset: ``read_events`` keeps only events whose (run, batch) has check rows, so events
moved in by an interrupted batch stay invisible and the run is ingested again next time.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checkers.spark import literal_paths, source_files
from checkers.udfs import ENVELOPE, OF_VALUE
from harness.analysis.runs import CheckRow

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

CHECKS = "checks"
EVENTS = "events"
LINES = ("run_dir", "test", "date", "batch", "line")
# Half the size of Spark's default snappy (358 against 748 MB for 9M events), written in the same time.
CODEC = "zstd"
# What ingest parses out of each line (``value``'s fields: only of the nemesis's events, the heals
# ``pairing.is_heal`` judges by them; any other event's are in ``line``).
PARSED = (*ENVELOPE, *OF_VALUE)
# Which fields a row's PARSED columns hold: 2 with ``noop``, 3 with ``ended`` (its JSON text). Rows of an
# earlier one are parsed again when read (their files lack the column: null), so an old dataset gives
# the tables of a new one.
PARSED_VERSION = 3
EVENTS_SCHEMA = ("run_dir string, test string, date string, batch string, line string, parsed_version int, "
                 "src string, seq long, f string, type string, t_wall double, t_mono long, process string, "
                 "stage string, phase string, instant boolean, reason string, noop boolean, "
                 "ended string")
SCHEMA = ("run_dir string, run_id string, test string, date string, seed long, workload string, "
          "inventory string, zk_version string, toggles string, faults string, run_valid string, "
          "events long, checker string, valid string, anomalies long, batch string")


def read_checks(spark: SparkSession, out: Path) -> DataFrame | None:
    root = out / CHECKS
    if not root.exists() or not any(root.rglob("*.parquet")):
        return None
    return spark.read.schema(SCHEMA).parquet(*literal_paths([root]))


def read_events(spark: SparkSession, out: Path) -> DataFrame | None:
    """Events of ingested runs: ``LINES`` and ``PARSED`` (a field is null where a line lacks it or
    has it with another type: a corrupt line never fails the query)."""
    from pyspark.sql import functions as F

    checks, root = read_checks(spark, out), out / EVENTS
    if checks is None or not root.exists() or not any(root.rglob("*.parquet")):
        return None
    ev = spark.read.schema(EVENTS_SCHEMA).parquet(*literal_paths([root])).join(
        checks.select("run_dir", "batch").distinct(), ["run_dir", "batch"], "left_semi")
    version = F.col("parsed_version")
    fresh = ev.filter(version >= PARSED_VERSION).select(*LINES, *PARSED)
    # Both filters are pushed into the Parquet scan, whose row-group statistics then skip the other
    # rows' files: the stale side reads no current file's lines at all (a negation or a coalesce
    # would not be pushed, and every line of the dataset would be read to find none stale).
    stale = ev.filter(version.isNull() | (version < PARSED_VERSION)).select(*LINES)
    return fresh.unionByName(parse_lines(stale).drop("parsed_version"))


def parse_lines(lines: DataFrame, *, jvm: bool | None = None) -> DataFrame:
    """``lines`` with ``parsed_version`` (``PARSED_VERSION``) and the ``PARSED`` fields of each ``line``. Each line is parsed
    once, every field as its JSON text (``value``'s of the nemesis's lines only), then cast: by
    ``zkfence.EventFields`` (``checkers.udfs``), or where the session lacks it (``jvm`` False) by
    ``from_json`` and ``get_json_object``, which give the same values
    (tests/integration/test_event_fields.py) in about twice the time. ``inline`` makes the fields a
    generator's output: a filter on them is then not pushed below it, where the optimizer would
    parse each line again for every field it tests."""
    from pyspark.sql import functions as F

    from checkers import udfs

    if jvm is None:
        jvm = udfs.registered(lines.sparkSession, udfs.EVENT_FIELDS)
    if jvm:
        fields = F.call_function(udfs.EVENT_FIELDS, F.col("line"))
        of_value = F.col
    else:
        fields = F.from_json("line", ", ".join(f"{name} string" for name in ENVELOPE))

        def of_value(name: str) -> Column:
            return F.get_json_object("line", f"$.value.{name}")
    return _typed(lines.select(*lines.columns, F.inline(F.array(fields))), lines.columns, of_value)


def _typed(fields: DataFrame, keep: list[str], of_value: Callable[[str], Column]) -> DataFrame:
    """``keep`` and the ``PARSED`` fields of ``fields`` (each its JSON text, ``OF_VALUE``'s by
    ``of_value``) cast to the dataset's types, ``value``'s of the nemesis's lines only."""
    from pyspark.sql import functions as F

    types = dict(f.split() for f in EVENTS_SCHEMA.split(", "))
    nemesis = F.col("src") == "nemesis"
    return fields.select(
        *keep, F.lit(PARSED_VERSION).alias("parsed_version"),
        *(F.col(name).try_cast(types[name]).alias(name) for name in ENVELOPE),
        *(F.when(nemesis, of_value(name).try_cast(types[name])).alias(name) for name in OF_VALUE))


def ingested_dirs(spark: SparkSession, out: Path) -> set[str]:
    df = read_checks(spark, out)
    return set() if df is None else {r[0] for r in df.select("run_dir").distinct().collect()}


def append(spark: SparkSession, out: Path, rows: list[CheckRow]) -> int:
    """Append ``rows`` (whole runs) and their runs' history lines to the dataset; returns the
    number of check part files moved in."""
    if not rows:
        return 0
    batch = uuid.uuid4().hex[:12]
    staging = out / f"_staging-{batch}"
    data: list[dict[str, Any]] = [{**dataclasses.asdict(r), "batch": batch} for r in rows]
    runs = {r.run_dir: r for r in rows}
    # The check rows, one file per (test, date): a run's rows in one file, moved in by one rename.
    # The events as each task read them (a file per task and partition): shuffling every line into
    # one file per partition took a quarter of an ingest, and only the check rows decide visibility.
    for name, frame in ((EVENTS, history_lines(spark, runs, batch)),
                        (CHECKS, spark.createDataFrame(data, SCHEMA).repartition("test", "date"))):
        frame.write.mode("overwrite").option("compression", CODEC).partitionBy("test", "date").parquet(
            str(staging / name))
    moved = 0
    for name in (EVENTS, CHECKS):
        moved = _move_parts(staging / name, out / name, batch)
    shutil.rmtree(staging, ignore_errors=True)
    return moved


def history_lines(spark: SparkSession, runs: dict[str, CheckRow], batch: str) -> DataFrame:
    """Every non-blank line of these runs' ``history.jsonl`` with its run's columns, parsed
    (``PARSED``). With the project's jar, read and parsed in the tasks that read the files
    (``zkfence.HistoryLines``, the files of a slice per task); else read by Spark's text source and
    parsed by ``parse_lines``: sending the lines through Python (``createDataFrame``) took a third
    of an ingest."""
    from checkers import udfs

    files = {str(Path(d) / "history.jsonl"): r for d, r in runs.items()}  # each one there (rows_for_run)
    # Read as few tasks as keep every core busy at about 128 MB each: each task writes a file per
    # (test, date) it read, and a Parquet file's fixed cost made 1,000 small runs (70 MB) over
    # Spark's 36 read tasks twice as slow to write as one shuffle into a file per partition.
    sizes = {f: Path(f).stat().st_size for f in files}
    tasks = max(spark.sparkContext.defaultParallelism, math.ceil(sum(sizes.values()) / 2**27))
    if udfs.jar_loaded(spark):
        return _lines_in_jvm(spark, files, sizes, tasks, batch)
    return _lines_by_spark(spark, files, tasks, batch)


def _lines_in_jvm(spark: SparkSession, files: dict[str, CheckRow], sizes: dict[str, int], tasks: int,
                  batch: str) -> DataFrame:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    # a (test, date)'s files together: a task then writes few Parquet files
    order = sorted(files, key=lambda f: (files[f].test, files[f].date, f))
    slices = contiguous_slices([sizes[f] for f in order], tasks)
    raw = DataFrame(spark._jvm.zkfence.HistoryLines.read(
        spark._jsparkSession, order, [files[f].run_dir for f in order], [files[f].test for f in order],
        [files[f].date for f in order], slices), spark)
    return _typed(raw.select("run_dir", "test", "date", F.lit(batch).alias("batch"),
                             F.col("line").cast("string").alias("line"), *ENVELOPE, *OF_VALUE), list(LINES), F.col)


def contiguous_slices(sizes: list[int], tasks: int) -> list[int]:
    """Each item's slice (0 ..< at most ``tasks``), in order, so that consecutive items share a slice
    and the slices' sums of ``sizes`` are about even: item i goes to the slice its middle byte falls in."""
    total = sum(sizes)
    if total == 0:
        return [0] * len(sizes)
    out, before = [], 0
    for size in sizes:
        out.append(min(tasks - 1, (2 * before + size) * tasks // (2 * total)))
        before += size
    return out


def _lines_by_spark(spark: SparkSession, files: dict[str, CheckRow], tasks: int, batch: str) -> DataFrame:
    from pyspark.sql import functions as F

    text = spark.read.text(literal_paths(files))  # listed in the driver (get_spark's discovery threshold)
    # each file's rows joined on its URI, as Spark names it: no path decoded per line
    uris = {path: uri for uri, path in source_files(text).items()}
    if unlisted := sorted(set(files) - set(uris)):
        raise RuntimeError(f"harness analyze: Spark's listing of the histories lacks {unlisted[0]}")
    which = spark.createDataFrame([(uris[f], r.run_dir, r.test, r.date) for f, r in files.items()],
                                  "file string, run_dir string, test string, date string")
    lines = (text.coalesce(tasks).select(F.input_file_name().alias("file"), F.col("value").alias("line"))
             .filter(F.trim("line") != ""))
    return parse_lines(lines.join(F.broadcast(which), "file").select(
        "run_dir", "test", "date", F.lit(batch).alias("batch"), "line"))


def _move_parts(src: Path, dest: Path, batch: str) -> int:
    moved = 0
    for part in sorted(src.rglob("*.parquet")):
        dest_dir = dest / part.parent.relative_to(src)
        dest_dir.mkdir(parents=True, exist_ok=True)
        part.replace(dest_dir / f"part-{batch}-{moved:05d}.parquet")
        moved += 1
    return moved
