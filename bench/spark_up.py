"""A warm SparkSession for the Spark benches: started, one job run, and its start-up time printed,
so the figures that follow exclude JVM start and first-job planning; and what its JVM spent."""

from __future__ import annotations

import os
import time
from pathlib import Path
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


def jvm_cpu(spark: object) -> float:
    """CPU seconds (user + system, its threads and reaped children) the session's JVM has used: the
    figure that load from other processes inflates least."""
    pid = spark.sparkContext._gateway.proc.pid  # type: ignore[attr-defined]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def jvm_account(spark: Any) -> dict[str, float]:
    """What the session's JVM has spent so far: CPU seconds (``jvm_cpu``), of which compiling Java
    to machine code (the JIT's threads; HotSpot's CompilationMXBean) and collecting garbage (every
    collector's MXBean), and how many classes Spark generated and compiled with Janino."""
    jvm = spark.sparkContext._jvm
    mx = jvm.java.lang.management.ManagementFactory
    codegen = getattr(getattr(jvm.org.apache.spark.metrics.source, "CodegenMetrics$"), "MODULE$")
    return {"cpu": jvm_cpu(spark), "jit": mx.getCompilationMXBean().getTotalCompilationTime() / 1e3,
            "gc": sum(b.getCollectionTime() for b in mx.getGarbageCollectorMXBeans()) / 1e3,
            "janino": codegen.METRIC_COMPILATION_TIME().getCount()}


def spent(before: dict[str, float], after: dict[str, float]) -> str:
    """``jvm_account`` between two readings, as printed."""
    d = {k: after[k] - before[k] for k in after}
    return (f"JVM CPU {d['cpu']:.1f} s, of which JIT compiling {d['jit']:.1f} s and GC {d['gc']:.1f} s; "
            f"{d['janino']:.0f} classes generated")
