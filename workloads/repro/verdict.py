"""Run the scenario's checkers over a recorded history and return a composed result.

Registration checks (``registration-epochs``, ``registration-liveness``) are
``checkers.registration.check_rows``: run locally on rows extracted exactly as that module's Spark
loader extracts them (``--spark`` runs the Spark loader instead). The epoch-fencing invariants
(``bounce_handling``, ``control_request_epochs``, ``isr_expansion``, ...) run on Spark through
``checkers.project.fencing_results``: one implementation per invariant, shared with ``harness check``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from checkers.result import compose

REGISTRATION = ("registration-epochs", "registration-liveness")
_LONGS = ("epoch", "czxid", "owner", "session_id", "session_timeout_ms")
_TEXTS = ("exists", "final", "phase", "stage", "state", "live_brokers", "margin_ms", "reason")


def _long(x: Any) -> int | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def _text(x: Any) -> str | None:
    """What Spark's get_json_object returns: JSON text for containers and booleans, raw strings."""
    if x is None:
        return None
    if isinstance(x, str):
        return x
    return json.dumps(x)


def registration_rows(history: Path) -> list[dict[str, Any]]:
    """The rows ``checkers.registration.load_relevant`` extracts, without Spark."""
    from checkers.registration import RELEVANT

    rows = []
    with open(history, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            d = json.loads(line)
            if d.get("f") not in RELEVANT:
                continue
            v = d.get("value") or {}
            broker = _long(v.get("broker_id"))
            if broker is None:
                broker = _long(d.get("process"))
            row = {"id": d["id"], "src": d["src"], "seq": d["seq"], "t_wall": d["t_wall"], "type": d["type"],
                   "f": d["f"], "broker": broker}
            row.update({k: _long(v.get(k)) for k in _LONGS})
            row.update({k: _text(v.get(k)) for k in _TEXTS})
            rows.append(row)
    return rows


def evaluate(session: Any, scenario: Any, history: Path) -> dict[str, Any]:
    from checkers.registration import check, check_rows

    named: dict[str, Any] = {}
    wanted = list(scenario.checkers)
    if any(c in REGISTRATION for c in wanted) or not wanted:
        if session.use_spark:
            reg = check(session.spark(), [str(history)], margin_ms=scenario.margin_ms)
        else:
            reg = check_rows(registration_rows(history), margin_ms=scenario.margin_ms)
        for name, sub in reg["checkers"].items():
            named[name] = {**sub, "anomalies": [a for a in reg["anomalies"] if a.get("checker") == name]}
    fencing = [c for c in wanted if c not in REGISTRATION]
    if fencing:
        from checkers import events_df
        from checkers.project import fencing_results

        spark = session.spark()
        ev = events_df.load_events(spark, [str(history)])
        try:
            named.update(fencing_results(ev, [str(history)], fencing)[str(history)])
        finally:
            ev.unpersist()
    return compose(named, history=str(history))
