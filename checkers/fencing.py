"""Epoch-fencing invariants 1-11 (kafka-semantics.md) as native Spark DataFrame checks.

Each checker takes the parsed events (``checkers.events_df.parse``) and returns a DataFrame of
anomalies ``(hist, checker, message, event_ids, key)``: ``event_ids`` are the ``<src>/<seq>`` ids
that prove it, ``key`` a JSON object locating it (broker, partition, controller_epoch). Checkers
are partitioned by what they are local to (window ``partitionBy``); safety is decided from ids,
epochs, zxids and per-source order (``seq``), never from cross-source clocks. The merged-history
position ``idx`` is only used where the docstring says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ANOMALY_COLS = ("hist", "checker", "message", "event_ids", "key")


def _F():  # noqa: ANN202 - lazy pyspark import so importing this module is free
    from pyspark.sql import functions as F

    return F


def _W():  # noqa: ANN202
    from pyspark.sql import Window

    return Window


def _anom(df: DataFrame, checker: str, message: Column, ids: Column, **keys: Column) -> DataFrame:
    F = _F()
    key = F.to_json(F.struct(*[c.alias(k) for k, c in keys.items()])) if keys else F.lit("{}")
    return df.select(
        "hist", F.lit(checker).alias("checker"), message.alias("message"), ids.alias("event_ids"), key.alias("key")
    )


def _fmt(template: str, *cols: Column | str) -> Column:
    F = _F()
    return F.format_string(template, *[F.coalesce(F.col(c) if isinstance(c, str) else c, F.lit("null")) for c in cols])


def _broker(df: DataFrame) -> Column:
    F = _F()
    return F.coalesce(F.col("v_broker_id"), F.col("node"))


# 1 --------------------------------------------------------------------------------------------------
def registration_epochs(ev: DataFrame) -> DataFrame:
    """Per broker: successful registration epochs strictly increase (per-source order within an agent,
    merged-history order across restarts) and each epoch equals the czxid the agent read."""
    F, W = _F(), _W()
    r = ev.filter((F.col("f") == "register") & (F.col("type") == "ok")).withColumn("b", _broker(ev))
    w = W.partitionBy("hist", "b").orderBy("idx", "src", "seq")
    r = r.withColumn("prev_epoch", F.lag("v_epoch").over(w)).withColumn("prev_id", F.lag("id").over(w))
    dec = r.filter(F.col("prev_epoch").isNotNull() & (F.col("v_epoch") <= F.col("prev_epoch")))
    mism = r.filter(F.col("v_czxid").isNotNull() & (F.col("v_epoch") != F.col("v_czxid")))
    c = "registration_epochs"
    return _anom(
        dec, c, _fmt("broker %s registered epoch %s after epoch %s: epochs must strictly increase", "b", "v_epoch", "prev_epoch"),
        F.array("prev_id", "id"), broker=F.col("b"),
    ).unionByName(
        _anom(mism, c, _fmt("broker %s registered epoch %s but the znode czxid is %s", "b", "v_epoch", "v_czxid"),
              F.array("id"), broker=F.col("b"))
    )


# 2 --------------------------------------------------------------------------------------------------
def single_registrant(ev: DataFrame) -> DataFrame:
    """A claim (register ok) must hold the znode: ephemeralOwner = the claimant's session; no two
    sessions ever claim the same (broker, epoch); every znode the observer saw was a claimed one."""
    F = _F()
    r = ev.filter((F.col("f") == "register") & (F.col("type") == "ok")).withColumn("b", _broker(ev))
    c = "single_registrant"
    owner = r.filter(F.col("v_owner").isNotNull() & F.col("v_session_id").isNotNull()
                     & (F.col("v_owner") != F.col("v_session_id")))
    a1 = _anom(owner, c, _fmt("broker %s claims registration under session %s but the znode is owned by %s",
                              "b", "v_session_id", "v_owner"), F.array("id"), broker=F.col("b"))
    dup = (
        r.groupBy("hist", "b", "v_epoch")
        .agg(F.countDistinct("v_session_id").alias("n"), F.sort_array(F.collect_set("id")).alias("ids"))
        .filter(F.col("n") > 1)
    )
    a2 = _anom(dup, c, _fmt("broker %s: %s sessions claim the same epoch %s", "b", "n", "v_epoch"),
               F.slice("ids", 1, 20), broker=F.col("b"), epoch=F.col("v_epoch"))
    obs = ev.filter((F.col("f") == "broker_znode") & F.col("v_exists") & F.col("v_owner").isNotNull()).select(
        "hist", "id", F.col("v_broker_id").alias("b"), F.col("v_czxid").alias("cz"), F.col("v_owner").alias("ow")
    )
    claims = r.select("hist", "b", F.col("v_epoch").alias("cz"), F.col("v_session_id").alias("ow")).distinct()
    unclaimed = obs.join(claims, ["hist", "b", "cz", "ow"], "left_anti")
    agents = r.select("hist").distinct()  # only judge histories whose agents report registrations
    unclaimed = unclaimed.join(agents, "hist", "left_semi")
    a3 = _anom(unclaimed, c, _fmt("observer saw broker %s registered (czxid %s, owner %s) by no claimant",
                                  "b", "cz", "ow"), F.array("id"), broker=F.col("b"))
    return a1.unionByName(a2).unionByName(a3)


# 3 --------------------------------------------------------------------------------------------------
def registration_liveness(ev: DataFrame) -> DataFrame:
    """End-of-run form of invariant 3: a broker whose agent's last word is CONNECTED session S (not
    stopped) must be registered, owned by S, in the observer's final snapshot (when one was taken)."""
    F, W = _F(), _W()
    life = ev.filter(
        F.col("node").isNotNull()
        & (F.col("f").isin("session", "agent_stop", "agent_start") | ((F.col("f") == "register") & (F.col("type") == "ok")))
    )
    w = W.partitionBy("hist", "src").orderBy(F.col("seq").desc())
    last = life.withColumn("rn", F.row_number().over(w)).filter(F.col("rn") == 1)
    live = last.filter(
        ((F.col("f") == "session") & (F.col("v_state") == "connected")) | (F.col("f") == "register")
    ).select("hist", F.col("node").alias("b"), F.col("v_session_id").alias("s"), F.col("id").alias("aid"))
    final = ev.filter((F.col("f") == "broker_znode") & F.coalesce(F.col("v_final"), F.lit(False))).select(
        "hist", F.col("v_broker_id").alias("b"), F.col("v_exists").alias("ex"), F.col("v_owner").alias("ow"),
        F.col("id").alias("fid"),
    )
    j = live.join(final, ["hist", "b"], "inner").filter(
        ~F.coalesce(F.col("ex"), F.lit(False)) | (F.col("s").isNotNull() & (F.col("ow") != F.col("s")))
    )
    return _anom(
        j, "registration_liveness",
        _fmt("broker %s is up with CONNECTED session %s at the end, but its final znode exists=%s owner=%s",
             "b", "s", "ex", "ow"),
        F.array("aid", "fid"), broker=F.col("b"),
    )


