"""Epoch-fencing invariants about the controller and its requests, as Spark plans: 4 (control
request epochs), 5 (controller epochs), 6 (controller writes fenced on /controller_epoch, KIP-903's
zkVersion check), 8 (stale ControlledShutdown) and 11 (max-broker-epoch mode).

Safety is decided from ids, epochs, zxids and per-source order (``seq``); where a plan uses the
merged-history position ``idx`` (which orders events of different sources by their wall clocks)
or ``t_wall``, its docstring says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checkers.plans import Case, F, PlanChecker, W, anom, anoms, broker, fmt, settle

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


# 4 --------------------------------------------------------------------------------------------------
def _applied_recv(ev: DataFrame) -> DataFrame:
    f = F()
    return ev.filter((f.col("f") == "control_recv") & (f.col("v_outcome") == "applied")).withColumn("b", broker())


def control_request_epochs(ev: DataFrame) -> DataFrame:
    """Per broker: an applied control request had broker_epoch -1 or >= the broker's own epoch, and a
    controller_epoch >= the highest this broker had seen before (its earlier applied requests). And
    no request was rejected for a broker epoch NEWER than the broker's own (or while it knew none):
    the controller has read a registration whose reply the broker has not yet read, so the request
    is for this incarnation, and a rejected request is never resent (KAFKA-9839: 2.2-2.5.0 threw
    IllegalStateException; the fix accepts it). Decided from the receiving event's own fields."""
    f, win = F(), W()
    # Applied and rejected requests in one pass (one shuffle and sort of a broker's requests); the
    # epochs a broker has seen are its applied requests' only.
    applied = f.col("v_outcome") == "applied"
    # the receiving broker: an agent's own events, or ``broker_id`` of a real broker's (base.kafkawire)
    r = ev.filter((f.col("f") == "control_recv") & f.col("v_outcome").isin("applied", "rejected")).withColumn(
        "b", broker())
    w = win.partitionBy("hist", "b").orderBy("seq").rowsBetween(win.unboundedPreceding, -1)
    seen_ce = f.when(applied, f.col("v_controller_epoch"))
    r = r.select("*", f.max(seen_ce).over(w).alias("prev_max"), f.max_by(f.when(applied, f.col("id")), seen_ce).over(w)
                 .alias("prev_id"))
    # A real broker's answers (base.kafkawire) come back in any order across connections: what it had
    # handled before a request is what the wire mapping says it saw, not the answers before this one.
    by_order = f.col("src") != "kafkawire"
    seen = f.greatest(f.when(by_order, f.col("prev_max")), f.col("v_max_controller_epoch_seen"))
    return anoms(
        r,
        Case(applied & f.col("v_broker_epoch").isNotNull() & (f.col("v_broker_epoch") != -1)
             & f.col("v_own_epoch").isNotNull() & (f.col("v_broker_epoch") < f.col("v_own_epoch")),
             fmt("broker %s applied %s with broker_epoch %s below its own epoch %s", "b", "v_kind", "v_broker_epoch",
                 "v_own_epoch"), f.array("id"), keys={"broker": f.col("b")}),
        Case(applied & seen.isNotNull() & (f.col("v_controller_epoch") < seen),
             fmt("broker %s applied %s from controller epoch %s after seeing epoch %s", "b", "v_kind",
                 "v_controller_epoch", seen),
             f.filter(f.array(f.when(by_order, f.col("prev_id")), f.col("id")), lambda x: x.isNotNull()),
             keys={"broker": f.col("b")}),
        Case((f.col("v_outcome") == "rejected")
             # the broker-epoch rejections: STALE_BROKER_EPOCH (77), UNKNOWN_SERVER_ERROR (-1, 2.2-2.5.0)
             & f.col("v_error_code").isin(-1, 77)
             & f.col("v_broker_epoch").isNotNull() & (f.col("v_broker_epoch") != -1)
             & (f.coalesce(f.col("v_max_broker_epoch"), f.lit(-1)) == -1)  # max-broker-epoch mode: checker 11
             & (f.col("v_own_epoch").isNull() | (f.col("v_broker_epoch") > f.col("v_own_epoch"))),
             fmt("broker %s rejected %s (error %s) carrying broker_epoch %s, newer than its own epoch %s: a request "
                 "for its current incarnation is lost", "b", "v_kind", "v_error_code", "v_broker_epoch",
                 f.coalesce(f.col("v_own_epoch").cast("string"), f.lit("(none yet)"))),
             f.array("id"), keys={"broker": f.col("b")}),
    )


