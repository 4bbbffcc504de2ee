"""The Spark driver's class-data-sharing archive (Java's dynamic AppCDS): the classes a driver JVM
loads, stored once in a file it maps at start, instead of read, parsed and verified from Spark's
jars again by every process. A session then starts in about 2 s instead of 4, and its first jobs
load their classes faster (bench/RESULTS.md has the figures).

``make install`` builds it when this Java's and pyspark's is missing (``python -m checkers.cds
--if-missing``; without the flag it is rebuilt): a child process starts a session that dumps
its classes at exit, checks the built-in warm-up history and runs analyze's ingest path on it, and
stops; a second child proves the archive maps (``-Xshare:on`` fails the JVM's start otherwise); only
then is it moved into place, by one rename, because a JVM given a truncated archive crashes. The
name carries a digest of the Java binary, of pyspark's jars and of the warm-up history: after any
of them changes, sessions start without an archive until the next ``make install`` builds theirs.
``HARNESS_SPARK_CDS=off`` starts them without one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

OFF_ENV = "HARNESS_SPARK_CDS"
DIR_ENV = "HARNESS_SPARK_CDS_DIR"  # where archives live (default: inside this Python environment)
_DUMP_ENV = "_HARNESS_SPARK_CDS_DUMP"  # set for the building child: dump the classes here at exit
_VERIFY_ENV = "_HARNESS_SPARK_CDS_VERIFY"  # set for the verifying child: map this one, or fail
_PREFIX = "driver-"
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
    return archive_dir() / f"{_PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def jvm_options() -> str:
    """The driver JVM's options for the archive: map it if built (a JVM that finds it does not
    match starts without it, silently), dump one while building, or nothing."""
    if dump := os.environ.get(_DUMP_ENV):
        return f"-XX:ArchiveClassesAtExit={dump}"
    if verify := os.environ.get(_VERIFY_ENV):
        return f"-XX:SharedArchiveFile={verify} -Xshare:on"
    if os.environ.get(OFF_ENV, "").lower() == "off":
        return ""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} -Xlog:cds=off,cds+dynamic=off" if path and path.is_file() else ""


def build(timeout_s: float = 600.0) -> Path:
    """Build the archive for this Java and pyspark and move it into place; its path. Raises
    ``RuntimeError`` naming the step that failed (nothing is left behind)."""
    target = archive_path()
    if target is None:
        raise RuntimeError("no java binary ($JAVA_HOME/bin/java or java on PATH)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".building-{os.getpid()}.jsa"
    try:
        for step, env in (("dump", {_DUMP_ENV: str(tmp)}), ("verify", {_VERIFY_ENV: str(tmp)})):
            p = subprocess.run([sys.executable, "-m", "checkers.cds_train", f"--{step}"], env={**os.environ, **env},
                               capture_output=True, text=True, timeout=timeout_s)
            if p.returncode != 0 or not tmp.is_file():
                raise RuntimeError(f"{step} step exited {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
        os.replace(tmp, target)
        for old in target.parent.glob(f"{_PREFIX}*.jsa"):  # archives of a former Java or pyspark
            if old != target:
                old.unlink(missing_ok=True)
        return target
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--if-missing"]:  # make install's call: quick when this Java's and pyspark's archive exists
        path = archive_path()
        if path is not None and path.is_file():
            return 0
    elif args:
        print(f"python -m checkers.cds: unknown argument {args[0]!r} (none: build the archive; --if-missing)",
              file=sys.stderr)
        return 254
    try:
        path = build()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"python -m checkers.cds: no class-data-sharing archive ({e}); Spark sessions start without one",
              file=sys.stderr)
        return 1
    print(f"class-data-sharing archive for the Spark driver: {path} ({path.stat().st_size / 2**20:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
