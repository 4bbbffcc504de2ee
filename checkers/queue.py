"""The queue workload's checkers (``workloads.queue``), as Spark plans: what a Kafka user would lose.

Reads the client operations ``send``, ``poll`` and ``final_read`` (docs/events.md) and, to explain
an anomaly, the agents' ``partition_state`` (leader and leader epoch changes of the partition)
and ``register`` (the brokers' epochs). Values are unique per send, so a value names its send.

* ``queue_lost_write``: a send acknowledged with acks=all whose value the partition's final read
  does not hold, or holds at another offset. No successful final read of the partition: ``unknown``.
* ``queue_inconsistent_offsets``: two different values at one offset of one partition (acked
  sends and reads together).
* ``queue_duplicate``: one value at two offsets.
* ``queue_aborted_read``: a value read whose send failed (the broker said it did not append).
* ``queue_poll_order``: per consumer and partition, the offsets its polls read, in order: each
  is the previous + 1 (a larger one is a skip, a smaller or equal one non-monotonic).
* ``queue_unseen``: acknowledged sends no read ever returned: counted and cited, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from checkers.checker import Events
from checkers.plans import F, PlanChecker, W, anom, fmt, ids, one, reuse
from checkers.result import Result, anomaly, result

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

SEND = ("acks", "leader", "offset", "partition", "topic", "value")
READ = ("hw", "leader", "leader_epoch", "offsets", "partition", "topic", "values")
EXPLAIN = {"partition_state": ("leader", "leader_epoch", "partition", "topic"), "register": ("broker_id", "epoch")}
MAX_CITED = 8


def _sends(ev: DataFrame, types: tuple[str, ...] = ("ok",)) -> DataFrame:
    f = F()
    return ev.filter((f.col("f") == "send") & f.col("type").isin(*types)).select(
        "hist", f.col("id").alias("sid"), f.col("idx").alias("sidx"), f.col("type").alias("stype"),
        f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"), f.col("v_value").alias("value"),
        f.col("v_offset").alias("soff"), f.col("v_acks").alias("acks"), f.col("v_leader").alias("sleader"))


def _reads(ev: DataFrame, kinds: tuple[str, ...] = ("poll", "final_read")) -> DataFrame:
    """One row per record an ok read returned: (hist, rid, kind, consumer, seq, pos, topic, part, off, value)."""
    f = F()
    r = ev.filter(f.col("f").isin(*kinds) & (f.col("type") == "ok")).withColumn(
        "z", f.arrays_zip(f.col("v_offsets").alias("o"), f.from_json("v_values", "array<string>").alias("v")))
    consumer = f.col("v_consumer") if "v_consumer" in ev.columns else f.lit(None).cast("bigint")
    return r.select("hist", f.col("id").alias("rid"), f.col("idx").alias("ridx"), f.col("f").alias("kind"),
                    consumer.alias("consumer"), "seq", f.col("v_topic").alias("topic"),
                    f.col("v_partition").alias("part"), f.posexplode("z").alias("pos", "rec")).select(
        "hist", "rid", "ridx", "kind", "consumer", "seq", "pos", "topic", "part",
        f.col("rec.o").alias("off"), f.col("rec.v").alias("value"))


def _all_acks(col: str = "acks") -> Column:
    f = F()
    return f.lower(f.trim(f.col(col))).isin("all", "-1")


# -- lost write --------------------------------------------------------------------------------------
def lost_write(ev: DataFrame) -> DataFrame:
    f, win = F(), W()
    acked = _sends(ev).filter(_all_acks())
    finals = ev.filter(f.col("f") == "final_read").filter(f.col("type") != "invoke").select(
        "hist", f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"), f.col("type").alias("ftype"),
        f.col("id").alias("fid"), f.col("idx").alias("fidx"), f.col("v_hw").alias("fhw"),
        f.col("v_leader").alias("fleader"), f.col("v_leader_epoch").alias("fle"))
    # the partition's last successful final read, else its last attempt
    w = win.partitionBy("hist", "topic", "part").orderBy((f.col("ftype") == "ok").desc(), f.col("fidx").desc())
    final = finals.withColumn("rk", f.row_number().over(w)).filter(f.col("rk") == 1).drop("rk")
    rec = _reads(ev, ("final_read",)).select("hist", "topic", "part", f.col("off").alias("foff"), "value")
    j = one(one(acked.join(final, ["hist", "topic", "part"], "left")).join(rec, ["hist", "topic", "part", "value"], "left"))
    j = reuse(j.groupBy("hist", "sid", "sidx", "topic", "part", "value", "soff", "sleader", "ftype", "fid", "fidx", "fhw",
                        "fleader", "fle").agg(f.collect_set("foff").alias("found")))
    unk = j.filter(f.col("ftype").isNull() | (f.col("ftype") != "ok"))
    u = anom(unk, fmt("%s-%s: acknowledged send of %s at offset %s cannot be checked: no successful final read of "
                      "the partition (%s)", "topic", "part", "value", "soff",
                      f.coalesce(f.concat(f.lit("final read "), f.col("fid"), f.lit(" ended "), f.col("ftype")),
                                 f.lit("none ran"))),
             ids("sid", "fid"), verdict="unknown", topic=f.col("topic"), partition=f.col("part"))
    # not at its acknowledged offset (missing, or only elsewhere); also elsewhere is queue_duplicate's
    bad = j.filter((f.col("ftype") == "ok") & ((f.size("found") == 0) | ~f.array_contains("found", f.col("soff"))))
    bad = _explain(ev, reuse(bad))
    a = anom(bad, fmt("%s-%s: acknowledged (acks=all) send of %s at offset %s by leader %s is %s in the final read "
                      "(hw %s, leader %s at leader epoch %s); partition states between: %s; broker epochs: %s",
                      "topic", "part", "value", "soff", "sleader",
                      f.when(f.size("found") == 0, f.lit("missing")).otherwise(
                          f.concat(f.lit("at offset(s) "), f.array_join(f.array_sort("found"), ","))),
                      "fhw", "fleader", "fle", "states", "bepochs"),
             f.concat(ids("sid", "fid"), f.coalesce("ps_ids", f.array().cast("array<string>"))),
             topic=f.col("topic"), partition=f.col("part"), offset=f.col("soff"))
    return a.unionByName(u)


def _explain(ev: DataFrame, bad: DataFrame) -> DataFrame:
    """The fencing events around a lost write: the partition's states (leader@leader_epoch) written
    between the ack and the final read (merged-history order), and the registration epochs of the
    brokers that acknowledged and served the final read."""
    f = F()
    ps = ev.filter(f.col("f") == "partition_state").select(
        "hist", f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"), f.col("idx").alias("pidx"),
        f.col("id").alias("pid"), f.col("v_leader").alias("pl"), f.col("v_leader_epoch").alias("ple"))
    keys = bad.select("hist", "sid", "topic", "part", "sidx", "fidx")
    between = one(keys.join(ps, ["hist", "topic", "part"])).filter(
        (f.col("pidx") > f.col("sidx")) & (f.col("pidx") < f.col("fidx")))
    expl = between.groupBy("hist", "sid").agg(
        f.slice(f.array_sort(f.collect_set(f.struct("ple", "pl", "pid"))), 1, MAX_CITED).alias("st"))
    expl = expl.select("hist", "sid", f.transform("st", lambda s: s["pid"]).alias("ps_ids"),
                       f.array_join(f.transform("st", lambda s: f.format_string("leader %s@epoch %s",
                                                                                s["pl"].cast("string"),
                                                                                s["ple"].cast("string"))),
                                    ", ").alias("states"))
    reg = ev.filter((f.col("f") == "register") & (f.col("type") == "ok")).select(
        "hist", f.coalesce("v_broker_id", "node").alias("b"), f.col("v_epoch").alias("e"))
    brokers = bad.select("hist", "sid", f.explode(f.array("sleader", "fleader")).alias("b")).distinct()
    be = one(brokers.join(reg, ["hist", "b"])).groupBy("hist", "sid").agg(f.array_join(f.array_sort(f.collect_set(
        f.format_string("broker %s: %s", f.col("b").cast("string"), f.col("e").cast("string")))), "; ").alias("bepochs"))
    return (one(bad.join(expl, ["hist", "sid"], "left")).join(be, ["hist", "sid"], "left")
            .withColumn("states", f.coalesce(f.nullif("states", f.lit("")), f.lit("none recorded")))
            .withColumn("bepochs", f.coalesce("bepochs", f.lit("none recorded"))))


# -- offsets and values --------------------------------------------------------------------------------
def _observations(ev: DataFrame) -> DataFrame:
    """(hist, topic, part, off, value, eid): every acked send's and every read record's claim."""
    f = F()
    s = _sends(ev).select("hist", "topic", "part", f.col("soff").alias("off"), "value", f.col("sid").alias("eid"))
    r = _reads(ev).select("hist", "topic", "part", "off", "value", f.col("rid").alias("eid"))
    return s.unionByName(r).filter(f.col("off").isNotNull() & f.col("value").isNotNull())


def inconsistent_offsets(ev: DataFrame) -> DataFrame:
    f = F()
    g = _observations(ev).groupBy("hist", "topic", "part", "off").agg(
        f.array_sort(f.collect_set("value")).alias("vals"), f.array_sort(f.collect_set("eid")).alias("eids"))
    bad = g.filter(f.size("vals") > 1)
    return anom(bad, fmt("%s-%s offset %s holds different values: %s", "topic", "part", "off",
                         f.array_join("vals", ", ")), f.slice("eids", 1, MAX_CITED),
                topic=f.col("topic"), partition=f.col("part"), offset=f.col("off"))


def duplicate(ev: DataFrame) -> DataFrame:
    f = F()
    g = _observations(ev).groupBy("hist", "topic", "part", "value").agg(
        f.array_sort(f.collect_set("off")).alias("offs"), f.array_sort(f.collect_set("eid")).alias("eids"))
    bad = g.filter(f.size("offs") > 1)
    return anom(bad, fmt("%s-%s value %s is at offsets %s", "topic", "part", "value",
                         f.array_join("offs", ", ")), f.slice("eids", 1, MAX_CITED),
                topic=f.col("topic"), partition=f.col("part"))


def aborted_read(ev: DataFrame) -> DataFrame:
    f = F()
    failed = _sends(ev, ("fail",)).select("hist", "topic", "part", "value", "sid")
    reads = _reads(ev).select("hist", "topic", "part", "value", "rid", "off", "kind")
    j = failed.join(reads, ["hist", "topic", "part", "value"])
    return anom(j, fmt("%s-%s: %s %s read %s at offset %s, but its send failed", "topic", "part", "kind", "rid",
                       "value", "off"), ids("sid", "rid"), topic=f.col("topic"), partition=f.col("part"))


def poll_order(ev: DataFrame) -> DataFrame:
    f, win = F(), W()
    r = _reads(ev, ("poll",)).filter(f.col("consumer").isNotNull())
    w = win.partitionBy("hist", "consumer", "topic", "part").orderBy("seq", "pos")
    r = r.withColumn("prev", f.lag("off").over(w)).withColumn("prev_id", f.lag("rid").over(w))
    skip = r.filter(f.col("off") > f.col("prev") + 1)
    back = r.filter(f.col("off") <= f.col("prev"))
    keys = {"topic": f.col("topic"), "partition": f.col("part"), "consumer": f.col("consumer")}
    a = anom(skip, fmt("%s-%s: consumer %s skipped from offset %s to %s", "topic", "part", "consumer", "prev", "off"),
             ids("prev_id", "rid"), **keys)
    b = anom(back, fmt("%s-%s: consumer %s read offset %s after offset %s (non-monotonic)", "topic", "part",
                       "consumer", "off", "prev"), ids("prev_id", "rid"), **keys)
    return a.unionByName(b)


_SENDS = {"send": SEND}
_READS = {"poll": (*READ, "consumer"), "final_read": READ}
LOST_WRITE = PlanChecker("queue_lost_write", {
    "send": SEND, "final_read": READ, **EXPLAIN}, lost_write)
INCONSISTENT_OFFSETS = PlanChecker("queue_inconsistent_offsets", {**_SENDS, **_READS}, inconsistent_offsets)
DUPLICATE = PlanChecker("queue_duplicate", {**_SENDS, **_READS}, duplicate)
ABORTED_READ = PlanChecker("queue_aborted_read", {**_SENDS, **_READS}, aborted_read)
POLL_ORDER = PlanChecker("queue_poll_order", {"poll": (*READ, "consumer")}, poll_order)


@dataclass(frozen=True)
class Unseen:
    """Acknowledged sends no read returned: reported (count, the first ids), never fatal. With the
    operation counts of the workload (sends and polls by completion type)."""

    name: str = "queue_unseen"
    reads: dict[str, tuple[str, ...]] = field(default_factory=lambda: {**_SENDS, **_READS})
    local: bool = False

    def check(self, events: Events) -> dict[str, Result]:
        assert events.frame is not None, f"{self.name} runs on Spark"
        f = F()
        ev = events.frame
        sent = _sends(ev)
        seen = _reads(ev).select("hist", "topic", "part", "value").distinct()
        unseen = sent.join(seen, ["hist", "topic", "part", "value"], "left_anti")
        per = unseen.groupBy("hist").agg(f.count(f.lit(1)).alias("n"),
                                         f.slice(f.array_sort(f.collect_list(f.struct("sidx", "sid", "value", "topic",
                                                                                      "part"))), 1, 20).alias("first"))
        ops = ev.filter(f.col("f").isin("send", "poll", "final_read") & (f.col("type") != "invoke")) \
            .groupBy("hist", "f", "type").count()
        got_unseen = {r["hist"]: r for r in per.collect()}
        counts: dict[str, dict[str, int]] = {}
        for r in ops.collect():
            counts.setdefault(r["hist"], {})[f"{r['f']}_{r['type']}"] = int(r["count"])
        out: dict[str, Result] = {}
        for p in events.paths:
            row: Any = got_unseen.get(p)
            cited = [anomaly(self.name, f"{x['topic']}-{x['part']}: acknowledged send of {x['value']} was never read",
                             [x["sid"]], topic=x["topic"], partition=x["part"]) for x in (row["first"] if row else [])]
            c = counts.get(p, {})
            out[p] = result(True, [], unseen_total=int(row["n"]) if row else 0, unseen=cited,
                            client_ops=sum(c.values()), ops_by_kind=c)
        return out


UNSEEN = Unseen()
QUEUE_PLANS: tuple[PlanChecker, ...] = (LOST_WRITE, INCONSISTENT_OFFSETS, DUPLICATE, ABORTED_READ, POLL_ORDER)