# 5 --------------------------------------------------------------------------------------------------
def controller_epochs(ev: DataFrame) -> DataFrame:
    """Elected controller epochs strictly increase (merged-history order: elections are seconds
    apart), and per controller epoch only one broker is elected, sends control requests or commits
    ZooKeeper writes."""
    f, win = F(), W()
    el = ev.filter(f.col("f") == "controller_elected").withColumn("b", broker())
    w = win.partitionBy("hist").orderBy("idx", "src", "seq")
    el2 = el.withColumn("prev", f.lag("v_controller_epoch").over(w)).withColumn("prev_id", f.lag("id").over(w))
    dec = el2.filter(f.col("prev").isNotNull() & (f.col("v_controller_epoch") <= f.col("prev")))
    a1 = anom(dec, fmt("controller epoch %s elected after epoch %s: must strictly increase",
                            "v_controller_epoch", "prev"), f.array("prev_id", "id"),
               controller_epoch=f.col("v_controller_epoch"))
    acts = ev.filter(
        f.col("f").isin("controller_elected", "control_send")
        | ((f.col("f") == "controller_zk_write") & (f.col("type") == "ok"))
    ).select("hist", "id", f.col("v_controller_epoch").alias("ce"), broker().alias("b"))
    multi = (
        acts.filter(f.col("ce").isNotNull())
        .groupBy("hist", "ce")
        .agg(f.sort_array(f.collect_set("b")).alias("bs"), f.min_by("id", "b").alias("i1"), f.max_by("id", "b").alias("i2"))
        .filter(f.size("bs") > 1)
    )
    a2 = anom(multi, fmt("controller epoch %s used by brokers %s", "ce", f.array_join("bs", ",")),
               f.array("i1", "i2"), controller_epoch=f.col("ce"))
    return a1.unionByName(a2)


# 6 --------------------------------------------------------------------------------------------------
def controller_write_fencing(ev: DataFrame) -> DataFrame:
    """Every successful controller ZooKeeper write carried check(/controller_epoch, V) with V the
    version its controller epoch's election wrote (the version current while that epoch ruled)."""
    f = F()
    wr = ev.filter((f.col("f") == "controller_zk_write") & (f.col("type") == "ok"))
    unf = wr.filter(f.col("v_checked_version").isNull())
    a1 = anom(unf, fmt("controller epoch %s committed %s %s without a /controller_epoch check",
                            "v_controller_epoch", "v_op", "v_path"), f.array("id"),
               controller_epoch=f.col("v_controller_epoch"))
    el = ev.filter(f.col("f") == "controller_elected").select(
        f.col("hist").alias("e_hist"), f.col("v_controller_epoch").alias("ce"), f.col("v_epoch_zk_version").alias("ver"), f.col("id").alias("eid")
    )
    j = wr.filter(f.col("v_checked_version").isNotNull()).join(
        el, (wr.hist == el.e_hist) & (wr.v_controller_epoch == el.ce), "inner"
    ).filter(f.col("ver").isNotNull() & (f.col("v_checked_version") != f.col("ver"))).drop("e_hist")
    a2 = anom(j, fmt("write under controller epoch %s checked version %s but that epoch's version is %s",
                          "v_controller_epoch", "v_checked_version", "ver"), f.array("eid", "id"),
               controller_epoch=f.col("v_controller_epoch"))
    return a1.unionByName(a2)


