"""The children of ``harness.cds.build``: ``--dump`` loads what a check and an ingest load in a session
whose JVM dumps its classes at exit; ``--verify`` starts a session that must map the archive. Apart
from ``harness.cds`` because each runs in a process of its own (``python -m harness.cds_train``),
whose JVM's classes are the archive."""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession


def _dump(trained: bool = True) -> int:
    """The dumping child: load what a check and an analysis load, then let the JVM exit and dump.
    Untrained (``--untrained``): a bare session's classes only, the same dump, verify and move in a
    fraction of the time (the test of the build's mechanics; ``make install`` builds the trained one)."""
    from checkers.spark import get_spark

    spark = get_spark("local[2]")
    if trained:
        from checkers.project import warm_up
        from harness.analysis import job

        warm_up(spark)
        job.warm_up(spark, runs=2, lines=1_000)  # the whole `harness analyze` job: ingest, tables, CSV, Parquet
    else:
        spark.range(10).count()
    return _exit_jvm(spark)


def _verify() -> int:
    from checkers.spark import get_spark

    spark = get_spark("local[1]")
    spark.range(10).count()
    return _exit_jvm(spark)


def _exit_jvm(spark: SparkSession) -> int:
    """Stop the session and wait for the JVM to exit: the dump is written on its way out."""
    proc = spark.sparkContext._gateway.proc  # type: ignore[attr-defined]  # pyspark's Popen of the JVM
    spark.stop()
    proc.stdin.close()  # the gateway exits on EOF of its stdin
    return proc.wait(timeout=300)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--dump"], ["--dump", "--untrained"]):
        return _dump(trained="--untrained" not in args)
    if args == ["--verify"]:
        return _verify()
    print("python -m harness.cds_train: --dump or --verify (run by python -m harness.cds)", file=sys.stderr)
    return 254


if __name__ == "__main__":
    raise SystemExit(main())
