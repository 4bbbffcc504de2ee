"""The zxid sweep of checking.md §6: ZooKeeper already names the order, so check that it fits real time
and replays, in O(n log n) with no search.

* real time vs z: if x responded before y was invoked, then z(y) >= z(x) (> for a write y). One sort
  of invoke/response events by time (invokes first at ties), a running max M of response z's,
  and a check at each invoke. On Spark: range-partitioned sort, per-partition max, broadcast
  exclusive prefix max, second local pass.
* replay per key: a read returns the value of the last acknowledged write with z' <= z(read).
* per-session monotonicity: reply zxids a session sees (zkproxy s2c frames) never go down.

Ops carry ``a`` (invoke time, None if unknown: never constrained), ``b`` (response time, None if
unknown: never raises M), ``z``, ``write``, ``key``, ``value``. Times are wall-clock seconds from
different sources, so a skew allowance (default 0.1 s) is subtracted before ordering across them.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checkers.result import Result, anomaly, compose, result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

DEFAULT_SKEW = 0.1


@dataclass(frozen=True, slots=True)
class ZOp:
    id: str  # the event id(s) that prove it, "inv,ok"
    key: str | None
    a: float | None
    b: float | None
    z: int
    write: bool
    value: Any = None
    known: bool = True  # False: outcome unknown (may or may not have happened)


def _events(ops: Iterable[ZOp], skew: float) -> Iterator[tuple[float, int, int, str, bool]]:
    """(time, 0=invoke/1=response, z, id, write)."""
    for op in ops:
        if op.a is not None and op.known:
            yield (op.a, 0, op.z, op.id, op.write)
        if op.b is not None and op.known:
            yield (op.b + skew, 1, op.z, op.id, op.write)


def _sweep(events: Iterable[tuple[float, int, int, str, bool]], m: int | None, m_id: str | None) -> Iterator[dict]:
    for _t, kind, z, oid, write in events:
        if kind == 1:
            if m is None or z > m:
                m, m_id = z, oid
        elif m is not None and (z < m or (write and z <= m)):
            yield anomaly(
                "zxid_realtime",
                f"{'write' if write else 'read'} at z={z:#x} was invoked after an op at z={m:#x} had responded",
                [*oid.split(","), *(m_id or "").split(",")],
                z=z, prior_z=m,
            )


def realtime(ops: Sequence[ZOp], skew: float = DEFAULT_SKEW) -> list[dict]:
    """Pure O(n log n) real-time-vs-z check."""
    return list(_sweep(sorted(_events(ops, skew)), None, None))


def realtime_spark(sc: Any, ops: Sequence[ZOp] | Any, skew: float = DEFAULT_SKEW, partitions: int = 4) -> list[dict]:
    """The same check distributed: ``ops`` is a list or an RDD of ZOp."""
    rdd = ops if hasattr(ops, "mapPartitions") else sc.parallelize(list(ops), partitions)
    ev = rdd.flatMap(lambda op: list(_events([op], skew))).sortBy(lambda e: (e[0], e[1]), numPartitions=partitions)
    ev = ev.cache()

    def part_max(idx: int, it: Iterator[tuple]) -> Iterator[tuple[int, int | None, str | None]]:
        m, m_id = None, None
        for _t, kind, z, oid, _w in it:
            if kind == 1 and (m is None or z > m):
                m, m_id = z, oid
        yield idx, m, m_id

    maxes = sorted(ev.mapPartitionsWithIndex(part_max).collect())
    prefix: list[tuple[int | None, str | None]] = []
    m, m_id = None, None
    for _idx, pm, pid in maxes:
        prefix.append((m, m_id))
        if pm is not None and (m is None or pm > m):
            m, m_id = pm, pid
    bc = sc.broadcast(prefix)

    def part_sweep(idx: int, it: Iterator[tuple]) -> Iterator[dict]:
        pm, pid = bc.value[idx]
        yield from _sweep(it, pm, pid)

    out = ev.mapPartitionsWithIndex(part_sweep).collect()
    ev.unpersist()
    return out


def replay_key(key: str, ops: Iterable[ZOp]) -> list[dict]:
    """Reads of one key return the last acknowledged write at or below their z."""
    ops = list(ops)
    writes = sorted((o for o in ops if o.write and o.known), key=lambda o: o.z)
    if any(o.write and not o.known for o in ops):
        return []  # an unknown-outcome write could explain any read: nothing provable here
    zs = [w.z for w in writes]
    out = []
    for r in ops:
        if r.write or r.value is None:
            continue
        i = bisect.bisect_right(zs, r.z) - 1
        if i < 0:
            continue  # nothing acknowledged before it: initial state, not recorded
        w = writes[i]
        if w.value != r.value:
            out.append(anomaly(
                "zxid_replay", f"{key}: read at z={r.z:#x} returned {r.value!r}, but the last write at or "
                f"below it (z={w.z:#x}) wrote {w.value!r}", [*r.id.split(","), *w.id.split(",")], key=key,
            ))
    return out


def replay(ops: Iterable[ZOp]) -> list[dict]:
    by: dict[str, list[ZOp]] = defaultdict(list)
    for o in ops:
        if o.key is not None:
            by[o.key].append(o)
    return [a for k, v in sorted(by.items()) for a in replay_key(k, v)]


# --- from project events ----------------------------------------------------------------------------


def ops_frame(ev: DataFrame) -> DataFrame:
    """ZOps as a DataFrame: registrations (invoke..ok, z = czxid), controller writes and partition
    states (z = zxid, response only), observer reads of /brokers/ids/N (z = mzxid)."""
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


def session_monotonic(ev: DataFrame) -> DataFrame:
    """Anomaly rows: a session's s2c reply zxid went down (per proxy source, in its own order)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    fr = ev.filter((F.col("f") == "frame") & (F.get_json_object("value", "$.dir") == "s2c")).select(
        "hist", "src", "seq", "id",
        F.expr("try_cast(get_json_object(value, '$.session_id') AS BIGINT)").alias("sess"),
        F.expr("try_cast(get_json_object(value, '$.zxid') AS BIGINT)").alias("zx"),
    ).filter(F.col("sess").isNotNull() & (F.col("zx") > 0))
    w = Window.partitionBy("hist", "src", "sess").orderBy("seq")
    fr = fr.withColumn("pz", F.max("zx").over(w.rowsBetween(Window.unboundedPreceding, -1)))
    fr = fr.withColumn("pid", F.max_by("id", "zx").over(w.rowsBetween(Window.unboundedPreceding, -1)))
    return fr.filter(F.col("zx") < F.col("pz"))