# 4 --------------------------------------------------------------------------------------------------
def _applied_recv(ev: DataFrame) -> DataFrame:
    F = _F()
    return ev.filter((F.col("f") == "control_recv") & (F.col("v_outcome") == "applied")).withColumn("b", F.col("node"))


def control_request_epochs(ev: DataFrame) -> DataFrame:
    """Per broker: an applied control request had broker_epoch -1 or >= the broker's own epoch, and a
    controller_epoch >= the highest this broker had seen before (its earlier applied requests)."""
    F, W = _F(), _W()
    r = _applied_recv(ev)
    w = W.partitionBy("hist", "b").orderBy("seq").rowsBetween(W.unboundedPreceding, -1)
    r = r.withColumn("prev_max", F.max("v_controller_epoch").over(w)).withColumn(
        "prev_id", F.max_by("id", "v_controller_epoch").over(w)
    )
    c = "control_request_epochs"
    stale_b = r.filter(
        F.col("v_broker_epoch").isNotNull() & (F.col("v_broker_epoch") != -1)
        & F.col("v_own_epoch").isNotNull() & (F.col("v_broker_epoch") < F.col("v_own_epoch"))
    )
    a1 = _anom(stale_b, c, _fmt("broker %s applied %s with broker_epoch %s below its own epoch %s",
                                "b", "v_kind", "v_broker_epoch", "v_own_epoch"), F.array("id"), broker=F.col("b"))
    seen = F.greatest(F.col("prev_max"), F.col("v_max_controller_epoch_seen"))
    stale_c = r.filter(seen.isNotNull() & (F.col("v_controller_epoch") < seen))
    a2 = _anom(stale_c, c, _fmt("broker %s applied %s from controller epoch %s after seeing epoch %s",
                                "b", "v_kind", "v_controller_epoch", seen),
               F.filter(F.array("prev_id", "id"), lambda x: x.isNotNull()), broker=F.col("b"))
    return a1.unionByName(a2)


