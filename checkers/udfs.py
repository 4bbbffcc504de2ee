"""The project's JVM functions: Java sources under ``checkers/java/`` compiled into one jar that every session
gets (``spark.jars``: a cluster's executors fetch it from the driver) and whose functions ``register`` adds to
the session by name.

Only a speed-up: a function stands for Spark expressions that give the same values (``zkfence.EventFields``
for the ``from_json`` of every history line ``harness analyze`` ingests, 2-3x faster; bench/RESULTS.md;
``zkfence.Slots``, the leaf that lets a small check's plans be built once per process, checkers/plans.py), and
a session without the jar (no ``javac`` to build it, or ``HARNESS_SPARK_UDFS=off``) runs those expressions
instead. ``zkfence.RefOps`` parses and pairs reference histories on the executors for the WGL checker
(checkers/ref_ops.py), and ``zkfence.RefSearch`` searches kv histories there too (checkers/ref_jvm.py);
without the jar the driver parses them (checkers/parsers.py), into the same ops, and the Python search checks
them. ``zkfence.HistoryLines`` reads and parses the history lines ``harness analyze`` ingests in the tasks
that read their files (harness/analysis/dataset.py), and ``zkfence.RunPairs`` walks each run's events for its
tables' two pairings (harness/analysis/tables.py); without the jar Spark's text source reads them and two
windows pair them.
``zkfence.QueueWalk`` walks the queue checkers' partitions (checkers/queue_pass.py); without it, Python
workers do. ``make install`` builds the jar (``python -m checkers.udfs``); a session builds it on first use
when it is missing. Its name carries a digest of the sources and of pyspark's version, so a change to either
builds a new one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SOURCES = Path(__file__).with_name("java")
DIR_ENV = "HARNESS_JAR_DIR"  # where jars live (default: inside this Python environment)
OFF_ENV = "HARNESS_SPARK_UDFS"  # "off": sessions without the jar (the expressions it stands for)
EVENT_FIELDS = "zkfence_event_fields"
# The fields of EventFields' struct, in its order: its FIELDS (a line's envelope), then its OF_VALUE
# (``value``'s, given for the nemesis's lines only); harness analyze's dataset keeps these columns.
ENVELOPE = ("src", "seq", "f", "type", "t_wall", "t_mono", "process")
OF_VALUE = ("stage", "phase", "instant", "reason", "noop", "ended")
_FUNCTIONS = {EVENT_FIELDS: ("zkfence.EventFields",
                             "struct<" + ",".join(f"{n}:string" for n in (*ENVELOPE, *OF_VALUE)) + ">")}
_PREFIX = "zkfence-udfs-"
_warned = threading.Event()


def jar_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or Path(sys.prefix) / "zkfence-jars")


def sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def jar_path() -> Path:
    import pyspark

    from checkers.ship import content_digest

    return jar_dir() / f"{_PREFIX}{content_digest(sources(), SOURCES, pyspark.__version__.encode())}.jar"


def javac() -> Path | None:
    from checkers.cds import jdk_tool

    return jdk_tool("javac")


def build(timeout_s: float = 300.0) -> Path:
    """Compile the sources against pyspark's jars into the jar for them; its path. Concurrent
    builders each write their own file and rename it into place (the same bytes). Raises
    ``RuntimeError`` saying what failed."""
    import pyspark

    target, compiler = jar_path(), javac()
    if compiler is None:
        raise RuntimeError("no javac ($JAVA_HOME/bin/javac or javac on PATH)")
    target.parent.mkdir(parents=True, exist_ok=True)
    classpath = str(Path(pyspark.__file__).parent / "jars" / "*")
    from base.localstate import JAVAC_PREFIX, owned_tempdir

    with owned_tempdir(JAVAC_PREFIX) as classes:
        p = subprocess.run([str(compiler), "--release", "17", "-nowarn", "-cp", classpath, "-d", classes,
                            *map(str, sources())], capture_output=True, text=True, timeout=timeout_s)
        if p.returncode != 0:
            raise RuntimeError(f"javac exited {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
        part = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
                for f in sorted(Path(classes).rglob("*.class")):
                    z.write(f, str(f.relative_to(classes)))
            part.replace(target)
        finally:
            part.unlink(missing_ok=True)
    for old in target.parent.glob(f"{_PREFIX}*.jar"):  # jars of former sources or a former pyspark
        if old != target:
            old.unlink(missing_ok=True)
    return target


def jar() -> Path | None:
    """The jar for these sources, built if missing; None when switched off, or (said once on stderr)
    when it cannot be built."""
    if os.environ.get(OFF_ENV, "").lower() == "off":
        return None
    target = jar_path()
    if target.is_file():
        return target
    try:
        return build()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        if not _warned.is_set():
            _warned.set()
            print(f"harness: the JVM functions are not built ({e}); Spark sessions run the slower "
                  "expressions they stand for", file=sys.stderr)
        return None


def register(spark: SparkSession) -> None:
    """Add the functions to ``spark`` by name (its session was started with the jar)."""
    for name, (cls, return_type) in _FUNCTIONS.items():
        spark.udf.registerJavaFunction(name, cls, return_type)


def registered(spark: SparkSession, name: str) -> bool:
    return bool(spark.catalog.functionExists(name))


def jar_loaded(spark: SparkSession) -> bool:
    """The session was started with the jar (``get_spark`` registers its functions then): its classes,
    ``zkfence.Slots`` among them, are there."""
    return registered(spark, EVENT_FIELDS)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args:
        print(f"python -m checkers.udfs: unknown argument {args[0]!r} (none: build the jar if missing)",
              file=sys.stderr)
        return 254
    if jar_path().is_file():  # make install's call: quiet when the jar for these sources exists
        return 0
    path = jar()
    if path is None:
        return 1
    print(f"JVM functions for Spark: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
