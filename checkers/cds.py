"""The Spark driver's class-data-sharing archive (Java's dynamic AppCDS): the classes a driver JVM
loads, stored once in a file it maps at start, instead of read, parsed and verified from Spark's
jars again by every process. A session then starts in about 2 s instead of 4, and its first jobs
load their classes faster (bench/RESULTS.md has the figures).

Here: where the archive is and which options a driver JVM gets for it. ``harness.cds`` builds it
(``make install``: ``python -m harness.cds --if-missing``) by running the warm-up of the check and
of ``harness analyze``, which this layer does not import. The
name carries a digest of the Java binary, of pyspark's jars and of the warm-up history: after any
of them changes, sessions start without an archive until the next ``make install`` builds theirs.
``HARNESS_SPARK_CDS=off`` starts them without one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

OFF_ENV = "HARNESS_SPARK_CDS"
DIR_ENV = "HARNESS_SPARK_CDS_DIR"  # where archives live (default: inside this Python environment)
DUMP_ENV = "_HARNESS_SPARK_CDS_DUMP"  # set for the building child: dump the classes here at exit
VERIFY_ENV = "_HARNESS_SPARK_CDS_VERIFY"  # set for the verifying child: map this one, or fail
ARCHIVE_PREFIX = "driver-"
# The warm-up history (checkers.project.WARM_UP_HISTORY is this path: defined here because this module
# imports nothing of the project's): the classes the archive holds are those this history's check and
# analysis load, so a new history means a new archive
TRAINED_ON = Path(__file__).with_name("warm_up.jsonl")


def archive_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or Path(sys.prefix) / "spark-cds")


def jdk_tool(name: str) -> Path | None:
    """A JDK program as spark-submit finds java: ``$JAVA_HOME/bin/<name>``, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / name) if home else shutil.which(name)
    return Path(os.path.realpath(found)) if found and Path(found).is_file() else None


def java_binary() -> Path | None:
    """The java that spark-submit runs."""
    return jdk_tool("java")


def archive_path() -> Path | None:
    """Where the archive for this Java and this pyspark lives (None: no java to key it on)."""
    import pyspark

    java = java_binary()
    if java is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    st = java.stat()
    warm = hashlib.sha256(TRAINED_ON.read_bytes()).hexdigest()
    key = (f"{java}:{st.st_size}:{st.st_mtime_ns}:{pyspark.__version__}:{jars}:"
           f"{jars.stat().st_mtime_ns if jars.exists() else 0}:{warm}")
    return archive_dir() / f"{ARCHIVE_PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def jvm_options() -> str:
    """The driver JVM's options for the archive: map it if built (a JVM that finds it does not
    match starts without it, silently), dump one while building, or nothing."""
    if dump := os.environ.get(DUMP_ENV):
        return f"-XX:ArchiveClassesAtExit={dump}"
    if verify := os.environ.get(VERIFY_ENV):
        return f"-XX:SharedArchiveFile={verify} -Xshare:on"
    if os.environ.get(OFF_ENV, "").lower() == "off":
        return ""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} -Xlog:cds=off,cds+dynamic=off" if path and path.is_file() else ""
