"""Epoch-fencing invariants about one broker's registrations, as Spark plans: 2 (one registrant per
znode) and 7 (a bounce is handled: KIP-380's broker epoch in the controller's requests).

Safety is decided from ids, epochs, zxids and per-source order (``seq``); where a plan uses the
merged-history position ``idx`` (which orders events of different sources by their wall clocks)
or ``t_wall``, its docstring says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from checkers.plans import Case, F, PlanChecker, W, anom, anoms, broker, few, fmt, ids, one, reuse
from history.kinds import REGISTRATION_OWNER

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

GRACE_S = 3.0  # bounce_handling: a registration this close to run_end owes nothing yet


# 2 --------------------------------------------------------------------------------------------------
def single_registrant(ev: DataFrame) -> DataFrame:
    """A claim (register ok) must hold the znode: ephemeralOwner = the claimant's session; no two
    sessions ever claim the same (broker, epoch); every znode the observer saw was a claimed one (unless
    the broker's agent ran a pipelined registration under a session it never learnt)."""
    f = F()
    r = ev.filter((f.col("f") == "register") & (f.col("type") == "ok")).withColumn("b", broker())
    owner = r.filter(f.col("v_owner").isNotNull() & f.col("v_session_id").isNotNull()
                     & (f.col("v_owner") != f.col("v_session_id")))
    a1 = anom(owner, fmt("broker %s claims registration under session %s but the znode is owned by %s",
                              "b", "v_session_id", "v_owner"), f.array("id"), broker=f.col("b"))
    # Two sessions claim one epoch when its smallest and largest session differ: a cheap aggregate over
    # every claim; only the claims of such epochs are collected, to name their sessions and events.
    # A claim or an observation missing what this pairs by cannot be paired: unknown, never an anomaly
    # (a claim with no epoch would make the znode it created look unclaimed).
    incomplete = r.filter(f.col("v_epoch").isNull() | f.col("v_session_id").isNull() | f.col("b").isNull())
    a0 = anom(incomplete, fmt("cannot judge broker %s's registration: its epoch or session_id is missing", "b"),
              f.array("id"), verdict="unknown", broker=f.col("b"))
    znodes = ev.filter(f.col("f") == "broker_znode")
    unread = znodes.filter(f.col("v_exists").isNull() | (f.col("v_exists") & (
        f.col("v_owner").isNull() | f.col("v_czxid").isNull() | f.col("v_broker_id").isNull())))
    a4 = anom(unread, fmt("cannot judge the observer's read of broker %s: whether the znode exists, its czxid, owner "
                          "or broker is missing", "v_broker_id"), f.array("id"), verdict="unknown")
    r = r.filter(f.col("v_epoch").isNotNull() & f.col("v_session_id").isNotNull() & f.col("b").isNotNull())
    shared = (
        r.groupBy("hist", "b", "v_epoch").agg(f.min("v_session_id").alias("lo"), f.max("v_session_id").alias("hi"))
        .filter(f.col("lo") < f.col("hi"))
        .select(f.col("hist").alias("d_hist"), f.col("b").alias("d_b"), f.col("v_epoch").alias("d_epoch"))
    )
    dup = (
        one(r.join(few(shared), (r.hist == shared.d_hist) & r.b.eqNullSafe(shared.d_b)
                   & r.v_epoch.eqNullSafe(shared.d_epoch), "left_semi"))
        .groupBy("hist", "b", "v_epoch")
        .agg(f.size(f.collect_set("v_session_id")).alias("n"), f.sort_array(f.collect_set("id")).alias("ids"))
    )
    a2 = anom(dup, fmt("broker %s: %s sessions claim the same epoch %s", "b", "n", "v_epoch"),
               f.slice("ids", 1, 20), broker=f.col("b"), epoch=f.col("v_epoch"))
    obs = znodes.filter(f.col("v_exists") & f.col("v_owner").isNotNull() & f.col("v_czxid").isNotNull()
                        & f.col("v_broker_id").isNotNull()).select(
        "hist", "id", f.col("v_broker_id").alias("b"), f.col("v_czxid").alias("cz"), f.col("v_owner").alias("ow")
    )
    claims = r.select("hist", "b", f.col("v_epoch").alias("cz"), f.col("v_session_id").alias("ow"))
    unclaimed = obs.join(claims, ["hist", "b", "cz", "ow"], "left_anti")
    agents = r.select("hist").distinct()  # only judge histories whose agents report registrations
    unclaimed = unclaimed.join(agents, "hist", "left_semi")
    # A pipelined registration whose session the agent never learnt (pipeline_register
    # session_learned=false, KAFKA-14845) creates a znode nobody can claim: explained, not an anomaly.
    unlearnt = ev.filter((f.col("f") == "pipeline_register") & (f.col("v_session_learned") == f.lit(False))).select(
        "hist", broker().alias("b")
    )
    unclaimed = unclaimed.join(unlearnt, ["hist", "b"], "left_anti")
    unclaimed = unclaimed.join(incomplete.select("hist", "b"), ["hist", "b"], "left_anti")  # a0 says why
    a3 = anom(unclaimed, fmt("observer saw broker %s registered (czxid %s, owner %s) by no claimant",
                                  "b", "cz", "ow"), f.array("id"), broker=f.col("b"))
    return a1.unionByName(a2).unionByName(a3).unionByName(a0).unionByName(a4)


# 7 --------------------------------------------------------------------------------------------------
def bounce_handling(ev: DataFrame) -> DataFrame:
    """Invariant 7, decided from the registrations themselves (a pre-KIP-380 controller never fills its
    ``broker_change.bounced`` list, so that list cannot be the trigger). A bounce is a ``register ok``
    of broker N whose epoch E grew over N's previous one (per-source order of ``agent:N``). Unless N's
    own later events supersede it (another registration, ``deregistered``, ``agent_stop``,
    ``agent_start``) or a controller later (merged-history order, ``idx``) saw N dead, some
    controller must send N a full UpdateMetadata and a LeaderAndIsr carrying broker_epoch E (epochs
    tie sends to registrations, no clocks); an UpdateMetadata whose ``full`` is null (a real
    controller's, on the wire: its fullness is not there) counts as full. The only wall-clock use is the liveness window: a registration within ``GRACE_S`` of
    ``run_end`` owes nothing yet; without ``run_end`` an unhandled bounce is unknown. Histories with
    no controller activity (no ``broker_change``) are not judged. The controller's own view (its
    ``bounced`` list, answered by the same controller unless it resigned or saw N die or bounce
    again) is checked too, for bounces whose ``register ok`` is missing from the history."""
    f, win = F(), W()
    life = ev.filter(
        f.col("node").isNotNull()
        & (((f.col("f") == "register") & (f.col("type") == "ok"))
           | f.col("f").isin("deregistered", "agent_stop", "agent_start"))
    )
    w = win.partitionBy("hist", "src").orderBy("seq")
    regs = (
        life.withColumn("later", f.lead("id").over(w))
        .filter(f.col("f") == "register")
        .withColumn("prev_e", f.lag("v_epoch").over(w))
        .withColumn("first", f.row_number().over(w) == 1)
        .filter(~f.col("first") & f.col("later").isNull())
        .select("hist", "idx", "t_wall", "id", f.col("node").alias("n"), f.col("v_epoch").alias("e"), "prev_e")
    )
    bc = ev.filter(f.col("f") == "broker_change")
    regs = reuse(regs.join(bc.select("hist").distinct(), "hist", "left_semi"))  # a controller acted in this history
    ends = ev.filter(f.col("f") == "run_end").groupBy("hist").agg(f.max("t_wall").alias("end"))
    # ``full`` null: a real controller's UpdateMetadata seen on the wire (base/kafkawire.py), whose
    # fullness is the controller's state, not the wire's; it counts (the weaker check is documented)
    sends = (
        ev.filter((f.col("f") == "control_send") & ((f.col("v_kind") == "LeaderAndIsr")
                                                    | ((f.col("v_kind") == "UpdateMetadata")
                                                       & f.coalesce(f.col("v_full"), f.lit(True)))))
        .groupBy("hist", f.col("v_target").alias("n"), f.col("v_broker_epoch").alias("e"))
        .agg(f.max(f.col("v_kind") == "UpdateMetadata").alias("um"), f.max(f.col("v_kind") == "LeaderAndIsr").alias("lai"))
    )
    died = bc.select("hist", f.col("idx").alias("d_idx"), f.explode_outer("v_dead").alias("n"))
    views = bc.select("hist", f.col("idx").alias("v_idx"), f.col("id").alias("vid"), "v_live", "v_bounced")
    cand = (
        one(regs.join(ends, "hist", "left")
            .filter(f.col("end").isNull() | f.col("e").isNull() | (f.col("t_wall") <= f.col("end") - GRACE_S)))
        .join(sends, ["hist", "n", "e"], "left")
        .filter(~(f.coalesce("um", f.lit(False)) & f.coalesce("lai", f.lit(False))))
    )
    died = died.select(f.col("hist").alias("d_hist"), f.col("n").alias("d_n"), "d_idx")
    cand = cand.join(died, (f.col("hist") == f.col("d_hist")) & (f.col("n") == f.col("d_n"))
                     & (f.col("d_idx") > f.col("idx")), "left_anti")  # a controller later saw N dead
    last_view = (
        cand.join(views, "hist", "left").filter(f.col("v_idx").isNull() | (f.col("v_idx") > f.col("idx")))
        .groupBy("hist", "id", "n", "e", "prev_e", "end", "um", "lai")
        .agg(f.max_by("vid", "v_idx").alias("vid"), f.max_by("v_live", "v_idx").alias("live"))
        .withColumn("seen", f.try_element_at("live", f.col("n").cast("string")))
    )
    missing = f.concat_ws(" or ", f.when(~f.coalesce("um", f.lit(False)), f.lit("full UpdateMetadata")),
                          f.when(~f.coalesce("lai", f.lit(False)), f.lit("LeaderAndIsr")))
    decidable = f.col("end").isNotNull() & f.col("e").isNotNull()
    a12 = anoms(
        last_view,
        Case(decidable, fmt("broker %s re-registered with epoch %s (was %s) but no controller sent it %s with that epoch "
                            "(the controller's last view holds epoch %s): the bounce was missed, its replicas stay offline",
                            "n", "e", "prev_e", missing, "seen"), ids("id", "vid"), keys={"broker": f.col("n")}),
        Case(~decidable, fmt("cannot judge broker %s's re-registration (epoch %s): %s", "n", "e",
                             f.when(f.col("e").isNull(), f.lit("its epoch is missing or malformed"))
                             .otherwise(f.lit("no run_end, so whether the controller had time to send is unknown"))),
             ids("id"), verdict="unknown", keys={"broker": f.col("n")}),
    )
    # The controller's own classification (KIP-380 controllers): N listed as bounced -> same controller sends.
    bcb = bc.select(
        "hist", "src", "seq", "id", f.explode_outer("v_bounced").alias("n"), "v_live"
    ).filter(f.col("n").isNotNull()).withColumn("e", f.try_element_at("v_live", f.col("n").cast("string")))
    csends = ev.filter(f.col("f") == "control_send").select(
        "hist", "src", f.col("seq").alias("s_seq"), f.col("v_target").alias("n"), f.col("v_kind").alias("kind"),
        f.coalesce(f.col("v_full"), f.lit(False)).alias("full"), f.col("v_broker_epoch").alias("be"),
    )
    got = (
        bcb.join(csends, ["hist", "src", "n"], "left")
        .withColumn("hit", (f.col("s_seq") > f.col("seq")) & (f.col("be") == f.col("e")))
        .groupBy("hist", "src", "seq", "id", "n", "e")
        .agg(
            f.max(f.col("hit") & (f.col("kind") == "UpdateMetadata") & f.col("full")).alias("um"),
            f.max(f.col("hit") & (f.col("kind") == "LeaderAndIsr")).alias("lai"),
        )
    )
    resigns = ev.filter(f.col("f") == "controller_resigned").select("hist", "src", f.col("seq").alias("x_seq"))
    later = bc.select(
        "hist", "src", f.col("seq").alias("x_seq"),
        f.array_union(f.coalesce("v_dead", f.array()), f.coalesce("v_bounced", f.array())).alias("ns"),
    )
    cmiss = got.filter(~(f.coalesce("um", f.lit(False)) & f.coalesce("lai", f.lit(False))))
    resigned = cmiss.join(resigns, ["hist", "src"]).filter(f.col("x_seq") > f.col("seq")).select("hist", "src", "seq", "n")
    superseded = (
        cmiss.join(later, ["hist", "src"])
        .filter((f.col("x_seq") > f.col("seq")) & f.array_contains("ns", f.col("n")))
        .select("hist", "src", "seq", "n")
    )
    cbad = (
        cmiss.join(one(resigned.unionByName(superseded)), ["hist", "src", "seq", "n"], "left_anti")
        .join(regs.select("hist", "n", "e"), ["hist", "n", "e"], "left_anti")  # judged from the registration above
        .join(ends, "hist", "left")
    )
    a3 = anom(cbad, fmt("controller saw broker %s bounce to epoch %s but sent no %s", "n", "e",
             f.when(~f.coalesce("um", f.lit(False)), f.lit("full UpdateMetadata")).otherwise(f.lit("LeaderAndIsr"))),
        f.array("id"), broker=f.col("n"),
    )
    return a12.unionByName(a3)




SINGLE_REGISTRANT = PlanChecker("single_registrant", {
    "register": ("broker_id", "epoch", "owner", "session_id"),
    "broker_znode": ("broker_id", "czxid", "exists", "owner"),
    "pipeline_register": ("broker_id", "session_learned"),
}, single_registrant, needs=(REGISTRATION_OWNER,))
BOUNCE_HANDLING = PlanChecker("bounce_handling", {
    "register": ("epoch",), "deregistered": (), "agent_stop": (), "agent_start": (), "run_end": (),
    "broker_change": ("bounced", "dead", "live"), "control_send": ("broker_epoch", "full", "kind", "target"),
    "controller_resigned": (),
}, bounce_handling)
