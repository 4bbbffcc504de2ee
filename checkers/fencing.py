"""Epoch-fencing invariants 1-11 (kafka-semantics.md) as native Spark DataFrame checks.

Each checker takes the parsed events (``checkers.events_df.parse``) and returns a DataFrame of
anomalies ``(hist, checker, message, event_ids, key)``: ``event_ids`` are the ``<src>/<seq>`` ids
that prove it, ``key`` a JSON object locating it (broker, partition, controller_epoch), ``verdict``
``"invalid"`` (a proven violation) or ``"unknown"`` (something the checker had to judge but could not
decide from the history: a missing or malformed field, an unresolvable reference; ``message`` says
why). A checker with unknown rows and no invalid ones is ``unknown``, never valid. Checkers
are partitioned by what they are local to (window ``partitionBy``); safety is decided from ids,
epochs, zxids and per-source order (``seq``), never from cross-source clocks. The merged-history
position ``idx`` is only used where the docstring says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ANOMALY_COLS = ("hist", "checker", "message", "event_ids", "key", "verdict")
GRACE_S = 3.0  # bounce_handling: a registration this close to run_end owes nothing yet


def _F():  # noqa: ANN202 - lazy pyspark import so importing this module is free
    from pyspark.sql import functions as F

    return F


def _W():  # noqa: ANN202
    from pyspark.sql import Window

    return Window


def _anom(df: DataFrame, checker: str, message: Column, ids: Column, *, verdict: str | Column = "invalid",
          **keys: Column) -> DataFrame:
    F = _F()
    key = F.to_json(F.struct(*[c.alias(k) for k, c in keys.items()])) if keys else F.lit("{}")
    return df.select(
        "hist", F.lit(checker).alias("checker"), message.alias("message"), ids.alias("event_ids"), key.alias("key"),
        (F.lit(verdict) if isinstance(verdict, str) else verdict).alias("verdict"),
    )


def _fmt(template: str, *cols: Column | str) -> Column:
    """format_string with every argument rendered as text (null -> "null"). Arguments are cast to string
    first: ``coalesce(<bigint>, 'null')`` would make Spark cast 'null' to BIGINT, which ANSI mode rejects."""
    F = _F()
    return F.format_string(
        template, *[F.coalesce((F.col(c) if isinstance(c, str) else c).cast("string"), F.lit("null")) for c in cols]
    )


def _ids(*cols: str) -> Column:
    """The non-null ids among ``cols`` (event_ids never holds nulls)."""
    F = _F()
    return F.filter(F.array(*[F.col(c) for c in cols]), lambda x: x.isNotNull())


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
    sessions ever claim the same (broker, epoch); every znode the observer saw was a claimed one (unless
    the broker's agent ran a pipelined registration under a session it never learnt)."""
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
    # A pipelined registration whose session the agent never learnt (pipeline_register
    # session_learned=false, KAFKA-14845) creates a znode nobody can claim: explained, not an anomaly.
    unlearnt = ev.filter((F.col("f") == "pipeline_register") & (F.col("v_session_learned") == F.lit(False))).select(
        "hist", _broker(ev).alias("b")
    )
    unclaimed = unclaimed.join(unlearnt, ["hist", "b"], "left_anti")
    a3 = _anom(unclaimed, c, _fmt("observer saw broker %s registered (czxid %s, owner %s) by no claimant",
                                  "b", "cz", "ow"), F.array("id"), broker=F.col("b"))
    return a1.unionByName(a2).unionByName(a3)