# 5 --------------------------------------------------------------------------------------------------
def controller_epochs(ev: DataFrame) -> DataFrame:
    """Elected controller epochs strictly increase (merged-history order: elections are seconds
    apart), and per controller epoch only one broker is elected, sends control requests or commits
    ZooKeeper writes."""
    F, W = _F(), _W()
    el = ev.filter(F.col("f") == "controller_elected").withColumn("b", _broker(ev))
    w = W.partitionBy("hist").orderBy("idx", "src", "seq")
    el2 = el.withColumn("prev", F.lag("v_controller_epoch").over(w)).withColumn("prev_id", F.lag("id").over(w))
    c = "controller_epochs"
    dec = el2.filter(F.col("prev").isNotNull() & (F.col("v_controller_epoch") <= F.col("prev")))
    a1 = _anom(dec, c, _fmt("controller epoch %s elected after epoch %s: must strictly increase",
                            "v_controller_epoch", "prev"), F.array("prev_id", "id"),
               controller_epoch=F.col("v_controller_epoch"))
    acts = ev.filter(
        F.col("f").isin("controller_elected", "control_send")
        | ((F.col("f") == "controller_zk_write") & (F.col("type") == "ok"))
    ).select("hist", "id", F.col("v_controller_epoch").alias("ce"), _broker(ev).alias("b"))
    multi = (
        acts.filter(F.col("ce").isNotNull())
        .groupBy("hist", "ce")
        .agg(F.sort_array(F.collect_set("b")).alias("bs"), F.min_by("id", "b").alias("i1"), F.max_by("id", "b").alias("i2"))
        .filter(F.size("bs") > 1)
    )
    a2 = _anom(multi, c, _fmt("controller epoch %s used by brokers %s", "ce", F.array_join("bs", ",")),
               F.array("i1", "i2"), controller_epoch=F.col("ce"))
    return a1.unionByName(a2)


# 6 --------------------------------------------------------------------------------------------------
def controller_write_fencing(ev: DataFrame) -> DataFrame:
    """Every successful controller ZooKeeper write carried check(/controller_epoch, V) with V the
    version its controller epoch's election wrote (the version current while that epoch ruled)."""
    F = _F()
    wr = ev.filter((F.col("f") == "controller_zk_write") & (F.col("type") == "ok"))
    c = "controller_write_fencing"
    unf = wr.filter(F.col("v_checked_version").isNull())
    a1 = _anom(unf, c, _fmt("controller epoch %s committed %s %s without a /controller_epoch check",
                            "v_controller_epoch", "v_op", "v_path"), F.array("id"),
               controller_epoch=F.col("v_controller_epoch"))
    el = ev.filter(F.col("f") == "controller_elected").select(
        "hist", F.col("v_controller_epoch").alias("ce"), F.col("v_epoch_zk_version").alias("ver"), F.col("id").alias("eid")
    )
    j = wr.filter(F.col("v_checked_version").isNotNull()).join(
        el, (wr.hist == el.hist) & (wr.v_controller_epoch == el.ce), "inner"
    ).filter(F.col("ver").isNotNull() & (F.col("v_checked_version") != F.col("ver"))).drop(el.hist)
    a2 = _anom(j, c, _fmt("write under controller epoch %s checked version %s but that epoch's version is %s",
                          "v_controller_epoch", "v_checked_version", "ver"), F.array("eid", "id"),
               controller_epoch=F.col("v_controller_epoch"))
    return a1.unionByName(a2)


