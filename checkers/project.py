"""Check the project's own histories (history.jsonl): epoch-fencing invariants, the zxid sweep and
the lead's registration checks (``checkers.registration``, when importable), all on one SparkSession.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from checkers import fencing
from checkers.result import Result, anomaly, compose, result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MAX_ANOMALIES_PER_CHECKER = 20
# Up to this many fencing events (a real run has a few thousand) the checkers run on one partition,
# as one Spark job (``_single_partition_conf``): small inputs pay per job and stage, not per row.
SMALL_EVENTS = 200_000


def fencing_results(ev: DataFrame, paths: Sequence[str], names: list[str] | None = None) -> dict[str, dict[str, Result]]:
    """{path: {checker: result}} for the epoch-fencing invariants, collected in one Spark job. A checker
    with anomaly rows is invalid; with only ``verdict="unknown"`` rows it is unknown (reasons in stats)."""
    names = names or list(fencing.CHECKERS)
    # Both paths see the same rows (fencing.KINDS), so the small path's tests hold for the large one.
    fev = fencing.fencing_events(ev)
    # limit: deciding "small" never needs a full scan of a large input
    if fev.limit(SMALL_EVENTS + 1).count() > SMALL_EVENTS:
        # Large inputs are not cached: a cache of every column the checkers read costs more (and
        # at 10M events more heap) than letting each checker prune its own Parquet columns.
        return _collect(fev, paths, names)
    one = fev.coalesce(1)
    local = one.sparkSession.sparkContext.master.startswith("local")
    # A checkpoint's plan is one leaf instead of the whole read-parse-filter lineage, which every
    # DataFrame call of the checkers re-analyses (~1 s of the plan build on a small run). Local
    # only: a local checkpoint lives on executors a cluster may take away; there, persist.
    one = one.localCheckpoint() if local else one.persist()
    try:
        with _single_partition_conf(one.sparkSession):
            return _collect(one, paths, names)
    finally:
        if not local:
            one.unpersist()


@contextmanager
def _single_partition_conf(spark: SparkSession) -> Iterator[None]:
    """Settings for input on one partition, restored afterwards. Windows, aggregates and sort-merge
    joins over one partition need no exchange; the few that remain (after unions) shuffle into one
    partition. Joins are not broadcast (each broadcast is a job of its own) and AQE is off (it runs
    every query stage as a job): all checkers run as one job. Whole-stage codegen is off: compiling
    the generated code of ~25 stages costs more than interpreting a few thousand rows."""
    conf = {"spark.sql.adaptive.enabled": "false", "spark.sql.autoBroadcastJoinThreshold": "-1",
            "spark.sql.shuffle.partitions": "1", "spark.sql.codegen.wholeStage": "false"}
    saved = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _collect(fev: DataFrame, paths: Sequence[str], names: list[str]) -> dict[str, dict[str, Result]]:
    from pyspark.sql import functions as F

    an = fencing.all_anomalies(fev, names)
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
