"""Project histories as plain rows, without Spark: the same rows ``checkers.events_df.load`` gives.

A row is a dict with the envelope columns (``checkers.checker.ENVELOPE``) and one ``v_<field>``
per field read, converted the way Spark's PERMISSIVE ``from_json`` converts the contract's type:
a wrong-typed value is None, never an error. Checkers with a local driver run on these when the
caller asks for ``local=True`` (the JIRA reproductions: no Spark start-up for a few hundred events).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from base.errors import UsageError
from checkers.checker import Reads, field_types
from history import HistoryFormatError, Lacking, Need, Scan, scan_lines

_AGENT = re.compile(r"agent:(\d+)")
_LONG = (-(1 << 63), (1 << 63) - 1)


def check_paths(paths: Sequence[str]) -> None:
    """Every history exists and is given once (both loaders)."""
    if len({str(Path(p).resolve()) for p in paths}) != len(paths):
        raise UsageError(f"{paths[0]}: the same history is given twice")
    for p in paths:
        if not Path(p).is_file():
            raise UsageError(f"{p}: no such history")


def load_rows(paths: Sequence[str], reads: Reads, *, skip_damaged: bool = False,
              damaged: dict[str, Scan] | None = None, needs: Sequence[Need] = (),
              lacking: dict[str, list[Lacking]] | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """(rows of the kinds read, events per history), read by the history's validator
    (``history.validate``, as the Spark loader does). A damaged line is a ``UsageError`` naming file
    and line; with ``skip_damaged`` it is left out, and ``damaged`` receives the ``Scan`` of each
    history that had one; ``lacking`` the events of each history without a field of ``needs``."""
    check_paths(paths)
    types = field_types(reads)
    rows: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for p in paths:
        scan = Scan(str(p))
        try:
            for _, rec in scan_lines(p, scan, skip=skip_damaged, needs=needs):
                if rec["f"] in reads:
                    rows.append(row(str(p), rec, types))
        except HistoryFormatError as e:
            raise UsageError(f"{e} (see docs/events.md)") from None
        counts[str(p)] = scan.events
        if scan.damaged_total and damaged is not None:
            damaged[str(p)] = scan
        if scan.lacking and lacking is not None:
            lacking[str(p)] = scan.lacking
    return rows, counts


def row(hist: str, rec: dict[str, Any], types: dict[str, str]) -> dict[str, Any]:
    src, seq = rec["src"], rec["seq"]
    m = _AGENT.fullmatch(src)
    value = rec.get("value") or {}
    out = {
        "hist": hist, "src": src, "seq": seq, "id": convert(rec.get("id"), "STRING") or f"{src}/{seq}",
        "idx": convert(rec.get("index"), "BIGINT"), "t_wall": float(rec["t_wall"]), "type": rec["type"],
        "f": rec["f"], "process": convert(rec.get("process"), "STRING"), "node": convert(int(m.group(1)), "BIGINT") if m else None,
    }
    for name, t in types.items():
        out[f"v_{name}"] = convert(value.get(name), t)
    return out


class _Mismatch(Exception):
    pass


def convert(x: Any, spark_type: str) -> Any:
    """A JSON value as Spark's PERMISSIVE ``from_json`` reads it with ``spark_type``: None when it
    does not fit."""
    try:
        return _convert(x, spark_type.replace(" ", "").upper())
    except _Mismatch:
        return None


def _convert(x: Any, t: str) -> Any:
    if x is None:
        return None
    if t == "STRING":  # Spark keeps a non-string value as its JSON text
        return x if isinstance(x, str) else json.dumps(x, separators=(",", ":"))
    if t == "BIGINT":
        if isinstance(x, int) and not isinstance(x, bool) and _LONG[0] <= x <= _LONG[1]:
            return x
        raise _Mismatch
    if t == "DOUBLE":
        if isinstance(x, int | float) and not isinstance(x, bool):
            return float(x)
        raise _Mismatch
    if t == "BOOLEAN":
        if isinstance(x, bool):
            return x
        raise _Mismatch
    if t.startswith("ARRAY<") and isinstance(x, list):
        return [_convert(e, t[6:-1]) for e in x]
    if t.startswith("MAP<STRING,") and isinstance(x, dict):
        return {k: _convert(v, t[11:-1]) for k, v in x.items()}
    raise _Mismatch
