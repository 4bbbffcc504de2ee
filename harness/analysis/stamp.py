"""The tables as last computed, and the dataset and code they were computed from: ``<out>/tables.json``.

A call of ``harness analyze`` that finds nothing new to ingest, over a dataset whose part files are
exactly those the tables were computed from, by the same table code, prints the saved tables and
starts no Spark at all. Anything else (a part file added, removed or rewritten, an interrupted
batch's files, another version of the analysis code, a table output gone from ``out``, a missing
or unreadable stamp) computes the tables on Spark again. The stamp is written after the tables,
atomically, so a crash leaves the old stamp, whose dataset no longer matches.

Pure: reads and writes files, no Spark.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.analysis.dataset import CHECKS, EVENTS
from harness.analysis.pairing import Flaky, LatencyRow, Rate, RecoveryRow

if TYPE_CHECKING:
    from harness.analysis.tables import Table

STAMP = "tables.json"
_KINDS = {k.__name__: k for k in (Rate, RecoveryRow, LatencyRow, Flaky)}
# the code the tables depend on: a change to any of these recomputes them
_CODE = ("pairing.py", "tables.py", "dataset.py", "runs.py", "job.py")


@dataclass(frozen=True)
class Saved:
    runs: frozenset[str]  # run directories in the dataset the tables were computed from
    tables: list[Table]


def fingerprint(out: Path) -> str:
    """The dataset's part files (path, size, mtime) and the analysis code, as one digest."""
    h = hashlib.sha256()
    for name in (CHECKS, EVENTS):
        root = out / name
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
            for fn in sorted(f for f in filenames if not f.startswith(("_", "."))):
                p = Path(dirpath) / fn
                st = p.stat()
                h.update(f"{p.relative_to(out).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    here = Path(__file__).resolve().parent
    for fn in _CODE:
        h.update(hashlib.sha256((here / fn).read_bytes()).digest())
    return h.hexdigest()


def save(out: Path, runs: set[str], tables: list[Table]) -> None:
    doc = {"fingerprint": fingerprint(out), "runs": sorted(runs),
           "tables": [{"name": t.name, "title": t.title, "kind": t.kind.__name__,
                       "rows": [dataclasses.asdict(r) for r in t.rows]} for t in tables]}
    tmp = out / f".{STAMP}.part"
    tmp.write_text(json.dumps(doc))
    tmp.replace(out / STAMP)


def load(out: Path, page: str) -> Saved | None:
    """The saved tables if they still describe ``out``'s dataset and their outputs (each table's
    CSV and Parquet, the ``page``) are all in ``out``; else None (compute them again)."""
    from harness.analysis.tables import Table

    try:
        doc: dict[str, Any] = json.loads((out / STAMP).read_text())
        outputs = [page, *(f"{t['name']}.{ext}" for t in doc["tables"] for ext in ("csv", "parquet"))]
        if doc["fingerprint"] != fingerprint(out) or not all((out / o).exists() for o in outputs):
            return None
        tables = [Table(t["name"], t["title"], [_KINDS[t["kind"]](**r) for r in t["rows"]], _KINDS[t["kind"]])
                  for t in doc["tables"]]
        return Saved(frozenset(doc["runs"]), tables)
    except (OSError, ValueError, KeyError, TypeError):
        return None