# 8 --------------------------------------------------------------------------------------------------
def controlled_shutdown_epochs(ev: DataFrame) -> DataFrame:
    """A ControlledShutdown whose broker_epoch is below the controller's cached epoch for N moves no
    leader and stops no replica."""
    f = F()
    h = ev.filter(f.col("f") == "controlled_shutdown_handled").withColumn("b", broker())
    n_moves = f.coalesce(f.json_array_length("v_leader_moves"), f.lit(0))
    n_stops = f.coalesce(f.json_array_length("v_stop_replicas"), f.lit(0))
    bad = h.filter(
        f.col("v_broker_epoch").isNotNull() & f.col("v_cached_epoch").isNotNull()
        & (f.col("v_broker_epoch") < f.col("v_cached_epoch")) & ((n_moves > 0) | (n_stops > 0))
    )
    return anom(bad, fmt("stale ControlledShutdown of broker %s (epoch %s < cached %s) caused %s leader moves, %s StopReplicas",
             f.col("v_broker_id"), "v_broker_epoch", "v_cached_epoch", n_moves, n_stops),
        f.array("id"), broker=f.col("v_broker_id"),
    )


# 11 -------------------------------------------------------------------------------------------------
def max_broker_epoch(ev: DataFrame) -> DataFrame:
    """Max-broker-epoch mode: a request N applied with MaxBrokerEpoch M had M >= N's own epoch and was
    built (control_send, same request_id) from a map holding N's current epoch."""
    f = F()
    # -1 is the wire value for "not in max-broker-epoch mode": the per-broker check governs then.
    r = settle(_applied_recv(ev).filter(f.col("v_max_broker_epoch").isNotNull() & (f.col("v_max_broker_epoch") != -1))
               .select("hist", "id", "v_request_id", "b", "v_kind", "v_max_broker_epoch", "v_own_epoch"))
    s = ev.filter(f.col("f") == "control_send").select(
        "hist", f.col("v_request_id").alias("v_request_id"), f.col("v_target").alias("b"),
        f.col("v_epoch_map").alias("emap"), f.col("id").alias("sid"),
    )
    j = r.join(s, ["hist", "v_request_id", "b"], "left").withColumn(
        "mapped", f.try_element_at("emap", f.col("b").cast("string"))
    )
    bad = j.filter(
        (f.col("v_own_epoch").isNotNull() & (f.col("v_max_broker_epoch") < f.col("v_own_epoch")))
        | (f.col("mapped").isNotNull() & f.col("v_own_epoch").isNotNull() & (f.col("mapped") != f.col("v_own_epoch")))
    )
    return anom(bad, fmt("broker %s applied %s with MaxBrokerEpoch %s built from map epoch %s; its own epoch is %s",
             "b", "v_kind", "v_max_broker_epoch", "mapped", "v_own_epoch"),
        f.filter(f.array("sid", "id"), lambda x: x.isNotNull()), broker=f.col("b"),
    )


_RECV = ("broker_epoch", "broker_id", "controller_epoch", "kind", "outcome", "own_epoch")
CONTROL_REQUEST_EPOCHS = PlanChecker("control_request_epochs", {
    "control_recv": (*_RECV, "error_code", "max_broker_epoch", "max_controller_epoch_seen"),
}, control_request_epochs)
CONTROLLER_EPOCHS = PlanChecker("controller_epochs", {
    "controller_elected": ("broker_id", "controller_epoch"), "control_send": ("broker_id", "controller_epoch"),
    "controller_zk_write": ("broker_id", "controller_epoch"),
}, controller_epochs)
CONTROLLER_WRITE_FENCING = PlanChecker("controller_write_fencing", {
    "controller_zk_write": ("checked_version", "controller_epoch", "op", "path"),
    "controller_elected": ("controller_epoch", "epoch_zk_version"),
}, controller_write_fencing)
CONTROLLED_SHUTDOWN_EPOCHS = PlanChecker("controlled_shutdown_epochs", {
    "controlled_shutdown_handled": ("broker_epoch", "broker_id", "cached_epoch", "leader_moves", "stop_replicas"),
}, controlled_shutdown_epochs)
MAX_BROKER_EPOCH = PlanChecker("max_broker_epoch", {
    "control_recv": (*_RECV, "max_broker_epoch", "request_id"),
    "control_send": ("epoch_map", "request_id", "target"),
}, max_broker_epoch)