# 3 --------------------------------------------------------------------------------------------------
def registration_liveness(ev: DataFrame) -> DataFrame:
    """End-of-run form of invariant 3: a broker whose agent's last word is CONNECTED session S (not
    stopped, and listed in ``run_end.live_brokers`` when the harness wrote one) must be registered, owned
    by S, in the observer's final snapshot (when one was taken)."""
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
    # The harness's run_end lists the brokers still up: a SIGKILLed agent writes no agent_stop.
    gone = ev.filter((F.col("f") == "run_end") & F.col("v_live_brokers").isNotNull()).select(
        "hist", F.col("v_live_brokers").alias("up")
    )
    live = live.join(gone, "hist", "left").filter(F.col("up").isNull() | F.array_contains("up", F.col("b"))).drop("up")
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
    """Invariant 7, decided from the registrations themselves (a pre-KIP-380 controller never fills its
    ``broker_change.bounced`` list, so that list cannot be the trigger). A bounce is a ``register ok``
    of broker N whose epoch E grew over N's previous one (per-source order of ``agent:N``). Unless N's
    own later events supersede it (another registration, ``deregistered``, ``agent_stop``,
    ``agent_start``) or a controller later saw N dead, some controller must send N a full
    UpdateMetadata and a LeaderAndIsr carrying broker_epoch E (epochs tie sends to registrations, no
    clocks). The only clock use is the liveness window: a registration within ``GRACE_S`` of
    ``run_end`` owes nothing yet; without ``run_end`` an unhandled bounce is unknown. Histories with
    no controller activity (no ``broker_change``) are not judged. The controller's own view (its
    ``bounced`` list, answered by the same controller unless it resigned or saw N die or bounce
    again) is checked too, for bounces whose ``register ok`` is missing from the history."""
    F, W = _F(), _W()
    c = "bounce_handling"
    life = ev.filter(
        F.col("node").isNotNull()
        & (((F.col("f") == "register") & (F.col("type") == "ok"))
           | F.col("f").isin("deregistered", "agent_stop", "agent_start"))
    )
    w = W.partitionBy("hist", "src").orderBy("seq")
    regs = (
        life.withColumn("later", F.lead("id").over(w))
        .filter(F.col("f") == "register")
        .withColumn("prev_e", F.lag("v_epoch").over(w))
        .withColumn("first", F.row_number().over(w) == 1)
        .filter(~F.col("first") & F.col("later").isNull())
        .select("hist", "idx", "t_wall", "id", F.col("node").alias("n"), F.col("v_epoch").alias("e"), "prev_e")
    )
    bc = ev.filter(F.col("f") == "broker_change")
    regs = regs.join(bc.select("hist").distinct(), "hist", "left_semi")  # a controller acted in this history
    ends = ev.filter(F.col("f") == "run_end").groupBy("hist").agg(F.max("t_wall").alias("end"))
    sends = (
        ev.filter((F.col("f") == "control_send") & ((F.col("v_kind") == "LeaderAndIsr")
                                                    | ((F.col("v_kind") == "UpdateMetadata") & F.col("v_full"))))
        .groupBy("hist", F.col("v_target").alias("n"), F.col("v_broker_epoch").alias("e"))
        .agg(F.max(F.col("v_kind") == "UpdateMetadata").alias("um"), F.max(F.col("v_kind") == "LeaderAndIsr").alias("lai"))
    )
    died = bc.select("hist", F.col("idx").alias("d_idx"), F.explode_outer("v_dead").alias("n"))
    views = bc.select("hist", F.col("idx").alias("v_idx"), F.col("id").alias("vid"), "v_live", "v_bounced")
    cand = (
        regs.join(ends, "hist", "left")
        .filter(F.col("end").isNull() | F.col("e").isNull() | (F.col("t_wall") <= F.col("end") - GRACE_S))
        .join(sends, ["hist", "n", "e"], "left")
        .filter(~(F.coalesce("um", F.lit(False)) & F.coalesce("lai", F.lit(False))))
    )
    died = died.select(F.col("hist").alias("d_hist"), F.col("n").alias("d_n"), "d_idx")
    cand = cand.join(died, (F.col("hist") == F.col("d_hist")) & (F.col("n") == F.col("d_n"))
                     & (F.col("d_idx") > F.col("idx")), "left_anti")  # a controller later saw N dead
    last_view = (
        cand.join(views, "hist", "left").filter(F.col("v_idx").isNull() | (F.col("v_idx") > F.col("idx")))
        .groupBy("hist", "id", "n", "e", "prev_e", "end", "um", "lai")
        .agg(F.max_by("vid", "v_idx").alias("vid"), F.max_by("v_live", "v_idx").alias("live"))
        .withColumn("seen", F.try_element_at("live", F.col("n").cast("string")))
    )
    missing = F.concat_ws(" or ", F.when(~F.coalesce("um", F.lit(False)), F.lit("full UpdateMetadata")),
                          F.when(~F.coalesce("lai", F.lit(False)), F.lit("LeaderAndIsr")))
    decidable = F.col("end").isNotNull() & F.col("e").isNotNull()
    a1 = _anom(
        last_view.filter(decidable), c,
        _fmt("broker %s re-registered with epoch %s (was %s) but no controller sent it %s with that epoch "
             "(the controller's last view holds epoch %s): the bounce was missed, its replicas stay offline",
             "n", "e", "prev_e", missing, "seen"),
        _ids("id", "vid"), broker=F.col("n"),
    )
    a2 = _anom(
        last_view.filter(~decidable), c,
        _fmt("cannot judge broker %s's re-registration (epoch %s): %s", "n", "e",
             F.when(F.col("e").isNull(), F.lit("its epoch is missing or malformed"))
             .otherwise(F.lit("no run_end, so whether the controller had time to send is unknown"))),
        _ids("id"), verdict="unknown", broker=F.col("n"),
    )
    # The controller's own classification (KIP-380 controllers): N listed as bounced -> same controller sends.
    bcb = bc.select(
        "hist", "src", "seq", "id", F.explode_outer("v_bounced").alias("n"), "v_live"
    ).filter(F.col("n").isNotNull()).withColumn("e", F.try_element_at("v_live", F.col("n").cast("string")))
    csends = ev.filter(F.col("f") == "control_send").select(
        "hist", "src", F.col("seq").alias("s_seq"), F.col("v_target").alias("n"), F.col("v_kind").alias("kind"),
        F.coalesce(F.col("v_full"), F.lit(False)).alias("full"), F.col("v_broker_epoch").alias("be"),
    )
    got = (
        bcb.join(csends, ["hist", "src", "n"], "left")
        .withColumn("hit", (F.col("s_seq") > F.col("seq")) & (F.col("be") == F.col("e")))
        .groupBy("hist", "src", "seq", "id", "n", "e")
        .agg(
            F.max(F.col("hit") & (F.col("kind") == "UpdateMetadata") & F.col("full")).alias("um"),
            F.max(F.col("hit") & (F.col("kind") == "LeaderAndIsr")).alias("lai"),
        )
    )
    resigns = ev.filter(F.col("f") == "controller_resigned").select("hist", "src", F.col("seq").alias("x_seq"))
    later = bc.select(
        "hist", "src", F.col("seq").alias("x_seq"),
        F.array_union(F.coalesce("v_dead", F.array()), F.coalesce("v_bounced", F.array())).alias("ns"),
    )
    cmiss = got.filter(~(F.coalesce("um", F.lit(False)) & F.coalesce("lai", F.lit(False))))
    resigned = cmiss.join(resigns, ["hist", "src"]).filter(F.col("x_seq") > F.col("seq")).select("hist", "src", "seq", "n")
    superseded = (
        cmiss.join(later, ["hist", "src"])
        .filter((F.col("x_seq") > F.col("seq")) & F.array_contains("ns", F.col("n")))
        .select("hist", "src", "seq", "n")
    )
    cbad = (
        cmiss.join(resigned.unionByName(superseded), ["hist", "src", "seq", "n"], "left_anti")
        .join(regs.select("hist", "n", "e"), ["hist", "n", "e"], "left_anti")  # judged from the registration above
        .join(ends, "hist", "left")
    )
    a3 = _anom(
        cbad, c,
        _fmt("controller saw broker %s bounce to epoch %s but sent no %s", "n", "e",
             F.when(~F.coalesce("um", F.lit(False)), F.lit("full UpdateMetadata")).otherwise(F.lit("LeaderAndIsr"))),
        F.array("id"), broker=F.col("n"),
    )
    return a1.unionByName(a2).unionByName(a3)


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
    """Invariant 9: a committed AlterPartition (``alter_partition_handled`` accepted) that adds replica
    r rests on a fetch by r's incarnation current at commit. Added = committed ISR minus the ISR of
    the state it replaced (``partition_state`` version ``partition_epoch - 1``: the write is
    conditional on the version). The basis is ``based_on_fetch[r]``, a fetch EVENT id (fetch
    request ids repeat across restarts); its ``replica_epoch`` must equal r's registration epoch
    current at commit: the largest czxid of r (``register ok`` epochs and observer snapshots) below
    the commit's zxid (the committed ``partition_state``), else the controller's ``live`` map at
    commit. ``new_isr_with_epochs`` is not used: in ZK mode every entry is -1. Anything that cannot be
    resolved (no request, no previous state, no fetch, epoch -1 or missing) is unknown, not valid."""
    F = _F()
    c = "isr_expansion"
    hd = ev.filter(
        (F.col("f") == "alter_partition_handled")
        & (F.col("v_outcome").isin("accepted", "applied", "committed", "ok")
           | (F.col("v_outcome").isNull() & (F.col("v_error_code") == 0)))
    ).select(
        "hist", F.col("v_request_id").alias("rid"), F.col("v_leader").alias("ldr"), F.col("v_broker_epoch").alias("be"),
        F.col("v_topic").alias("topic"), F.col("v_partition").alias("part"), F.col("v_partition_epoch").alias("pe"),
        F.col("v_isr").alias("isr"), F.col("v_live").alias("live"), F.col("id").alias("hid"),
    )
    ap = ev.filter(F.col("f") == "alter_partition").select(
        "hist", F.col("v_request_id").alias("a_rid"), _broker(ev).alias("a_ldr"), F.col("v_broker_epoch").alias("a_be"),
        F.col("v_topic").alias("a_topic"), F.col("v_partition").alias("a_part"), F.col("id").alias("aid"),
        F.col("v_based_on_fetch").alias("bof"),
    )
    # Request ids are unique per leader incarnation: pair on (request id, leader, leader's broker epoch).
    j = hd.join(ap, (hd.hist == ap.hist) & (hd.rid == ap.a_rid) & hd.ldr.eqNullSafe(ap.a_ldr) & hd.be.eqNullSafe(ap.a_be)
                & hd.topic.eqNullSafe(ap.a_topic) & hd.part.eqNullSafe(ap.a_part), "left").drop(ap.hist)
    j = j.dropDuplicates(["hist", "hid"])
    ps = ev.filter(F.col("f") == "partition_state").groupBy(
        "hist", F.col("v_topic").alias("topic"), F.col("v_partition").alias("part"), F.col("v_zk_version").alias("ver")
    ).agg(F.max_by("v_isr", "idx").alias("s_isr"), F.max("v_zxid").alias("s_zxid"), F.max_by("id", "idx").alias("s_id"))
    prev = ps.select("hist", "topic", "part", (F.col("ver") + 1).alias("pe"), F.col("s_isr").alias("prev_isr"))
    com = ps.select("hist", "topic", "part", F.col("ver").alias("pe"), F.col("s_zxid").alias("czx"), F.col("s_id").alias("sid"))
    j = j.join(prev, ["hist", "topic", "part", "pe"], "left").join(com, ["hist", "topic", "part", "pe"], "left")
    # Handled events we cannot place (no ISR, no previous state) are unknown: the added set is unknowable.
    undecided = j.filter(F.col("isr").isNull() | F.col("prev_isr").isNull())
    u1 = _anom(
        undecided, c,
        _fmt("%s-%s: cannot tell which replicas the committed expansion %s added (committed ISR %s, no state "
             "before partition epoch %s in the history)", "topic", "part", "rid", F.array_join("isr", ","), "pe"),
        _ids("hid"), verdict="unknown", topic=F.col("topic"), partition=F.col("part"),
    )
    j = j.filter(F.col("isr").isNotNull() & F.col("prev_isr").isNotNull()).withColumn(
        "r", F.explode(F.array_except("isr", "prev_isr"))
    ).withColumn("frid", F.try_element_at(F.coalesce("bof", F.create_map().cast("map<string,string>")),
                                      F.col("r").cast("string")))
    fe = ev.filter(F.col("f") == "fetch").select(
        "hist", F.col("id").alias("frid"), F.col("id").alias("fid"), F.col("v_replica").alias("fr"),
        F.col("v_replica_epoch").alias("fepoch"),
    )
    reg = ev.filter((F.col("f") == "register") & (F.col("type") == "ok")).select(
        "hist", _broker(ev).alias("r"), F.col("v_epoch").alias("re")
    ).unionByName(ev.filter((F.col("f") == "broker_znode") & F.coalesce("v_exists", F.lit(False))).select(
        "hist", F.col("v_broker_id").alias("r"), F.col("v_czxid").alias("re")
    )).filter(F.col("re").isNotNull()).distinct()
    cur_reg = (
        j.select("hist", "hid", "r", "czx").join(reg, ["hist", "r"])
        .filter(F.col("czx").isNotNull() & (F.col("re") < F.col("czx")))
        .groupBy("hist", "hid", "r").agg(F.max("re").alias("reg_e"))
    )
    j = (
        j.join(fe, ["hist", "frid"], "left").join(cur_reg, ["hist", "hid", "r"], "left")
        .withColumn("cur", F.coalesce("reg_e", F.try_element_at("live", F.col("r").cast("string"))))
        .withColumn("basis", F.when(F.col("reg_e").isNotNull(), F.lit("registration current at the commit's zxid"))
                    .otherwise(F.lit("controller's live epoch at commit")))
    )
    why = (
        F.when(F.col("aid").isNull(), F.lit("no alter_partition event for the request"))
        .when(F.col("frid").isNull(), F.lit("based_on_fetch names no fetch for the replica"))
        .when(F.col("fid").isNull(), F.format_string("based_on_fetch names %s, which is no fetch event", "frid"))
        .when(~F.col("fr").eqNullSafe(F.col("r")), F.lit("the named fetch is by another replica"))
        .when(F.col("fepoch").isNull() | (F.col("fepoch") == -1), F.lit("the fetch carries no replica_epoch"))
        .when(F.col("cur").isNull(), F.lit("no registration of the replica is known at commit"))
    )
    j = j.withColumn("why", why)
    u2 = _anom(
        j.filter(F.col("why").isNotNull()), c,
        _fmt("%s-%s: cannot judge expansion %s adding replica %s: %s", "topic", "part", "rid", "r", "why"),
        _ids("aid", "fid", "hid"), verdict="unknown", topic=F.col("topic"), partition=F.col("part"), replica=F.col("r"),
    )
    bad = j.filter(F.col("why").isNull() & (F.col("fepoch") != F.col("cur")))
    a1 = _anom(
        bad, c,
        _fmt("%s-%s: committed ISR expansion %s added replica %s on a fetch by its incarnation with epoch %s, "
             "but its epoch at commit was %s (%s): a stale incarnation entered the ISR",
             "topic", "part", "rid", "r", "fepoch", "cur", "basis"),
        _ids("aid", "fid", "hid", "sid"), topic=F.col("topic"), partition=F.col("part"), replica=F.col("r"),
    )
    return a1.unionByName(u1).unionByName(u2)


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
        "mapped", F.try_element_at("emap", F.col("b").cast("string"))
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


