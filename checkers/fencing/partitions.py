"""Epoch-fencing invariants about partition state, as Spark plans: 9 (an ISR expansion rests on a
fetch by the replica's current incarnation, KAFKA-14139) and 10 (partition states in zxid order).

Safety is decided from ids, epochs, zxids and per-source order (``seq``); where a plan uses the
merged-history position ``idx`` (which orders events of different sources by their wall clocks)
or ``t_wall``, its docstring says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checkers.plans import Case, F, PlanChecker, W, anom, anoms, broker, cluster, fmt, ids, one

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


# 9 --------------------------------------------------------------------------------------------------
HANDLED, REQUEST, STATE = 0, 1, 2  # isr_expansion's three kinds of row, placed per partition


def isr_expansion(ev: DataFrame) -> DataFrame:
    """Invariant 9: a committed AlterPartition (``alter_partition_handled`` accepted) that adds replica
    r rests on a fetch by r's incarnation current at commit. Added = committed ISR minus the ISR of
    the state it replaced (``partition_state`` version ``partition_epoch - 1``: the write is
    conditional on the version). The basis is ``based_on_fetch[r]``, a fetch EVENT id (fetch
    request ids repeat across restarts); its ``replica_epoch`` must equal r's registration epoch
    current at commit: the largest czxid of r (``register ok`` epochs and observer snapshots) below
    the commit's zxid (the committed ``partition_state``), else the controller's ``live`` map at
    commit. ``new_isr_with_epochs`` is not used: in ZK mode every entry is -1.

    A fetch with ``replica_epoch`` -1 was sent before its process read its registration reply (the
    agent's ``broker_epoch`` is unset; Kafka's fetcher sends -1 then too): its incarnation is its
    process. The expansion holds when r started (``agent_start``) before that fetch and not again
    before the commit (by history position): the process that fetched is the one running at commit.
    A start in between makes it a stale incarnation's fetch (invalid). Anything that cannot be resolved
    (no request, no previous state, no fetch or an id naming several, a missing epoch, a -1 fetch with
    no start before it) is unknown, not valid."""
    f, win = F(), W()
    # The three kinds placed per partition: a handled expansion finds the states around it and its
    # request in windows over the partition's rows, not in joins that each shuffle both sides.
    # One set of columns for the three kinds (``key``: a handled event's partition epoch, a state's
    # zk_version; ``isr`` and ``id`` each kind's own), so that each row carries few nulls through the
    # exchanges and the sorts.
    hd = ev.filter(
        (f.col("f") == "alter_partition_handled")
        & (f.col("v_outcome").isin("accepted", "applied", "committed", "ok")
           | (f.col("v_outcome").isNull() & (f.col("v_error_code") == 0)))
    ).select(  # no idx: only the states' picks the last report of a version
        "hist", f.lit(HANDLED).alias("side"), f.col("v_request_id").alias("rid"), f.col("v_leader").alias("ldr"),
        f.col("v_broker_epoch").alias("be"), f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"),
        f.col("v_partition_epoch").alias("key"), f.col("v_isr").alias("isr"), f.col("v_live").alias("live"), "id",
        f.col("idx").alias("hidx"),
    )
    ps = ev.filter(f.col("f") == "partition_state").select(
        "hist", "idx", f.lit(STATE).alias("side"), f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"),
        f.col("v_zk_version").alias("key"), f.col("v_isr").alias("isr"), f.col("v_zxid").alias("zxid"), "id",
    )
    ap = ev.filter(f.col("f") == "alter_partition").select(
        "hist", f.lit(REQUEST).alias("side"), f.col("v_request_id").alias("rid"), broker().alias("ldr"),
        f.col("v_broker_epoch").alias("be"), f.col("v_topic").alias("topic"), f.col("v_partition").alias("part"), "id",
        f.col("v_based_on_fetch").alias("bof"),
    )
    def of(side: int, col: str) -> Column:
        return f.when(f.col("side") == side, f.col(col))

    # The states first: the one before the commit has version partition_epoch - 1 and the commit's,
    # partition_epoch (the last of several reports of one version by merged-history position). The
    # replicas the commit added are known then, so that the pairing below sorts one narrow row per
    # added replica where the handled event's maps and arrays would have ridden along.
    version = win.partitionBy("hist", "topic", "part").orderBy("key")
    before, at = version.rangeBetween(-1, -1), version.rangeBetween(0, 0)
    placeable = f.col("topic").isNotNull() & f.col("part").isNotNull() & f.col("key").isNotNull()
    j = cluster(hd.unionByName(ps, allowMissingColumns=True), "hist", "topic", "part").select(
        "*",
        f.when(placeable, f.max_by(of(STATE, "isr"), of(STATE, "idx")).over(before)).alias("prev_isr"),
        f.when(placeable, f.max(of(STATE, "zxid")).over(at)).alias("czx"),
        f.when(placeable, f.max_by(of(STATE, "id"), of(STATE, "idx")).over(at)).alias("sid"),
    ).filter(f.col("side") == HANDLED)
    # Handled events we cannot place (no ISR, no previous state) are unknown: the added set is
    # unknowable. They go on as one row without a replica, so every verdict comes from one stream.
    undecided = f.col("isr").isNull() | f.col("prev_isr").isNull()
    asks = j.withColumn("undecided", undecided).withColumn(
        "r", f.explode(f.when(undecided, f.array(f.lit(None).cast("int"))).otherwise(f.array_except("isr", "prev_isr")))
    ).select(  # what the lookups below need of the maps and arrays, so that less is shuffled
        "hist", "side", "rid", "ldr", "be", "topic", "part", f.col("key").alias("pe"), "czx", "sid", "undecided", "r", "id",
        f.when(undecided, f.array_join("isr", ",")).alias("isr_text"), f.try_element_at("live", f.col("r").cast("string")).alias("live_r"),
        "hidx",
    )
    # Request ids are unique per leader incarnation: pair on (request id, leader, leader's broker
    # epoch) within the partition; a null request id pairs with nothing. The requests are clustered
    # apart and unioned with the added replicas (two alike-partitioned sides need no exchange).
    request = win.partitionBy("hist", "topic", "part", "rid", "ldr", "be")
    paired = f.col("rid").isNotNull()
    j = one(asks.unionByName(cluster(ap, "hist", "topic", "part"), allowMissingColumns=True)).select(
        "hist", "side", f.col("id").alias("hid"), "rid", "topic", "part", "pe", "czx", "sid", "undecided", "r", "isr_text",
        "live_r", "hidx",
        f.when(paired, f.max(of(REQUEST, "id")).over(request)).alias("aid"),
        f.when(paired, f.max_by(of(REQUEST, "bof"), of(REQUEST, "id")).over(request)).alias("bof"),
    ).filter(f.col("side") == HANDLED).select(
        "hist", "hid", "rid", "topic", "part", "pe", "aid", "czx", "sid", "undecided", "r", "isr_text", "live_r", "hidx",
        f.try_element_at(f.coalesce("bof", f.create_map().cast("map<string,string>")), f.col("r").cast("string")).alias("frid"),
    )
    # The fetch based_on_fetch names, by its event id: each id's fetches counted and hashed, then
    # looked up by a hash join built on the expansions (few, where fetches are many), which sorts
    # neither side. An id is one event in a well-formed history (docs/events.md); one that names
    # several cannot say which fetch the expansion rested on.
    fe = ev.filter(f.col("f") == "fetch").groupBy("hist", f.col("id").alias("frid")).agg(
        f.count(f.lit(1)).alias("f_n"), f.min("v_replica").alias("fr"), f.min("v_replica_epoch").alias("fepoch"),
        f.min("idx").alias("fidx"),
    )
    j = one(j.filter(f.col("hid").isNotNull()).hint("shuffle_hash").join(fe, ["hist", "frid"], "left")).withColumn(
        "fid", f.when(f.col("f_n").isNotNull(), f.col("frid")))
    # r's largest registration epoch below the commit's zxid, as an as-of lookup: one ordering of the
    # registrations and the commits per (history, replica), a registration at the commit's own zxid
    # after it (strictly below). A commit without a zxid sorts before every registration: none is
    # current; an undecided row has no replica, so no registration at all.
    reg = one(ev.filter((f.col("f") == "register") & (f.col("type") == "ok")).select(
        "hist", broker().alias("r"), f.col("v_epoch").alias("re")
    ).unionByName(ev.filter((f.col("f") == "broker_znode") & f.coalesce("v_exists", f.lit(False))).select(
        "hist", f.col("v_broker_id").alias("r"), f.col("v_czxid").alias("re")
    ))).filter(f.col("re").isNotNull() & f.col("r").isNotNull()).select("hist", "r", "re", f.col("re").alias("at"),
                                                                           f.lit(1).alias("order"))
    asks = j.withColumn("at", f.col("czx")).withColumn("order", f.lit(0))
    upto = win.partitionBy("hist", "r").orderBy("at", "order").rowsBetween(win.unboundedPreceding, win.currentRow)
    # A fetch without a replica epoch (-1: sent before the replica's registration reply) names no
    # incarnation itself; its process does. The starts of r (``agent_start``, by history position) ride
    # along in the same partitioning: the fetch is by the process running at commit when r started
    # before the fetch and not again before the commit.
    starts = ev.filter(f.col("f") == "agent_start").select("hist", broker().alias("r"), f.col("idx").alias("s_idx"),
                                                           f.lit(2).alias("order"))
    j = (
        one(asks.unionByName(reg, allowMissingColumns=True).unionByName(starts, allowMissingColumns=True))
        .withColumn("reg_e", f.max("re").over(upto))
        .withColumn("starts", f.collect_list("s_idx").over(win.partitionBy("hist", "r")))
        .filter(f.col("order") == 0)
        .withColumn("cur", f.coalesce("reg_e", "live_r"))
        .withColumn("basis", f.when(f.col("reg_e").isNotNull(), f.lit("registration current at the commit's zxid"))
                    .otherwise(f.lit("controller's live epoch at commit")))
    )
    no_epoch = f.coalesce(f.col("fepoch") == -1, f.lit(False))
    why = (
        f.when(f.col("aid").isNull(), f.lit("no alter_partition event for the request"))
        .when(f.col("frid").isNull(), f.lit("based_on_fetch names no fetch for the replica"))
        .when(f.col("f_n").isNull(), f.format_string("based_on_fetch names %s, which is no fetch event", "frid"))
        .when(f.col("f_n") > 1, f.format_string("based_on_fetch names %s, the id of %s fetch events", "frid", "f_n"))
        .when(~f.col("fr").eqNullSafe(f.col("r")), f.lit("the named fetch is by another replica"))
        .when(f.col("fepoch").isNull(), f.lit("the fetch carries no replica_epoch"))
        .when(no_epoch & (f.col("fidx").isNull() | f.col("hidx").isNull()),
              f.lit("the fetch carries replica_epoch -1 and the history no positions to place it"))
        .when(no_epoch & ~f.exists("starts", lambda x: x < f.col("fidx")),
              f.lit("the fetch carries replica_epoch -1 and no start of the replica precedes it"))
        .when(~no_epoch & f.col("cur").isNull(), f.lit("no registration of the replica is known at commit"))
    )
    restarted = no_epoch & f.exists("starts", lambda x: (x > f.col("fidx")) & (x < f.col("hidx")))
    j = j.withColumn("why", why)
    judged = j.filter(f.col("undecided") | f.col("why").isNotNull() | restarted
                      | (~no_epoch & (f.col("fepoch") != f.col("cur"))))
    message = (
        f.when(f.col("undecided"), fmt(
            "%s-%s: cannot tell which replicas the committed expansion %s added (committed ISR %s, no state "
            "before partition epoch %s in the history)", "topic", "part", "rid", "isr_text", "pe"))
        .when(f.col("why").isNotNull(), fmt("%s-%s: cannot judge expansion %s adding replica %s: %s",
                                            "topic", "part", "rid", "r", "why"))
        .when(restarted, fmt("%s-%s: committed ISR expansion %s added replica %s on a fetch with replica_epoch -1 "
                             "by a process of it that was restarted before the commit: a stale incarnation entered "
                             "the ISR", "topic", "part", "rid", "r"))
        .otherwise(fmt("%s-%s: committed ISR expansion %s added replica %s on a fetch by its incarnation with epoch "
                       "%s, but its epoch at commit was %s (%s): a stale incarnation entered the ISR",
                       "topic", "part", "rid", "r", "fepoch", "cur", "basis"))
    )
    return anom(judged, message,
                f.when(f.col("undecided"), ids("hid")).when(f.col("why").isNotNull(), ids("aid", "fid", "hid"))
                .otherwise(ids("aid", "fid", "hid", "sid")),
                verdict=f.when(f.col("undecided") | f.col("why").isNotNull(), f.lit("unknown")).otherwise(f.lit("invalid")),
                topic=f.col("topic"), partition=f.col("part"), replica=f.col("r"))


# 10 -------------------------------------------------------------------------------------------------
def partition_states(ev: DataFrame) -> DataFrame:
    """Per partition, in zxid order: leader_epoch and zk_version never decrease, the ISR is never
    empty and the leader is -1 or in the ISR."""
    f, win = F(), W()
    # The order is a column, not an expression in the window: Spark names an expression in each
    # window's order apart (_w0, _w1, ...), which then count as three orders, three sorts.
    ps = ev.filter(f.col("f") == "partition_state").withColumn("zorder", f.coalesce("v_zxid", "idx"))
    w = win.partitionBy("hist", "v_topic", "v_partition").orderBy("zorder", "src", "seq")
    ps = ps.select("*", f.lag("v_leader_epoch").over(w).alias("p_le"), f.lag("v_zk_version").over(w).alias("p_ver"),
                   f.lag("id").over(w).alias("p_id"))
    keys = {"topic": f.col("v_topic"), "partition": f.col("v_partition")}
    isr = f.col("v_isr").isNotNull()
    return anoms(
        ps,
        Case((f.col("v_leader_epoch") < f.col("p_le")) | (f.col("v_zk_version") < f.col("p_ver")),
             fmt("%s-%s went from leader_epoch %s/version %s to %s/%s", "v_topic", "v_partition", "p_le", "p_ver",
                 "v_leader_epoch", "v_zk_version"), f.array("p_id", "id"), keys=keys),
        Case(isr & (f.size("v_isr") == 0), fmt("%s-%s committed an empty ISR", "v_topic", "v_partition"),
             f.array("id"), keys=keys),
        Case(isr & (f.size("v_isr") > 0) & (f.col("v_leader") != -1) & ~f.array_contains("v_isr", f.col("v_leader")),
             fmt("%s-%s leader %s is not in ISR %s", "v_topic", "v_partition", "v_leader", f.array_join("v_isr", ",")),
             f.array("id"), keys=keys),
    )




ISR_EXPANSION = PlanChecker("isr_expansion", {
    "alter_partition_handled": ("broker_epoch", "error_code", "isr", "leader", "live", "outcome", "partition",
                                "partition_epoch", "request_id", "topic"),
    "alter_partition": ("based_on_fetch", "broker_epoch", "broker_id", "partition", "request_id", "topic"),
    "partition_state": ("isr", "partition", "topic", "zk_version", "zxid"),
    "fetch": ("replica", "replica_epoch"),
    "register": ("broker_id", "epoch"),
    "broker_znode": ("broker_id", "czxid", "exists"),
    "agent_start": ("broker_id",),
}, isr_expansion)
PARTITION_STATES = PlanChecker("partition_states", {
    "partition_state": ("isr", "leader", "leader_epoch", "partition", "topic", "zk_version", "zxid"),
}, partition_states)