# 7 --------------------------------------------------------------------------------------------------
def bounce_handling(ev: DataFrame) -> DataFrame:
    """After a BrokerChange where N's czxid increased (``bounced``), the same controller later sends N
    a full UpdateMetadata and a LeaderAndIsr carrying the new epoch (per-source order), unless it
    resigned or saw N die or bounce again first."""
    F = _F()
    bc = ev.filter(F.col("f") == "broker_change").select(
        "hist", "src", "seq", "id", F.explode_outer("v_bounced").alias("n"), "v_live"
    ).filter(F.col("n").isNotNull()).withColumn("e", F.element_at("v_live", F.col("n").cast("string")))
    sends = ev.filter(F.col("f") == "control_send").select(
        "hist", "src", F.col("seq").alias("s_seq"), F.col("v_target").alias("n"), F.col("v_kind").alias("kind"),
        F.coalesce(F.col("v_full"), F.lit(False)).alias("full"), F.col("v_broker_epoch").alias("be"),
    )
    got = (
        bc.join(sends, ["hist", "src", "n"], "left")
        .withColumn("hit", (F.col("s_seq") > F.col("seq")) & (F.col("be") == F.col("e")))
        .groupBy("hist", "src", "seq", "id", "n", "e")
        .agg(
            F.max(F.col("hit") & (F.col("kind") == "UpdateMetadata") & F.col("full")).alias("um"),
            F.max(F.col("hit") & (F.col("kind") == "LeaderAndIsr")).alias("lai"),
        )
    )
    ends = ev.filter(F.col("f") == "controller_resigned").select("hist", "src", F.col("seq").alias("x_seq"))
    later = ev.filter(F.col("f") == "broker_change").select(
        "hist", "src", F.col("seq").alias("x_seq"),
        F.array_union(F.coalesce("v_dead", F.array()), F.coalesce("v_bounced", F.array())).alias("ns"),
    )
    missing = got.filter(~(F.coalesce("um", F.lit(False)) & F.coalesce("lai", F.lit(False))))
    resigned = missing.join(ends, ["hist", "src"]).filter(F.col("x_seq") > F.col("seq")).select("hist", "src", "seq", "n")
    superseded = (
        missing.join(later, ["hist", "src"])
        .filter((F.col("x_seq") > F.col("seq")) & F.array_contains("ns", F.col("n")))
        .select("hist", "src", "seq", "n")
    )
    bad = missing.join(resigned.unionByName(superseded), ["hist", "src", "seq", "n"], "left_anti")
    return _anom(
        bad, "bounce_handling",
        _fmt("controller saw broker %s bounce to epoch %s but sent no %s", "n", "e",
             F.when(~F.coalesce("um", F.lit(False)), F.lit("full UpdateMetadata")).otherwise(F.lit("LeaderAndIsr"))),
        F.array("id"), broker=F.col("n"),
    )


