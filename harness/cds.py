"""Build the Spark driver's class-data-sharing archive (``checkers.cds`` says where it lives and how a
driver maps it).

``make install`` builds it when this Java's and pyspark's is missing (``python -m harness.cds
--if-missing``; without the flag it is rebuilt): a child process (``harness.cds_train``) starts a
session that dumps its classes at exit, checks the built-in warm-up history and runs analyze's
ingest path on it, and stops; a second child proves the archive maps (``-Xshare:on`` fails the
JVM's start otherwise); only then is it moved into place, by one rename, because a JVM given a
truncated archive crashes. On the control node, not with the checkers: the warm-up runs
``harness analyze``'s job, and the checkers shipped to executors never build an archive.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from checkers.cds import ARCHIVE_PREFIX, DUMP_ENV, VERIFY_ENV, archive_path


def build(timeout_s: float = 600.0, trained: bool = True) -> Path:
    """Build the archive for this Java and pyspark and move it into place; its path. Raises
    ``RuntimeError`` naming the step that failed (nothing is left behind). ``trained=False`` dumps a
    bare session's classes (see ``harness.cds_train``)."""
    target = archive_path()
    if target is None:
        raise RuntimeError("no java binary ($JAVA_HOME/bin/java or java on PATH)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".building-{os.getpid()}.jsa"
    try:
        steps = ((["--dump"] if trained else ["--dump", "--untrained"], {DUMP_ENV: str(tmp)}),
                 (["--verify"], {VERIFY_ENV: str(tmp)}))
        for argv, env in steps:
            step = argv[0][2:]
            p = subprocess.run([sys.executable, "-m", "harness.cds_train", *argv], env={**os.environ, **env},
                               capture_output=True, text=True, timeout=timeout_s)
            if p.returncode != 0 or not tmp.is_file():
                raise RuntimeError(f"{step} step exited {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}")
        os.replace(tmp, target)
        for old in target.parent.glob(f"{ARCHIVE_PREFIX}*.jsa"):  # archives of a former Java or pyspark
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
        print(f"python -m harness.cds: unknown argument {args[0]!r} (none: build the archive; --if-missing)",
              file=sys.stderr)
        return 254
    try:
        path = build()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"python -m harness.cds: no class-data-sharing archive ({e}); Spark sessions start without one",
              file=sys.stderr)
        return 1
    print(f"class-data-sharing archive for the Spark driver: {path} ({path.stat().st_size / 2**20:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
