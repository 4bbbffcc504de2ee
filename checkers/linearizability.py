"""Linearizability of many histories at once: parts (history x key) as Spark tasks, or locally.

Each history is split by its model (P-compositionality); all parts of all histories go into ONE
Spark job. Parts are dealt, largest first, into a few groups per core; a task interleaves its
group's searches in slices (like Porcupine's goroutines) so one hopeless part cannot starve an
illegal one. Each part has its own budget (CPU seconds and/or steps) and becomes "unknown",
never valid, when it runs out. Tasks report every part verdict to the driver's result
:class:`~checkers.board.Board` and poll it between slices: the first illegal part of a history
stops that history's other parts everywhere, and once every history is decided the driver
cancels the job group (``SparkContext.cancelJobGroup``) so nothing keeps running.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from checkers.board import Board, BoardClient, run_until_decided
from checkers.models import Model
from checkers.ops import Op
from checkers.result import Result, anomaly, result
from checkers.wgl import UNKNOWN, Part, PartResult, combine, run_parts, split

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHECKER = "linearizability"
History = tuple[str, Sequence[Op], Model]  # (name, ops, model)


def _parts(histories: Sequence[History]) -> tuple[list[Part], dict[str, int]]:
    parts: list[Part] = []
    counts: dict[str, int] = {}
    for name, ops, model in histories:
        ps = split(name, ops, model)
        counts[name] = len(ps)
        parts.extend(ps)
    return parts, counts


def summarise(name: str, model: Model, n_ops: int, n_parts: int, parts: Sequence[dict[str, Any]]) -> Result:
    """One history's result from its part verdicts (dicts as PartResult.to_dict)."""
    valids = [p["valid"] for p in parts]
    verdict = combine(valids)
    if verdict is True and len(parts) < n_parts:
        verdict = UNKNOWN  # a part never reported (job cancelled early): never claim valid
    anomalies = []
    for p in parts:
        if p["valid"] is False:
            key = {} if p["key"] is None else {"key": p["key"]}
            ids = [f"{name}:{line}" for line in p["lines"]]
            anomalies.append(anomaly(CHECKER, p["message"] or "not linearizable", ids, **key))
    unknown = [p["key"] for p in parts if p["valid"] == UNKNOWN]
    if verdict == UNKNOWN and not anomalies:
        msgs = [p["message"] for p in parts if p["valid"] == UNKNOWN]
        anomalies.append(
            anomaly(CHECKER, f"undecided: {msgs[0] if msgs else 'parts did not report'}", [], keys=unknown)
        )
    return result(
        verdict,
        anomalies,
        model=model.name,
        ops=n_ops,
        parts=n_parts,
        parts_checked=len(parts),
        parts_unknown=len(unknown),
        steps=sum(p["steps"] for p in parts),
        cpu_seconds=round(sum(p["seconds"] for p in parts), 4),
    )


def _summarise_all(histories: Sequence[History], counts: dict[str, int], rows: list[dict[str, Any]]) -> dict[str, Result]:
    by: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in histories}
    for r in rows:
        by[r["history"]].append(r)
    return {name: summarise(name, model, len(ops), counts[name], by[name]) for name, ops, model in histories}


def check_local(
    histories: Sequence[History], *, budget_seconds: float | None = 30.0, budget_steps: int | None = None
) -> dict[str, Result]:
    """The pure path: every part in this process, interleaved."""
    parts, counts = _parts(histories)
    t0 = time.monotonic()
    rows = [r.to_dict() for r in run_parts(parts, budget_seconds=budget_seconds, budget_steps=budget_steps)]
    out = _summarise_all(histories, counts, rows)
    for r in out.values():
        r["stats"]["engine"] = "local"
    out_wall = time.monotonic() - t0
    for r in out.values():
        r["stats"]["job_seconds"] = round(out_wall, 4)
    return out


def _deal(parts: list[Part], n_groups: int) -> list[list[Part]]:
    groups: list[list[Part]] = [[] for _ in range(n_groups)]
    for i, p in enumerate(sorted(parts, key=lambda p: -len(p.ops))):
        groups[i % n_groups].append(p)
    return [g for g in groups if g]


def _task(address: Any, budget_seconds: float | None, budget_steps: int | None):  # noqa: ANN202
    def run(groups: Iterator[list[Part]]) -> Iterator[dict[str, Any]]:
        client = BoardClient(address)
        try:
            for group in groups:

                def report(r: PartResult) -> None:
                    client.report(r.to_dict())

                for r in run_parts(
                    group,
                    budget_seconds=budget_seconds,
                    budget_steps=budget_steps,
                    cancelled=client.cancelled,
                    on_result=report,
                ):
                    yield r.to_dict()
        finally:
            client.close()

    return run


def check_spark(
    spark: SparkSession,
    histories: Sequence[History],
    *,
    budget_seconds: float | None = 30.0,
    budget_steps: int | None = None,
    groups_per_core: int = 4,
) -> dict[str, Result]:
    """All parts of all histories in one Spark job; see the module docstring."""
    parts, counts = _parts(histories)
    if not parts:
        return _summarise_all(histories, counts, [])
    sc = spark.sparkContext
    n_groups = max(1, min(len(parts), sc.defaultParallelism * groups_per_core))
    groups = _deal(parts, n_groups)
    host = sc.getConf().get("spark.driver.host", "127.0.0.1")
    board = Board(counts, host=host).start()
    t0 = time.monotonic()
    try:
        outcome = run_until_decided(
            sc, board, "linearizability", f"WGL over {len(parts)} parts",
            lambda: sc.parallelize(groups, len(groups)).mapPartitions(
                _task(board.address, budget_seconds, budget_steps)).collect())
        rows = outcome.get("rows") or board.snapshot()
    finally:
        board.close()
    if "error" in outcome and not outcome.get("cancelled"):
        raise outcome["error"]
    wall = time.monotonic() - t0
    out = _summarise_all(histories, counts, rows)
    for r in out.values():
        r["stats"].update(engine="spark", job_seconds=round(wall, 4), job_cancelled=bool(outcome.get("cancelled")))
    return out


def check_histories(
    histories: Sequence[History],
    spark: SparkSession | None = None,
    *,
    budget_seconds: float | None = 30.0,
    budget_steps: int | None = None,
) -> dict[str, Result]:
    if spark is None:
        return check_local(histories, budget_seconds=budget_seconds, budget_steps=budget_steps)
    return check_spark(spark, histories, budget_seconds=budget_seconds, budget_steps=budget_steps)


__all__ = ["check_histories", "check_local", "check_spark", "summarise"]
