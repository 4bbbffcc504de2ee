"""Build the Porcupine reference checker (``bench/porcupine``, Go) for the benches that compare with it.

Each call builds into its own temporary directory, so two benches (or two clones of this
project on one machine) never overwrite each other's binary while one of them runs it. The
module comes from the Go module proxy, checked against the committed ``go.sum``.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

GO_DIR = Path(__file__).resolve().parent / "porcupine"


def build(into: str | Path | None = None) -> Path:
    """``go build`` bench/porcupine; returns the binary's path (under ``into``, else a new temp dir
    the caller removes, e.g. ``shutil.rmtree(path.parent)``)."""
    out = Path(into) if into is not None else Path(tempfile.mkdtemp(prefix="zkfence-porcupine-"))
    binary = out / "porcupine"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=GO_DIR, check=True)
    return binary
