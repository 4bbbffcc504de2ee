"""The queue checkers (``checkers.queue``) as one pass per partition: one exchange, one walk.

The plans of ``checkers.queue`` each join, aggregate or window the sends and read records by
(history, topic, partition) on their own: on large input five shuffles of the same rows, plus
``queue_unseen``'s. Here the rows every queue checker reads are projected once, in one scan
(``project``: ok and failed sends, each record an ok read returned, final reads' completions,
partition states), exchanged once by (history, topic, partition) and walked once per group, finding
every anomaly kind together: in the JVM from the events themselves (``walk_events``,
``zkfence.QueueWalk``) when the session has the project's jar, else in an Arrow grouped map over
``project``'s rows (``checkers.queue_walk.walk``); the two walks give the same rows. One Spark job collects the per-checker summaries of the anomalies (count and the first
few, in the order ``checkers.plans._summary`` sorts them), the operation counts ``queue_unseen``
reports and the brokers' registration epochs that a lost write's message cites.

The anomalies are the plans' rows, message and cited ids alike (tests/integration/test_queue_pass.py
holds the two to equality on every queue fixture and on the bench's injected anomalies). Run-sized
input takes the pass too when it walks in the JVM: one plan and no Python worker, where the plans
(``checkers.plans``: one small job each, built once per process and run again per check) cost a
cold process twice as much; without the jar it keeps the plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from checkers.checker import Events, Reads
from checkers.plans import MAX_ANOMALIES_PER_CHECKER, F, PlanChecker, _result, collect
from checkers.queue import (
    ABORTED_READ,
    DUPLICATE,
    INCONSISTENT_OFFSETS,
    LOST_WRITE,
    POLL_ORDER,
    UNSEEN,
    Unseen,
    _all_acks,
)
from checkers.queue_walk import text, walk
from checkers.result import Result, anomaly, result
from history.kinds import Need

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

ROW = ("hist STRING, topic STRING, part BIGINT, tag STRING, eid STRING, idx BIGINT, off BIGINT, value STRING, "
       "allacks BOOLEAN, leader BIGINT, le BIGINT, hw BIGINT, ftype STRING, consumer BIGINT, seq BIGINT, pos BIGINT")
OUT = ("hist STRING, checker STRING, verdict STRING, message STRING, event_ids ARRAY<STRING>, key STRING, "
       "brokers ARRAY<BIGINT>, sidx BIGINT, sid STRING, value STRING, topic STRING, part BIGINT")
COUNTED = ("send", "poll", "final_read")  # the operations queue_unseen counts


def _col(ev: DataFrame, name: str, t: str) -> Column:
    """``ev``'s column, or null when the selected checkers read no such field (one checker alone)."""
    f = F()
    return f.col(name) if name in ev.columns else f.lit(None).cast(t)


# the event fields the walk reads, each null where the checked events carry none (one checker alone)
_FIELDS = (("v_acks", "string"), ("v_offset", "bigint"), ("v_leader", "bigint"), ("v_value", "string"),
           ("v_consumer", "bigint"), ("v_leader_epoch", "bigint"), ("v_hw", "bigint"), ("v_offsets", "array<bigint>"),
           ("v_values", "string"), ("v_topic", "string"), ("v_partition", "bigint"))


def _facts(ev: DataFrame) -> tuple[DataFrame, tuple[Column, Column, Column, Column]]:
    """``ev`` with every field of ``_FIELDS``, and the events that carry a fact: a completed send
    (ok or failed), a partition state, an ok read (its records), a final read's completion."""
    f = F()
    ev = ev.select(*ev.columns, *[f.lit(None).cast(t).alias(c) for c, t in _FIELDS if c not in ev.columns])
    kind, typ = f.col("f"), f.col("type")
    return ev, ((kind == "send") & typ.isin("ok", "fail"), kind == "partition_state",
                kind.isin("poll", "final_read") & (typ == "ok"), (kind == "final_read") & (typ != "invoke"))


