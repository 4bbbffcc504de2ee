"""The Parquet dataset of checked runs: ``<out>/checks/test=<t>/date=<d>/part-*.parquet``.

Incremental: runs whose directory is already in the dataset are skipped. Safe to interrupt: a
batch is written by Spark under ``<out>/_staging-<id>/`` (ignored by readers, names starting with
``_``), one file per (test, date) partition, and each file is then moved into place with an atomic
rename; a run's rows live in exactly one file, so a run is in the dataset entirely or not at all.
"""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.analysis.runs import CheckRow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CHECKS = "checks"
SCHEMA = ("run_dir string, run_id string, test string, date string, seed long, workload string, "
          "inventory string, zk_version string, toggles string, faults string, run_valid string, "
          "events long, checker string, valid string, anomalies long")


def read_checks(spark: SparkSession, out: Path) -> DataFrame | None:
    root = out / CHECKS
    if not root.exists() or not any(root.rglob("*.parquet")):
        return None
    return spark.read.schema(SCHEMA).parquet(str(root))


def ingested_dirs(spark: SparkSession, out: Path) -> set[str]:
    df = read_checks(spark, out)
    return set() if df is None else {r[0] for r in df.select("run_dir").distinct().collect()}


def append(spark: SparkSession, out: Path, rows: list[CheckRow]) -> int:
    """Append ``rows`` (whole runs) to the dataset; returns the number of part files moved in."""
    if not rows:
        return 0
    batch = uuid.uuid4().hex[:12]
    staging = out / f"_staging-{batch}"
    data: list[dict[str, Any]] = [dataclasses.asdict(r) for r in rows]
    df = spark.createDataFrame(data, SCHEMA)
    df.repartition("test", "date").write.mode("overwrite").partitionBy("test", "date").parquet(str(staging))
    moved = 0
    for part in sorted(staging.rglob("*.parquet")):
        rel = part.parent.relative_to(staging)
        dest_dir = out / CHECKS / rel
        dest_dir.mkdir(parents=True, exist_ok=True)
        part.replace(dest_dir / f"part-{batch}-{moved:05d}.parquet")
        moved += 1
    shutil.rmtree(staging, ignore_errors=True)
    return moved
