"""A warm SparkSession for the Spark benches: started, one job run, and its start-up time printed,
so the figures that follow exclude JVM start and first-job planning."""

from __future__ import annotations

import time
from typing import Any


def warm_spark() -> Any:
    from checkers.spark import get_spark

    t0 = time.monotonic()
    spark = get_spark()
    spark.range(1).count()
    sc = spark.sparkContext
    print(f"SparkSession up in {time.monotonic() - t0:.1f} s ({sc.master}, {sc.defaultParallelism} cores); "
          "timings below exclude it", flush=True)
    return spark