def project(ev: DataFrame) -> DataFrame:
    """The rows the walk reads, one schema (``ROW``) for every kind (``checkers.queue_walk``'s tags),
    from one scan and one ``posexplode``: an ok read's records zipped as the plans' ``_reads`` zip
    them, one element more for a final read's completion (``F``), one element for a send (``S`` or
    ``X``) or a partition state (``P``). Each column is then the event's field for the kinds that
    carry it, null for the others."""
    f = F()
    ev, (is_send, is_state, read_ok, is_final) = _facts(ev)
    kind, typ = f.col("f"), f.col("type")
    z = f.when(read_ok, f.arrays_zip(f.col("v_offsets").alias("o"), f.from_json("v_values", "array<string>").alias("v")))
    ev = ev.filter(kind.isin("send", "poll", "final_read", "partition_state")).select(
        *ev.columns, z.alias("_z")).withColumn("_n", f.when(f.col("_z").isNull(), 0).otherwise(f.size("_z")))
    one = f.array(f.struct(f.lit(None).cast("bigint").alias("o"), f.lit(None).cast("string").alias("v")))
    elems = (f.when(is_send | is_state, one)
             .when(kind == "poll", f.col("_z"))  # an ok poll's records (no row for other polls)
             .when(is_final, f.concat(f.coalesce(f.col("_z"), f.slice(one, 1, 0)), one)))
    x = ev.select(*ev.columns, f.posexplode(elems).alias("_pos", "_rec"))
    is_rec, is_fin = read_ok & (f.col("_pos") < f.col("_n")), is_final & (f.col("_pos") == f.col("_n"))
    sent = f.col("v_offset"), f.col("v_value")
    return x.select(
        "hist", f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"),
        f.when(is_send, f.when(typ == "ok", "S").otherwise("X")).when(is_state, "P").when(is_rec, "R")
        .when(is_fin, "F").alias("tag"),
        f.col("id").alias("eid"), "idx",
        f.when(is_send, sent[0]).when(is_rec, f.col("_rec.o")).alias("off"),
        f.when(is_send, sent[1]).when(is_rec, f.col("_rec.v")).alias("value"),
        f.when(is_send, f.coalesce(_all_acks("v_acks"), f.lit(False))).alias("allacks"),
        f.when(is_send | is_fin | is_state, f.col("v_leader")).alias("leader"),
        f.when(is_fin | is_state, f.col("v_leader_epoch")).alias("le"),
        f.when(is_fin, f.col("v_hw")).alias("hw"),
        f.when(is_rec, kind).when(is_fin, typ).alias("ftype"),
        f.when(is_rec, f.col("v_consumer")).alias("consumer"), f.when(is_rec, f.col("seq")).alias("seq"),
        f.when(is_rec, f.col("_pos")).cast("bigint").alias("pos")).filter(f.col("tag").isNotNull())


def _walk_group(keys: tuple[Any, ...], table: Any) -> Any:
    """The Arrow grouped map: one (history, topic, partition)'s rows in, its anomalies out."""
    import pyarrow as pa

    hist, topic, part = (k.as_py() for k in keys)
    found = walk(topic, part, table)
    cols: dict[str, list[Any]] = {"hist": [hist] * len(found)}
    names = ("checker", "verdict", "message", "event_ids", "key", "brokers", "sidx", "sid", "value")
    for i, n in enumerate(names):
        cols[n] = [x[i] for x in found]
    cols["topic"] = [topic] * len(found)
    cols["part"] = [part] * len(found)
    return pa.Table.from_pydict(cols, schema=_out_schema())


def _out_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("hist", pa.string()), ("checker", pa.string()), ("verdict", pa.string()),
                      ("message", pa.string()), ("event_ids", pa.list_(pa.string())), ("key", pa.string()),
                      ("brokers", pa.list_(pa.int64())), ("sidx", pa.int64()), ("sid", pa.string()),
                      ("value", pa.string()), ("topic", pa.string()), ("part", pa.int64())])