# 8 --------------------------------------------------------------------------------------------------
def controlled_shutdown_epochs(ev: DataFrame) -> DataFrame:
    """A ControlledShutdown whose broker_epoch is below the controller's cached epoch for N moves no
    leader and stops no replica."""
    F = _F()
    h = ev.filter(F.col("f") == "controlled_shutdown_handled").withColumn("b", _broker(ev))
    n_moves = F.coalesce(F.json_array_length("v_leader_moves"), F.lit(0))
    n_stops = F.coalesce(F.json_array_length("v_stop_replicas"), F.lit(0))
    bad = h.filter(
        F.col("v_broker_epoch").isNotNull() & F.col("v_cached_epoch").isNotNull()
        & (F.col("v_broker_epoch") < F.col("v_cached_epoch")) & ((n_moves > 0) | (n_stops > 0))
    )
    return _anom(
        bad, "controlled_shutdown_epochs",
        _fmt("stale ControlledShutdown of broker %s (epoch %s < cached %s) caused %s leader moves, %s StopReplicas",
             F.col("v_broker_id"), "v_broker_epoch", "v_cached_epoch", n_moves, n_stops),
        F.array("id"), broker=F.col("v_broker_id"),
    )


# 9 --------------------------------------------------------------------------------------------------
def isr_expansion(ev: DataFrame) -> DataFrame:
    """A committed AlterPartition adding replica r (listed in ``based_on_fetch``) rests on a fetch by r
    whose replica_epoch, and an ISR entry whose epoch, equal r's live epoch at commit."""
    F = _F()
    hd = ev.filter(
        (F.col("f") == "alter_partition_handled")
        & ((F.col("v_error_code") == 0) | F.col("v_outcome").isin("accepted", "applied", "committed", "ok"))
    ).select("hist", F.col("v_request_id").alias("rid"), F.col("v_live").alias("live"), F.col("id").alias("hid"))
    ap = ev.filter(F.col("f") == "alter_partition").select(
        "hist", F.col("v_request_id").alias("rid"), "v_topic", "v_partition", F.col("id").alias("aid"),
        F.explode("v_based_on_fetch").alias("r", "frid"), "v_new_isr_with_epochs",
    )
    fe = ev.filter(F.col("f") == "fetch").select(
        "hist", F.col("v_request_id").alias("frid"), F.col("v_replica").alias("fr"),
        F.col("v_replica_epoch").alias("fepoch"), F.col("id").alias("fid"),
    )
    j = (
        ap.join(hd, ["hist", "rid"])
        .withColumn("cur", F.element_at("live", F.col("r")))
        .withColumn("isr_e", F.filter("v_new_isr_with_epochs", lambda s: s["id"] == F.col("r").cast("bigint")))
        .withColumn("isr_epoch", F.element_at(F.col("isr_e.epoch"), 1))
        .join(fe, ["hist", "frid"], "left")
    )
    bad = j.filter(
        F.col("cur").isNull()
        | (F.col("fepoch").isNotNull() & (F.col("fepoch") != F.col("cur")))
        | (F.col("isr_epoch").isNotNull() & (F.col("isr_epoch") != F.col("cur")))
    )
    return _anom(
        bad, "isr_expansion",
        _fmt("%s-%s: ISR expansion adding replica %s rests on fetch epoch %s / ISR epoch %s but its live epoch is %s",
             "v_topic", "v_partition", "r", "fepoch", "isr_epoch", "cur"),
        F.filter(F.array("aid", "fid", "hid"), lambda x: x.isNotNull()),
        topic=F.col("v_topic"), partition=F.col("v_partition"), replica=F.col("r"),
    )


