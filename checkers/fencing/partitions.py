"""Epoch-fencing invariants about partition state, as Spark plans: 9 (an ISR expansion rests on a
fetch by the replica's current incarnation, KAFKA-14139) and 10 (partition states in zxid order).

Safety is decided from ids, epochs, zxids and per-source order (``seq``), never from cross-source
clocks; where a plan uses the merged-history position ``idx`` its docstring says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checkers.plans import F, PlanChecker, W, anom, broker, fmt, ids, one, reuse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


# 9 --------------------------------------------------------------------------------------------------
def isr_expansion(ev: DataFrame) -> DataFrame:
    """Invariant 9: a committed AlterPartition (``alter_partition_handled`` accepted) that adds replica
    r rests on a fetch by r's incarnation current at commit. Added = committed ISR minus the ISR of
    the state it replaced (``partition_state`` version ``partition_epoch - 1``: the write is
    conditional on the version). The basis is ``based_on_fetch[r]``, a fetch EVENT id (fetch
    request ids repeat across restarts); its ``replica_epoch`` must equal r's registration epoch
    current at commit: the largest czxid of r (``register ok`` epochs and observer snapshots) below
    the commit's zxid (the committed ``partition_state``), else the controller's ``live`` map at
    commit. ``new_isr_with_epochs`` is not used: in ZK mode every entry is -1. Anything that cannot be
    resolved (no request, no previous state, no fetch, epoch -1 or missing) is unknown, not valid."""
    f, win = F(), W()
    hd = ev.filter(
        (f.col("f") == "alter_partition_handled")
        & (f.col("v_outcome").isin("accepted", "applied", "committed", "ok")
           | (f.col("v_outcome").isNull() & (f.col("v_error_code") == 0)))
    ).select(
        "hist", f.col("v_request_id").alias("rid"), f.col("v_leader").alias("ldr"), f.col("v_broker_epoch").alias("be"),
        f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"), f.col("v_partition_epoch").alias("pe"),
        f.col("v_isr").alias("isr"), f.col("v_live").alias("live"), f.col("id").alias("hid"),
    )
    # Its own name for hist: ``hd.hist`` and ``ap.hist`` are one attribute of ``ev``, so dropping
    # ``ap.hist`` after the left join would drop the left side's and leave unmatched rows with none.
    ap = ev.filter(f.col("f") == "alter_partition").select(
        f.col("hist").alias("a_hist"), f.col("v_request_id").alias("a_rid"), broker().alias("a_ldr"), f.col("v_broker_epoch").alias("a_be"),
        f.col("v_topic").alias("a_topic"), f.col("v_partition").alias("a_part"), f.col("id").alias("aid"),
        f.col("v_based_on_fetch").alias("bof"),
    )
    # Request ids are unique per leader incarnation: pair on (request id, leader, leader's broker epoch).
    j = one(hd.join(ap, (hd.hist == ap.a_hist) & (hd.rid == ap.a_rid) & hd.ldr.eqNullSafe(ap.a_ldr) & hd.be.eqNullSafe(ap.a_be)
                    & hd.topic.eqNullSafe(ap.a_topic) & hd.part.eqNullSafe(ap.a_part), "left").drop("a_hist"))
    j = j.dropDuplicates(["hist", "hid"])
    ps = ev.filter(f.col("f") == "partition_state").groupBy(
        "hist", f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"), f.col("v_zk_version").alias("ver")
    ).agg(f.max_by("v_isr", "idx").alias("s_isr"), f.max("v_zxid").alias("s_zxid"), f.max_by("id", "idx").alias("s_id"))
    prev = ps.select("hist", "topic", "part", (f.col("ver") + 1).alias("pe"), f.col("s_isr").alias("prev_isr"))
    com = ps.select("hist", "topic", "part", f.col("ver").alias("pe"), f.col("s_zxid").alias("czx"), f.col("s_id").alias("sid"))
    j = reuse(one(one(j.join(prev, ["hist", "topic", "part", "pe"], "left")).join(com, ["hist", "topic", "part", "pe"], "left")))
    # Handled events we cannot place (no ISR, no previous state) are unknown: the added set is unknowable.
    undecided = j.filter(f.col("isr").isNull() | f.col("prev_isr").isNull())
    u1 = anom(undecided, fmt("%s-%s: cannot tell which replicas the committed expansion %s added (committed ISR %s, no state "
             "before partition epoch %s in the history)", "topic", "part", "rid", f.array_join("isr", ","), "pe"),
        ids("hid"), verdict="unknown", topic=f.col("topic"), partition=f.col("part"),
    )
    j = j.filter(f.col("isr").isNotNull() & f.col("prev_isr").isNotNull()).withColumn(
        "r", f.explode(f.array_except("isr", "prev_isr"))
    ).withColumn("frid", f.try_element_at(f.coalesce("bof", f.create_map().cast("map<string,string>")),
                                      f.col("r").cast("string")))
    fe = ev.filter(f.col("f") == "fetch").select(
        "hist", f.col("id").alias("frid"), f.col("id").alias("fid"), f.col("v_replica").alias("fr"),
        f.col("v_replica_epoch").alias("fepoch"),
    )
    reg = one(ev.filter((f.col("f") == "register") & (f.col("type") == "ok")).select(
        "hist", broker().alias("r"), f.col("v_epoch").alias("re")
    ).unionByName(ev.filter((f.col("f") == "broker_znode") & f.coalesce("v_exists", f.lit(False))).select(
        "hist", f.col("v_broker_id").alias("r"), f.col("v_czxid").alias("re")
    ))).filter(f.col("re").isNotNull()).distinct()
    # r's largest registration epoch below the commit's zxid, as an as-of lookup: one ordering of the
    # registrations and the commits per (history, replica), where a join on the replica alone pairs
    # every commit with every registration (quadratic in a long history's registrations).
    asks = j.filter(f.col("czx").isNotNull()).select("hist", "hid", "r", f.col("czx").alias("at"),
                                                     f.lit(None).cast("long").alias("re"), f.lit(0).alias("side"))
    regs = reg.select("hist", f.lit(None).cast("string").alias("hid"), "r", f.col("re").alias("at"), "re",
                      f.lit(1).alias("side"))  # after a commit at the same zxid: strictly below it
    upto = win.partitionBy("hist", "r").orderBy("at", "side").rowsBetween(win.unboundedPreceding, win.currentRow)
    cur_reg = (
        one(asks.distinct().unionByName(regs)).withColumn("reg_e", f.max("re").over(upto))
        .filter(f.col("side") == 0).select("hist", "hid", "r", "reg_e")
    )
    j = (
        one(one(j.join(fe, ["hist", "frid"], "left")).join(cur_reg, ["hist", "hid", "r"], "left"))
        .withColumn("cur", f.coalesce("reg_e", f.try_element_at("live", f.col("r").cast("string"))))
        .withColumn("basis", f.when(f.col("reg_e").isNotNull(), f.lit("registration current at the commit's zxid"))
                    .otherwise(f.lit("controller's live epoch at commit")))
    )
    why = (
        f.when(f.col("aid").isNull(), f.lit("no alter_partition event for the request"))
        .when(f.col("frid").isNull(), f.lit("based_on_fetch names no fetch for the replica"))
        .when(f.col("fid").isNull(), f.format_string("based_on_fetch names %s, which is no fetch event", "frid"))
        .when(~f.col("fr").eqNullSafe(f.col("r")), f.lit("the named fetch is by another replica"))
        .when(f.col("fepoch").isNull() | (f.col("fepoch") == -1), f.lit("the fetch carries no replica_epoch"))
        .when(f.col("cur").isNull(), f.lit("no registration of the replica is known at commit"))
    )
    j = reuse(j.withColumn("why", why))
    u2 = anom(j.filter(f.col("why").isNotNull()), fmt("%s-%s: cannot judge expansion %s adding replica %s: %s", "topic", "part", "rid", "r", "why"),
        ids("aid", "fid", "hid"), verdict="unknown", topic=f.col("topic"), partition=f.col("part"), replica=f.col("r"),
    )
    bad = j.filter(f.col("why").isNull() & (f.col("fepoch") != f.col("cur")))
    a1 = anom(bad, fmt("%s-%s: committed ISR expansion %s added replica %s on a fetch by its incarnation with epoch %s, "
             "but its epoch at commit was %s (%s): a stale incarnation entered the ISR",
             "topic", "part", "rid", "r", "fepoch", "cur", "basis"),
        ids("aid", "fid", "hid", "sid"), topic=f.col("topic"), partition=f.col("part"), replica=f.col("r"),
    )
    return a1.unionByName(u1).unionByName(u2)


# 10 -------------------------------------------------------------------------------------------------
def partition_states(ev: DataFrame) -> DataFrame:
    """Per partition, in zxid order: leader_epoch and zk_version never decrease, the ISR is never
    empty and the leader is -1 or in the ISR."""
    f, win = F(), W()
    ps = ev.filter(f.col("f") == "partition_state")
    w = win.partitionBy("hist", "v_topic", "v_partition").orderBy(f.coalesce("v_zxid", "idx"), "src", "seq")
    ps = (
        ps.withColumn("p_le", f.lag("v_leader_epoch").over(w))
        .withColumn("p_ver", f.lag("v_zk_version").over(w))
        .withColumn("p_id", f.lag("id").over(w))
    )
    keys = {"topic": f.col("v_topic"), "partition": f.col("v_partition")}
    dec = ps.filter((f.col("v_leader_epoch") < f.col("p_le")) | (f.col("v_zk_version") < f.col("p_ver")))
    a1 = anom(dec, fmt("%s-%s went from leader_epoch %s/version %s to %s/%s", "v_topic", "v_partition",
                            "p_le", "p_ver", "v_leader_epoch", "v_zk_version"), f.array("p_id", "id"), **keys)
    empty = ps.filter(f.col("v_isr").isNotNull() & (f.size("v_isr") == 0))
    a2 = anom(empty, fmt("%s-%s committed an empty ISR", "v_topic", "v_partition"), f.array("id"), **keys)
    out = ps.filter(
        f.col("v_isr").isNotNull() & (f.size("v_isr") > 0) & (f.col("v_leader") != -1)
        & ~f.array_contains("v_isr", f.col("v_leader"))
    )
    a3 = anom(out, fmt("%s-%s leader %s is not in ISR %s", "v_topic", "v_partition", "v_leader",
                            f.array_join("v_isr", ",")), f.array("id"), **keys)
    return a1.unionByName(a2).unionByName(a3)




ISR_EXPANSION = PlanChecker("isr_expansion", {
    "alter_partition_handled": ("broker_epoch", "error_code", "isr", "leader", "live", "outcome", "partition",
                                "partition_epoch", "request_id", "topic"),
    "alter_partition": ("based_on_fetch", "broker_epoch", "broker_id", "partition", "request_id", "topic"),
    "partition_state": ("isr", "partition", "topic", "zk_version", "zxid"),
    "fetch": ("replica", "replica_epoch"),
    "register": ("broker_id", "epoch"),
    "broker_znode": ("broker_id", "czxid", "exists"),
}, isr_expansion)
PARTITION_STATES = PlanChecker("partition_states", {
    "partition_state": ("isr", "leader", "leader_epoch", "partition", "topic", "zk_version", "zxid"),
}, partition_states)