# "python": no JVM walk even when the jar is there (large input: the Arrow grouped map; run-sized: the
# plans): tests and benches compare the two
WALK_ENV = "HARNESS_QUEUE_WALK"


def jvm_walk(spark: SparkSession) -> bool:
    """The walk runs in the JVM (``zkfence.QueueWalk``): the session has the project's jar."""
    import os

    from checkers import udfs

    return os.environ.get(WALK_ENV) != "python" and udfs.jar_loaded(spark)


def walk_frame(projected: DataFrame) -> DataFrame:
    """Every group's anomalies (``OUT``) walked in Python workers (``checkers.queue_walk``)."""
    return projected.groupBy("hist", "topic", "part").applyInArrow(_walk_group, OUT)


def walk_events(ev: DataFrame) -> DataFrame:
    """Every group's anomalies (``OUT``) walked in the JVM from the events themselves
    (``zkfence.QueueWalk.walkEvents``): one exchange and sort of the queue kinds' events that
    ``project`` makes rows of by (history, topic, partition), then the JVM makes each group's rows
    (``project``'s, in ``expand``) and walks them; Spark only parses ``v_values`` and decides
    ``allacks``, with the expressions ``project`` uses."""
    from pyspark.sql import DataFrame

    f = F()
    ev, (is_send, is_state, read_ok, is_final) = _facts(ev)
    kind = f.col("f")
    events = ev.filter(is_send | is_state | read_ok | is_final).select(
        "hist", "f", "type", "id", "idx", "v_topic", "v_partition", "v_offset", "v_value",
        f.when(kind == "send", f.coalesce(_all_acks("v_acks"), f.lit(False))).alias("allacks"),
        "v_leader", "v_leader_epoch", "v_hw", f.when(read_ok, f.col("v_offsets")).alias("v_offsets"),
        f.when(read_ok, f.from_json("v_values", "array<string>")).alias("vals"), "v_consumer", "seq")
    spark = ev.sparkSession
    group = ("hist", "v_topic", "v_partition")
    events = events.repartition(*group).sortWithinPartitions(*group)
    return DataFrame(spark._jvm.zkfence.QueueWalk.walkEvents(events._jdf), spark)


def summaries(ev: DataFrame) -> DataFrame:
    """One job's rows: per (hist, checker, verdict) the anomaly count and the first few (``first``),
    per (hist, kind_type) the operation count (checker ``ops``), per hist the registrations (``regs``)."""
    f = F()
    walked = walk_events(ev) if jvm_walk(ev.sparkSession) else walk_frame(project(ev))
    # sorted as plans._summary sorts (message, event_ids, key); queue_unseen's (no message) by history position
    first = f.struct("sidx", "sid", "message", "event_ids", "key", "brokers", "value", "topic", "part")
    found = walked.groupBy("hist", "checker", "verdict").agg(
        f.count(f.lit(1)).alias("n"),
        f.slice(f.array_sort(f.collect_list(first)), 1, MAX_ANOMALIES_PER_CHECKER).alias("first"))
    ops = ev.filter(f.col("f").isin(*COUNTED) & (f.col("type") != "invoke")).groupBy("hist", "f", "type").agg(
        f.count(f.lit(1)).alias("n")).select("hist", f.lit("ops").alias("checker"),
                                             f.concat_ws("_", "f", "type").alias("verdict"), "n")
    out = found.unionByName(ops, allowMissingColumns=True)
    if "v_epoch" in ev.columns:
        broker = f.coalesce(_col(ev, "v_broker_id", "bigint"), f.col("node"))
        regs = ev.filter((f.col("f") == "register") & (f.col("type") == "ok")).groupBy("hist").agg(
            f.collect_set(f.struct(broker.alias("b"), f.col("v_epoch").alias("e"))).alias("regs")).select(
            "hist", f.lit("register").alias("checker"), "regs")
        out = out.unionByName(regs, allowMissingColumns=True)
    return out


