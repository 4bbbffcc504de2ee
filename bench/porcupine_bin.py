"""Build the Porcupine reference checker (``bench/porcupine``, Go) for the benches that compare with it.

Each call builds into its own scratch directory (``base.localstate.bench_scratch``), so two
benches (or two clones of this project on one machine) never overwrite each other's binary while
one of them runs it, and ``harness teardown`` stops a check still running from the directory of a
bench killed outright and removes it. The
module comes from the Go module proxy, checked against the committed ``go.sum``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from base.localstate import bench_scratch  # the bench that imports this puts the project on sys.path

GO_DIR = Path(__file__).resolve().parent / "porcupine"


def build(into: str | Path | None = None) -> Path:
    """``go build`` bench/porcupine; returns the binary's path (under ``into``, else a new bench
    scratch dir the caller removes, e.g. ``shutil.rmtree(path.parent)``)."""
    out = Path(into) if into is not None else bench_scratch()
    binary = out / "porcupine"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=GO_DIR, check=True)
    return binary