def check_events(ev: DataFrame, paths: Sequence[str], skew: float = DEFAULT_SKEW) -> dict[str, Result]:
    """{path: result} composed of zxid_realtime, zxid_replay and zxid_session."""
    sc = ev.sparkSession.sparkContext
    ops_rows = ops_frame(ev).rdd.map(
        lambda r: (r["hist"], ZOp(r["id"], r["key"], r["a"], r["b"], int(r["z"]), bool(r["write"]), r["value"], bool(r["known"])))
    )
    out: dict[str, Result] = {}
    sess = session_monotonic(ev).collect()
    for p in paths:
        ops = ops_rows.filter(lambda kv, p=p: kv[0] == p).values()
        rt = realtime_spark(sc, ops, skew)
        rp = ops.map(lambda o: (o.key, o)).groupByKey().flatMap(lambda kv: replay_key(kv[0], kv[1])).collect()
        ss = [
            anomaly("zxid_session", f"session {r['sess']:#x} saw zxid {r['zx']:#x} after {r['pz']:#x}",
                    [r["pid"], r["id"]], session=r["sess"])
            for r in sess if r["hist"] == p
        ]
        out[p] = compose({"zxid_realtime": result(None, rt), "zxid_replay": result(None, rp),
                          "zxid_session": result(None, ss)})
    return out
