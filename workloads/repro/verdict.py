"""Run the scenario's checkers over a recorded history and return a composed result.

Registration checks (``registration-epochs``, ``registration-liveness``) are
``checkers.registration.check_rows``: run locally on rows extracted exactly as that module's Spark
loader extracts them (``--spark`` runs the Spark loader instead). The epoch-fencing invariants
(``bounce_handling``, ``control_request_epochs``, ``isr_expansion``, ...) run on Spark through
``checkers.project.fencing_results``: one implementation per invariant, shared with ``harness check``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checkers.result import compose

REGISTRATION = ("registration-epochs", "registration-liveness")


def evaluate(session: Any, scenario: Any, history: Path) -> dict[str, Any]:
    from checkers.registration import check, check_rows, rows_from_history

    named: dict[str, Any] = {}
    wanted = list(scenario.checkers)
    if any(c in REGISTRATION for c in wanted) or not wanted:
        if session.use_spark:
            reg = check(session.spark(), [str(history)], margin_ms=scenario.margin_ms)
        else:
            reg = check_rows(rows_from_history(str(history)), margin_ms=scenario.margin_ms)
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
