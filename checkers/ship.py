"""Ship the project's code to a real Spark cluster's executors.

Executors on a standalone (or YARN, Kubernetes…) cluster do not have this project installed: the
functions the checkers hand to Spark (``rdd.flatMap(...)``, ``mapPartitions(...)``) are pickled by
reference to their modules, so every executor must be able to import ``checkers`` and what it
imports. ``ship(spark)`` zips those modules once per process (named by a hash of their contents)
and adds the zip with ``SparkContext.addPyFile``; a ``local[...]`` master shares the driver's
interpreter and gets nothing. The zip holds the checkers and what they import below them, nothing
of the control node (``harness``, ``nemesis``, ``workloads``, ``scenarios``) nor of the brokers'
code: ``tests/unit/test_executor_zip.py`` holds ``SHIPPED`` equal to the checkers' imports and
imports every checker from the zip alone.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# What executor-side code imports, as paths under ROOT (a package: all of its modules): the checkers
# (the functions handed to Spark), history (the event record) and the two modules of the base layer
# the checkers import (the error types, the scratch-directory ownership). Their own third-party
# imports are pyspark's and the standard library's.
SHIPPED = ("checkers", "history", "base/__init__.py", "base/errors.py", "base/localstate.py")
ROOT = Path(__file__).resolve().parent.parent


def needs_shipping(master: str) -> bool:
    return not master.startswith("local")


def package_files(root: Path = ROOT, shipped: tuple[str, ...] = SHIPPED) -> list[Path]:
    """Every ``.py`` file ``shipped`` names (a module, or a package's modules), sorted (so the zip's
    hash is stable)."""
    files: set[Path] = set()
    for entry in shipped:
        path = root / entry
        files |= {path} if path.suffix == ".py" else \
            {p for p in path.rglob("*.py") if "__pycache__" not in p.relative_to(root).parts}
    return sorted(files)


def content_digest(files: list[Path], root: Path, salt: bytes = b"") -> str:
    """A short digest of ``files``' paths relative to ``root`` and their bytes (and ``salt``): the name
    of an artifact built from them, so that a change to any builds a new one."""
    digest = hashlib.sha256(salt)
    for f in files:
        digest.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_zip(out_dir: Path, root: Path = ROOT, shipped: tuple[str, ...] = SHIPPED) -> Path:
    """Write ``zkfence-<hash>.zip`` (paths relative to ``root``) into ``out_dir``; reuse it if present."""
    files = package_files(root, shipped)
    target = out_dir / f"zkfence-{content_digest(files, root)}.zip"
    if target.exists():
        return target
    tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")  # concurrent builders
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            z.write(f, str(f.relative_to(root)))
    tmp.replace(target)
    return target


def ship(spark: SparkSession) -> Path | None:
    """Add the checkers' code to ``spark``'s executors unless its master is local."""
    sc = spark.sparkContext
    if not needs_shipping(sc.master):
        return None
    out = Path(tempfile.gettempdir()) / "zkfence-pyfiles"
    out.mkdir(parents=True, exist_ok=True)
    path = build_zip(out)
    sc.addPyFile(str(path))
    return path
