"""The zxid sweep (``checkers.zxid``) over project histories, as three checkers on Spark.

* ``zxid_realtime`` and ``zxid_replay`` read the same ops: registrations (invoke..ok, z = czxid),
  controller writes (response only, z = zxid) and observer reads of ``/brokers/ids/N``
  (z = mzxid).
* ``zxid_session``: the reply zxids a session sees in the wire proxy's s2c frames never go down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from checkers.checker import Events
from checkers.result import Result, anomaly, result
from checkers.zxid import DEFAULT_SKEW, ZOp, realtime_spark, replay_key
from history.kinds import REGISTRATION_OWNER, Need

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

OPS_READS: dict[str, tuple[str, ...]] = {
    "register": ("broker_id", "czxid", "owner"),
    "controller_zk_write": ("path", "zxid"),
    "broker_znode": ("broker_id", "czxid", "exists", "mzxid", "owner"),
}


def ops_frame(ev: DataFrame) -> DataFrame:
    """ZOps as a DataFrame (columns of ``ZOp`` plus ``hist``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    reg = ev.filter(F.col("f") == "register")
    w = Window.partitionBy("hist", "src").orderBy("seq")
    reg = (
        reg.withColumn("n_type", F.lead("type").over(w)).withColumn("n_t", F.lead("t_wall").over(w))
        .withColumn("n_id", F.lead("id").over(w)).withColumn("n_cz", F.lead("v_czxid").over(w))
        .withColumn("n_owner", F.lead("v_owner").over(w))
        .withColumn("b_", F.coalesce("v_broker_id", "node"))
        .filter(F.col("type") == "invoke")
    )
    regs = reg.filter(F.col("n_type").isin("ok", "info") & ((F.col("n_type") == "info") | F.col("n_cz").isNotNull())).select(
        "hist", F.concat_ws(",", "id", "n_id").alias("id"), F.concat(F.lit("/brokers/ids/"), F.col("b_")).alias("key"),
        F.col("t_wall").alias("a"), F.when(F.col("n_type") == "ok", F.col("n_t")).alias("b"),
        F.coalesce("n_cz", F.lit(0)).alias("z"), F.lit(True).alias("write"),
        F.when(F.col("n_type") == "ok", F.to_json(F.array("n_cz", "n_owner"))).alias("value"),
        (F.col("n_type") == "ok").alias("known"),
    )
    zkw = ev.filter((F.col("f") == "controller_zk_write") & (F.col("type") == "ok") & F.col("v_zxid").isNotNull())
    zkw = zkw.select("hist", "id", F.col("v_path").alias("key"), F.lit(None).cast("double").alias("a"),
                     F.col("t_wall").alias("b"), F.col("v_zxid").alias("z"), F.lit(True).alias("write"),
                     F.lit(None).cast("string").alias("value"), F.lit(True).alias("known"))
    obs = ev.filter((F.col("f") == "broker_znode") & F.col("v_exists") & F.col("v_czxid").isNotNull())
    obs = obs.select("hist", "id", F.concat(F.lit("/brokers/ids/"), F.col("v_broker_id")).alias("key"),
                     F.lit(None).cast("double").alias("a"), F.col("t_wall").alias("b"),
                     F.coalesce("v_mzxid", "v_czxid").alias("z"), F.lit(False).alias("write"),
                     F.to_json(F.array("v_czxid", "v_owner")).alias("value"), F.lit(True).alias("known"))
    return regs.unionByName(zkw).unionByName(obs)


def _ops(events: Events) -> Any:
    """An RDD of (history, ZOp), shared by the realtime and replay checkers of one call."""
    assert events.frame is not None, "the zxid sweep runs on Spark"
    frame = events.frame

    def build() -> Any:
        return ops_frame(frame).rdd.map(lambda r: (r["hist"], ZOp(
            r["id"], r["key"], r["a"], r["b"], int(r["z"]), bool(r["write"]), r["value"], bool(r["known"]))))

    return events.once("zxid_ops", build)


@dataclass(frozen=True)
class ZxidRealtime:
    lane: ClassVar[str] = "zxid"  # the operations, built once for both (``_ops``)
    skew: float = DEFAULT_SKEW
    name: str = "zxid_realtime"
    reads: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(OPS_READS))
    local: bool = False

    def check(self, events: Events) -> dict[str, Result]:
        ops = _ops(events)
        found = realtime_spark(ops.context, ops, self.skew)
        return {p: result(None, [a for h, a in found if h == p]) for p in events.paths}


@dataclass(frozen=True)
class ZxidReplay:
    lane: ClassVar[str] = "zxid"
    name: str = "zxid_replay"
    reads: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(OPS_READS))
    local: bool = False
    needs: tuple[Need, ...] = (REGISTRATION_OWNER,)  # a registration's value is (czxid, owner)

    def check(self, events: Events) -> dict[str, Result]:
        by_key = _ops(events).map(lambda kv: ((kv[0], kv[1].key), kv[1])).groupByKey()
        found = by_key.flatMap(lambda kv: [(kv[0][0], a) for a in replay_key(kv[0][1], kv[1])]).collect()
        return {p: result(None, [a for h, a in found if h == p]) for p in events.paths}


@dataclass(frozen=True)
class ZxidSession:
    name: str = "zxid_session"
    reads: dict[str, tuple[str, ...]] = field(default_factory=lambda: {"frame": ("dir", "session_id", "zxid")})
    local: bool = False

    def check(self, events: Events) -> dict[str, Result]:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        assert events.frame is not None, "the zxid sweep runs on Spark"
        fr = events.frame.filter((F.col("f") == "frame") & (F.col("v_dir") == "s2c")).select(
            "hist", "src", "seq", "id", F.col("v_session_id").alias("sess"), F.col("v_zxid").alias("zx"),
        ).filter(F.col("sess").isNotNull() & (F.col("zx") > 0))
        w = Window.partitionBy("hist", "src", "sess").orderBy("seq").rowsBetween(Window.unboundedPreceding, -1)
        fr = fr.withColumn("pz", F.max("zx").over(w)).withColumn("pid", F.max_by("id", "zx").over(w))
        rows = fr.filter(F.col("zx") < F.col("pz")).collect()
        return {p: result(None, [
            anomaly(self.name, f"session {r['sess']:#x} saw zxid {r['zx']:#x} after {r['pz']:#x}", [r["pid"], r["id"]],
                    session=r["sess"])
            for r in rows if r["hist"] == p]) for p in events.paths}