def run(ev: DataFrame, paths: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, Result]]:
    """{path: {checker: result}} of the named queue checkers, by one pass."""
    got = summaries(ev).collect()
    found: dict[tuple[str, str, str], Any] = {}
    ops: dict[str, dict[str, int]] = {}
    regs: dict[str, list[tuple[Any, Any]]] = {}
    for r in got:
        if r["checker"] == "ops":
            ops.setdefault(r["hist"], {})[r["verdict"]] = int(r["n"])
        elif r["checker"] == "register":
            regs[r["hist"]] = [(x["b"], x["e"]) for x in r["regs"]]
        else:
            found[(r["hist"], r["checker"], r["verdict"])] = r
    out: dict[str, dict[str, Result]] = {}
    for p in paths:
        mine: dict[str, Result] = {}
        for name in names:
            if name == UNSEEN.name:
                mine[name] = _unseen(found.get((p, name, "unseen")), ops.get(p, {}))
                continue
            bad, unk = (_rows(found.get((p, name, v)), regs.get(p, [])) for v in ("invalid", "unknown"))
            mine[name] = _result(name, bad, unk)
        out[p] = mine
    return out


def _rows(row: Any, regs: list[tuple[Any, Any]]) -> dict[str, Any] | None:
    """A summary row as ``plans._result`` reads it, a lost write's broker epochs filled in."""
    if row is None:
        return None
    first = []
    for a in row["first"]:
        message = a["message"]
        if a["brokers"] is not None:  # the epochs of the brokers that acknowledged and served the final read
            bs = set(a["brokers"])
            shown = sorted({f"broker {b}: {text(e)}" for b, e in regs if b is not None and b in bs})
            message += "; ".join(shown) or "none recorded"
        first.append({"message": message, "event_ids": a["event_ids"], "key": a["key"]})
    return {"n": row["n"], "first": first}


def _unseen(row: Any, counts: dict[str, int]) -> Result:
    cited = [anomaly(UNSEEN.name, f"{x['topic']}-{x['part']}: acknowledged send of {x['value']} was never read",
                     [x["sid"]], topic=x["topic"], partition=x["part"]) for x in (row["first"] if row else [])]
    return result(True, [], unseen_total=int(row["n"]) if row else 0, unseen=cited,
                  client_ops=sum(counts.values()), ops_by_kind=counts)


@dataclass(frozen=True)
class QueueCheck:
    """One queue checker (its name, reads and needs those of ``old``): on large input its results
    come from the shared pass; on run-sized input from ``old``, the plan (or ``Unseen``)."""

    lane: ClassVar[str] = "queue"  # the family's plans, or the pass, once (``Events.shared``)
    old: PlanChecker | Unseen
    local: bool = False

    @property
    def name(self) -> str:
        return self.old.name

    @property
    def reads(self) -> Reads:
        return self.old.reads

    @property
    def needs(self) -> tuple[Need, ...]:
        return getattr(self.old, "needs", ())

    def check(self, events: Events) -> dict[str, Result]:
        assert events.frame is not None, f"{self.name} runs on Spark"
        frame = events.frame
        # run-sized input: the pass when it walks in the JVM (one plan, no Python worker: on a cold
        # process 3.0-3.2 s against the plans' 5.8-6.2, bench/RESULTS.md), else the plans
        if events.small and not jvm_walk(frame.sparkSession):
            if isinstance(self.old, Unseen):
                return self.old.check(events)
            found = events.shared(self, QueueCheck, lambda group: collect(
                [c.old for c in group if isinstance(c.old, PlanChecker)], frame, events.paths, small=True))
        else:
            found = events.shared(self, QueueCheck, lambda group: run(frame, events.paths, [c.name for c in group]))
        return {p: found[p][self.name] for p in events.paths}


QUEUE_CHECKS: tuple[QueueCheck, ...] = tuple(QueueCheck(c) for c in (LOST_WRITE, INCONSISTENT_OFFSETS, DUPLICATE,
                                                                         ABORTED_READ, POLL_ORDER, UNSEEN))
