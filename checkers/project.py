"""Check the project's own histories (history.jsonl): epoch-fencing invariants, the zxid sweep and
the lead's registration checks (``checkers.registration``, when importable), all on one SparkSession.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from checkers import fencing
from checkers.result import Result, anomaly, compose, result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MAX_ANOMALIES_PER_CHECKER = 20


def fencing_results(ev: DataFrame, paths: Sequence[str], names: list[str] | None = None) -> dict[str, dict[str, Result]]:
    """{path: {checker: result}} for the epoch-fencing invariants, collected in one Spark job. A checker
    with anomaly rows is invalid; with only ``verdict="unknown"`` rows it is unknown (reasons in stats)."""
    from pyspark.sql import functions as F

    names = names or list(fencing.CHECKERS)
    an = fencing.all_anomalies(ev, names)
    rows = (
        an.groupBy("hist", "checker", "verdict")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.slice(F.collect_list(F.struct("message", "event_ids", "key")), 1, MAX_ANOMALIES_PER_CHECKER).alias("first"),
        )
        .collect()
    )
    found: dict[tuple[str, str, str], Any] = {(r["hist"], r["checker"], r["verdict"]): r for r in rows}
    out: dict[str, dict[str, Result]] = {}
    for p in paths:
        per: dict[str, Result] = {}
        for name in names:
            bad, unk = found.get((p, name, "invalid")), found.get((p, name, "unknown"))
            unknown_stats: dict[str, Any] = {}
            if unk is not None:  # what the checker could not decide: the reason, never a silent pass
                unknown_stats = {"unknown_total": int(unk["n"]), "unknown_reasons": [
                    {"message": a["message"], "event_ids": list(a["event_ids"] or [])} for a in unk["first"]]}
            if bad is None:
                per[name] = result("unknown" if unk is not None else True, [], anomalies_total=0, **unknown_stats)
                continue
            ans = [anomaly(name, a["message"], a["event_ids"] or [], **json.loads(a["key"] or "{}")) for a in bad["first"]]
            per[name] = result(False, ans, anomalies_total=int(bad["n"]), **unknown_stats)
        out[p] = per
    return out


def _registration(spark: SparkSession, path: str, margin_ms: int | None) -> Result:
    """Registration epochs confirmed by the observer and timed liveness (``checkers.registration``)."""
    from checkers import registration

    margin = registration.DEFAULT_MARGIN_MS if margin_ms is None else margin_ms
    return registration.check(spark, [path], margin_ms=margin)


def check_project_histories(
    spark: SparkSession, paths: Sequence[str], *, parquet: str | None = None, zxid: bool = True,
    margin_ms: int | None = None,
) -> dict[str, Result]:
    from checkers import events_df

    ev = events_df.load_events(spark, paths)
    if parquet:
        events_df.write_parquet(ev, parquet)
    counts = {r["hist"]: r["count"] for r in ev.groupBy("hist").count().collect()}
    per = fencing_results(ev, paths)
    if zxid:
        from checkers import zxid as zx

        for p, r in zx.check_events(ev, paths).items():
            per[p]["zxid_sweep"] = r
    out: dict[str, Result] = {}
    for p in paths:
        named = dict(per[p])
        named["registration"] = _registration(spark, p, margin_ms)
        out[p] = compose(named, events=int(counts.get(p, 0)), model="epoch-fencing")
    ev.unpersist()
    return out
