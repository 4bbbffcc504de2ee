"""Checker results: plain dicts so they serialise straight to JSON.

A result is ``{"valid": True | False | "unknown", "anomalies": [...], "stats": {...}}``. An
anomaly is a dict with at least ``checker``, ``message`` and ``event_ids`` (``"<src>/<seq>"``
ids that prove it), plus whatever key fields locate it (``broker``, ``partition``...).
Composition ranks ``False`` over ``"unknown"`` over ``True``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

UNKNOWN = "unknown"
Valid = bool | str  # True | False | "unknown"
Result = dict[str, Any]

_RANK = {True: 0, UNKNOWN: 1, False: 2}


def anomaly(checker: str, message: str, event_ids: Iterable[str] = (), **keys: Any) -> dict[str, Any]:
    return {"checker": checker, "message": message, "event_ids": [str(e) for e in event_ids], **keys}


def result(valid: Valid | None = None, anomalies: Iterable[dict[str, Any]] = (), **stats: Any) -> Result:
    """Build a result; ``valid`` defaults to True when there are no anomalies, else False."""
    an = list(anomalies)
    if valid is None:
        valid = not an
    if valid not in _RANK:
        raise ValueError(f"valid must be True, False or 'unknown', not {valid!r}")
    return {"valid": valid, "anomalies": an, "stats": dict(stats)}


def worst(*valids: Valid) -> Valid:
    """Combine verdicts: any False → False, else any unknown → unknown, else True."""
    out: Valid = True
    for v in valids:
        if _RANK[v] > _RANK[out]:
            out = v
    return out


def compose(results: dict[str, Result] | Iterable[Result], **stats: Any) -> Result:
    """Merge named (or unnamed) results: worst verdict, all anomalies, per-checker sub-results."""
    if isinstance(results, dict):
        named = results
    else:
        named = {str(i): r for i, r in enumerate(results)}
    valid = worst(*(r["valid"] for r in named.values()))
    an = [a for r in named.values() for a in r.get("anomalies", [])]
    out = {"valid": valid, "anomalies": an, "stats": dict(stats)}
    out["checkers"] = {k: {"valid": r["valid"], "stats": r.get("stats", {})} for k, r in named.items()}
    return out