# 10 -------------------------------------------------------------------------------------------------
def partition_states(ev: DataFrame) -> DataFrame:
    """Per partition, in zxid order: leader_epoch and zk_version never decrease, the ISR is never
    empty and the leader is -1 or in the ISR."""
    F, W = _F(), _W()
    ps = ev.filter(F.col("f") == "partition_state")
    w = W.partitionBy("hist", "v_topic", "v_partition").orderBy(F.coalesce("v_zxid", "idx"), "src", "seq")
    ps = (
        ps.withColumn("p_le", F.lag("v_leader_epoch").over(w))
        .withColumn("p_ver", F.lag("v_zk_version").over(w))
        .withColumn("p_id", F.lag("id").over(w))
    )
    c = "partition_states"
    keys = {"topic": F.col("v_topic"), "partition": F.col("v_partition")}
    dec = ps.filter((F.col("v_leader_epoch") < F.col("p_le")) | (F.col("v_zk_version") < F.col("p_ver")))
    a1 = _anom(dec, c, _fmt("%s-%s went from leader_epoch %s/version %s to %s/%s", "v_topic", "v_partition",
                            "p_le", "p_ver", "v_leader_epoch", "v_zk_version"), F.array("p_id", "id"), **keys)
    empty = ps.filter(F.col("v_isr").isNotNull() & (F.size("v_isr") == 0))
    a2 = _anom(empty, c, _fmt("%s-%s committed an empty ISR", "v_topic", "v_partition"), F.array("id"), **keys)
    out = ps.filter(
        F.col("v_isr").isNotNull() & (F.size("v_isr") > 0) & (F.col("v_leader") != -1)
        & ~F.array_contains("v_isr", F.col("v_leader"))
    )
    a3 = _anom(out, c, _fmt("%s-%s leader %s is not in ISR %s", "v_topic", "v_partition", "v_leader",
                            F.array_join("v_isr", ",")), F.array("id"), **keys)
    return a1.unionByName(a2).unionByName(a3)


# 11 -------------------------------------------------------------------------------------------------
def max_broker_epoch(ev: DataFrame) -> DataFrame:
    """Max-broker-epoch mode: a request N applied with MaxBrokerEpoch M had M >= N's own epoch and was
    built (control_send, same request_id) from a map holding N's current epoch."""
    F = _F()
    # -1 is the wire value for "not in max-broker-epoch mode": the per-broker check governs then.
    r = _applied_recv(ev).filter(F.col("v_max_broker_epoch").isNotNull() & (F.col("v_max_broker_epoch") != -1))
    s = ev.filter(F.col("f") == "control_send").select(
        "hist", F.col("v_request_id").alias("v_request_id"), F.col("v_target").alias("b"),
        F.col("v_epoch_map").alias("emap"), F.col("id").alias("sid"),
    )
    j = r.join(s, ["hist", "v_request_id", "b"], "left").withColumn(
        "mapped", F.element_at("emap", F.col("b").cast("string"))
    )
    bad = j.filter(
        (F.col("v_own_epoch").isNotNull() & (F.col("v_max_broker_epoch") < F.col("v_own_epoch")))
        | (F.col("mapped").isNotNull() & F.col("v_own_epoch").isNotNull() & (F.col("mapped") != F.col("v_own_epoch")))
    )
    return _anom(
        bad, "max_broker_epoch",
        _fmt("broker %s applied %s with MaxBrokerEpoch %s built from map epoch %s; its own epoch is %s",
             "b", "v_kind", "v_max_broker_epoch", "mapped", "v_own_epoch"),
        F.filter(F.array("sid", "id"), lambda x: x.isNotNull()), broker=F.col("b"),
    )


CHECKERS: dict[str, Callable[[DataFrame], DataFrame]] = {
    "registration_epochs": registration_epochs,  # 1
    "single_registrant": single_registrant,  # 2
    "registration_liveness": registration_liveness,  # 3
    "control_request_epochs": control_request_epochs,  # 4
    "controller_epochs": controller_epochs,  # 5
    "controller_write_fencing": controller_write_fencing,  # 6
    "bounce_handling": bounce_handling,  # 7
    "controlled_shutdown_epochs": controlled_shutdown_epochs,  # 8
    "isr_expansion": isr_expansion,  # 9
    "partition_states": partition_states,  # 10
    "max_broker_epoch": max_broker_epoch,  # 11
}


def all_anomalies(ev: DataFrame, names: list[str] | None = None) -> DataFrame:
    """Union of every checker's anomalies (one Spark plan, one job to collect)."""
    dfs = [CHECKERS[n](ev) for n in (names or list(CHECKERS))]
    out = dfs[0]
    for d in dfs[1:]:
        out = out.unionByName(d)
    return out