# What the checkers read, so ``fencing_events`` can cache just that once for all of them: the event
# kinds (``f``) any checker filters on and the columns any checker names. A checker for a new kind
# must add it here (rows of other kinds are dropped); a column missing here fails analysis loudly.
KINDS = (
    "register", "broker_znode", "pipeline_register", "session", "agent_stop", "agent_start", "deregistered",
    "run_end", "control_recv", "control_send", "controller_elected", "controller_zk_write", "controller_resigned",
    "broker_change", "controlled_shutdown_handled", "alter_partition", "alter_partition_handled", "fetch",
    "partition_state",
)
COLUMNS = (
    "hist", "src", "seq", "id", "idx", "t_wall", "type", "f", "node",
    *(f"v_{n}" for n in (
        "broker_id", "epoch", "czxid", "session_id", "owner", "state", "exists", "final", "controller_epoch",
        "epoch_zk_version", "checked_version", "op", "path", "zxid", "live", "dead", "bounced", "request_id",
        "kind", "target", "broker_epoch", "max_broker_epoch", "epoch_map", "full", "own_epoch",
        "max_controller_epoch_seen", "outcome", "error_code", "cached_epoch", "leader_moves", "stop_replicas",
        "topic", "partition", "replica", "replica_epoch", "leader", "leader_epoch", "partition_epoch", "isr",
        "zk_version", "based_on_fetch", "live_brokers", "session_learned",
    )),
)


def fencing_events(ev: DataFrame) -> DataFrame:
    """The rows and columns the checkers read (not cached: the caller decides how to keep it)."""
    F = _F()
    return ev.filter(F.col("f").isin(*KINDS)).select(*COLUMNS)


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
