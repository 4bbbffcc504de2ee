"""Worked example (docs/architecture.md, "Adding a checker"): ``leader_in_isr``, a partition's
leader is in its ISR at every recorded state. One module (this checker) plus one registry line
(``LEADER_IN_ISR,`` in ``checkers.project.make_checkers``). tests/unit/test_worked_examples.py
registers it and checks a history that breaks it and one that holds, without Spark.
"""

from __future__ import annotations

from typing import Any

from checkers.checker import Events
from checkers.result import Result, anomaly, result


class LeaderInIsr:
    """Plain Python over the rows it reads: locally the loader's rows, on Spark the same rows
    collected (a run's partition states are few)."""

    name = "leader_in_isr"
    reads = {"partition_state": ("isr", "leader", "partition", "topic")}
    local = True

    def check(self, events: Events) -> dict[str, Result]:
        rows: list[dict[str, Any]] = events.rows_of(self.reads) if events.rows is not None else [
            r.asDict() for r in events.frame.filter(events.frame.f.isin(list(self.reads))).collect()]  # type: ignore[union-attr]
        bad: dict[str, list[dict[str, Any]]] = {p: [] for p in events.paths}
        for r in rows:
            if r["v_leader"] not in (None, -1) and r["v_leader"] not in (r["v_isr"] or []):
                bad[r["hist"]].append(anomaly(self.name, f"{r['v_topic']}-{r['v_partition']} leader {r['v_leader']} "
                                                         f"not in ISR {r['v_isr']}", [r["id"]]))
        return {p: result(anomalies=bad[p]) for p in events.paths}


LEADER_IN_ISR = LeaderInIsr()
