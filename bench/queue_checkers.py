"""Benchmark: the queue checkers (``checkers.queue``) on synthetic queue histories of 1M and 10M
client operations vs the floor "Spark reads and counts the same Parquet". Not a test.

Usage: python bench/queue_checkers.py [--sizes 1e6,1e7] [--partitions 30] [--out /tmp/zkfence-bench-queue]

A history of N operations is 2N client events (each op an invoke then its ok completion), as the
queue workload records them (docs/events.md: send, poll, final_read), plus one final_read per
partition holding the whole partition and a few register and partition_state events (what
queue_lost_write cites). The generator is Spark itself (spark.range), parsed once with every
field the queue checkers read (``checkers.events_df.parse`` with their declared reads, as
``harness check`` loads a history for them) and written as Parquet. Valid by construction, but for
five partitions past the valid ones holding one injected anomaly of each kind (``injected``): op i
even is send i/2 to partition (i/2) mod P at offset (i/2) div P; op i odd is poll (i-1)/2 by
consumer (one per partition), which reads the next offset of its partition, the value that send
wrote.

Timed, each on the same warm session: the plans (every plan of ``QUEUE_PLANS`` in one job, then
``queue_unseen``: what ran before ``checkers.queue_pass``; ``--no-plans`` skips them); the
projection and exchange of the one pass alone (written to Spark's no-op sink); the one pass
(``checkers.queue_pass.run``), first with the CPU seconds of the JVM and its Python workers, then again
(the figure a check server or a campaign sees; the ratio is given for both); the floor: the
same Parquet read with (a) a plain count and (b) a full scan of every column the queue checkers
declare they read (hash-sum + count, so no metadata-only count). Ratios are against (b); (a) is
printed for reference. The verdicts must be the injected kinds' (invalid) and ``queue_unseen``'s
(valid), and the pass's results equal to the plans' (the agreement column).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sizes import parse_sizes  # noqa: E402  (bench/ is on sys.path: this script's directory)
from spark_up import warm_spark  # noqa: E402

from base.parsing import summary  # noqa: E402
from checkers import events_df, plans, queue_pass  # noqa: E402
from checkers.checker import Events, columns, field_types, union  # noqa: E402
from checkers.queue import QUEUE_PLANS, UNSEEN  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402

TOPIC = "queue"
BROKERS = 3


def _envelope(F, src, seq, typ, f, process, value, index):  # noqa: ANN001, ANN202, N803
    return (F.lit("bench").alias("hist"), F.lit("bench").alias("run"), src.alias("src"), seq.alias("seq"),
            F.concat_ws("/", src, seq.cast("string")).alias("id"), (F.lit(1.7e9) + index / 1e5).alias("t_wall"),
            (index * 1000).alias("t_mono"), typ.alias("type"), f.alias("f"), process.cast("string").alias("process"),
            value.alias("value"), index.alias("index"))


def generate(spark, n: int, parts: int):  # noqa: ANN001, ANN201
    """2n client events for n operations, then the final reads, registrations and partition states."""
    from pyspark.sql import functions as F

    r = F.col("r")  # not "id": the envelope makes an "id" column of its own
    i = (r / 2).cast("long")  # the op
    done = (r % 2) == 1  # invoke, then its completion
    is_send = (i % 2) == 0
    k = (i / 2).cast("long")  # send k, or poll k (which reads send k's record)
    part = k % parts
    off = (k / parts).cast("long")
    value = F.concat(F.lit("v"), k.cast("string"))
    leader = (part % BROKERS) + 1
    send = F.struct(F.lit(TOPIC).alias("topic"), part.alias("partition"), value.alias("value"),
                    F.lit("all").alias("acks"), F.when(done, off).alias("offset"), F.when(done, leader).alias("leader"))
    poll = F.struct(F.lit(TOPIC).alias("topic"), part.alias("partition"), part.alias("consumer"), off.alias("offset"),
                    F.when(done, F.array(off)).alias("offsets"), F.when(done, F.array(value)).alias("values"),
                    F.when(done, off + 1).alias("hw"), F.when(done, leader).alias("leader"),
                    F.when(done, F.lit(0)).alias("leader_epoch"))
    ops = spark.range(2 * n).toDF("r").select(*_envelope(
        F, F.lit("client"), r, F.when(done, "ok").otherwise("invoke"), F.when(is_send, "send").otherwise("poll"),
        F.when(is_send, i % 64).otherwise(1000 + part), F.when(is_send, F.to_json(send)).otherwise(F.to_json(poll)), r))
    sends = (n + 1) // 2  # ops 0, 2, 4, ...
    p = F.col("r")
    q = (p / 2).cast("long")  # final_read of partition q: invoke (p even), then ok
    cnt = F.greatest(F.lit(0), F.ceil((F.lit(sends) - q) / parts)).cast("long")
    offs = F.when(cnt > 0, F.sequence(F.lit(0).cast("long"), cnt - 1)).otherwise(F.array().cast("array<bigint>"))
    final = F.struct(F.lit(TOPIC).alias("topic"), q.alias("partition"), offs.alias("offsets"),
                     F.transform(offs, lambda o: F.concat(F.lit("v"), (o * parts + q).cast("string"))).alias("values"),
                     cnt.alias("hw"), ((q % BROKERS) + 1).alias("leader"), F.lit(0).alias("leader_epoch"))
    invoke = F.struct(F.lit(TOPIC).alias("topic"), q.alias("partition"))
    finals = spark.range(2 * parts).toDF("r").select(*_envelope(
        F, F.lit("client"), 2 * n + p, F.when(p % 2 == 1, "ok").otherwise("invoke"), F.lit("final_read"),
        F.lit("final"), F.when(p % 2 == 1, F.to_json(final)).otherwise(F.to_json(invoke)), 2 * n + p))
    b = (p % BROKERS) + 1
    agent = F.concat(F.lit("agent:"), b.cast("string"))
    reg = spark.range(BROKERS).toDF("r").select(*_envelope(
        F, agent, p, F.lit("ok"), F.lit("register"), b,
        F.to_json(F.struct(b.alias("broker_id"), (F.lit(1 << 32) + p).alias("epoch"))), F.lit(-1) - p))
    ps = spark.range(parts).toDF("r").select(*_envelope(
        F, agent, 10 + p, F.lit("event"), F.lit("partition_state"), b,
        F.to_json(F.struct(F.lit(TOPIC).alias("topic"), p.alias("partition"), b.alias("leader"),
                           F.lit(0).alias("leader_epoch"))), F.lit(-100) - p))
    return ops.unionByName(finals).unionByName(reg).unionByName(ps).unionByName(injected(spark, n, parts))


INJECTED = ("queue_lost_write", "queue_inconsistent_offsets", "queue_duplicate", "queue_aborted_read",
            "queue_poll_order")


def injected(spark, n: int, parts: int):  # noqa: ANN001, ANN201
    """One of each anomaly kind, on partitions of their own past the valid ones (``parts`` ..
    ``parts + 4``), so a checker that passes the valid bulk but misses a kind fails the bench's
    verdict agreement: a lost write (an acked send the final read lacks, a partition state between,
    registered brokers), an inconsistent offset (a poll's value at an acked send's offset), a
    duplicate (a value read at two offsets), an aborted read (a failed send's value polled), a poll
    skip and a non-monotonic poll (one consumer's polls 0, 2, then 1)."""
    base = 2 * n + 2 * parts + 1000  # history positions after every generated event
    ev: list[tuple] = []

    def op(f: str, typ: str, process: int, value: dict) -> None:
        i = base + len(ev)
        ev.append(("client", i, typ, f, str(process), json.dumps(value), i))

    def send(part: int, value: str, off: int | None, ok: str = "ok", leader: int = 1) -> None:
        v = {"topic": TOPIC, "partition": part, "value": value, "acks": "all"}
        op("send", "invoke", 7, v)
        op("send", ok, 7, {**v, "offset": off, "leader": leader} if ok == "ok" else {**v, "error_code": 19})

    def read(f: str, part: int, recs: list[tuple[int, str]], consumer: int = 9000) -> None:
        who = {"consumer": consumer} if f == "poll" else {}
        op(f, "invoke", consumer, {"topic": TOPIC, "partition": part, **who})
        op(f, "ok", consumer, {"topic": TOPIC, "partition": part, **who, "offsets": [o for o, _ in recs],
                               "values": [v for _, v in recs],
                               "hw": len(recs), "leader": 2, "leader_epoch": 1})

    lw, io, du, ab, po = range(parts, parts + 5)
    send(lw, "lost-0", 0)
    send(lw, "lost-1", 1)
    i = base + len(ev)
    ev.append(("agent:2", i, "event", "partition_state", "2",
               json.dumps({"topic": TOPIC, "partition": lw, "leader": 2, "leader_epoch": 1}), i))
    read("final_read", lw, [(0, "lost-0")])
    send(io, "io-0", 0)
    read("poll", io, [(0, "io-X")])
    read("final_read", io, [(0, "io-0")])
    send(du, "dup-0", 0)
    read("poll", du, [(0, "dup-0"), (1, "dup-0")])
    read("final_read", du, [(0, "dup-0")])
    send(ab, "ab-0", None, ok="fail")
    read("poll", ab, [(0, "ab-0")])
    for o in range(3):
        send(po, f"po-{o}", o)
    read("poll", po, [(0, "po-0")])
    read("poll", po, [(2, "po-2")])
    read("poll", po, [(1, "po-1")])
    read("final_read", po, [(o, f"po-{o}") for o in range(3)])
    from pyspark.sql import functions as F

    rows = spark.createDataFrame(ev, "src STRING, seq BIGINT, typ STRING, f STRING, process STRING, value STRING, "
                                     "idx BIGINT")
    return rows.select(*_envelope(F, F.col("src"), F.col("seq"), F.col("typ"), F.col("f"), F.col("process"),
                                  F.col("value"), F.col("idx")))


def tree_cpu(spark) -> float:  # noqa: ANN001
    """CPU seconds (user + system, with reaped children) of the session's JVM and every process under
    it (the Python workers of the one pass's Arrow grouped map run in forks of the JVM's daemon)."""
    root = spark.sparkContext._gateway.proc.pid
    stats: dict[int, tuple[int, float]] = {}
    for d in Path("/proc").iterdir():
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue
        if d.name.isdigit():
            stats[int(d.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK"))
    total = 0.0
    for pid, (_, cpu) in stats.items():
        p = pid
        while p in stats and p != root:
            p = stats[p][0]
        total += cpu if p == root else 0.0
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=summary(__doc__))
    ap.add_argument("--sizes", default="1e6,1e7", help="operations per history, comma-separated (default 1e6,1e7)")
    ap.add_argument("--partitions", type=int, default=30)
    ap.add_argument("--out", default="/tmp/zkfence-bench-queue")
    ap.add_argument("--no-plans", action="store_true", help="skip the plans (checkers.queue): no agreement column")
    a = ap.parse_args()
    sizes = parse_sizes(a.sizes)
    spark = warm_spark()
    from pyspark.sql import functions as F

    checkers = (*QUEUE_PLANS, UNSEEN)
    names = [c.name for c in checkers]
    reads = union(c.reads for c in checkers)
    needed = list(columns(reads))
    print(f"queue checkers: {', '.join(names)}; floor scans their {len(needed)} declared columns; injected "
          f"anomalies (expected invalid): {', '.join(INJECTED)}")
    times: dict[int, float] = {}
    for n in sizes:
        out = Path(a.out) / f"queue-{n}"
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.monotonic()
        events_df.parse(generate(spark, n, a.partitions), field_types(reads)).write.parquet(str(out))
        gen = time.monotonic() - t0

        old: dict | None = None
        if not a.no_plans:
            t0 = time.monotonic()
            frame = spark.read.parquet(str(out))
            old = plans.collect(QUEUE_PLANS, frame, ["bench"], small=False)["bench"]
            plan_s = time.monotonic() - t0
            t1 = time.monotonic()
            frame = spark.read.parquet(str(out))
            old[UNSEEN.name] = UNSEEN.check(Events(("bench",), checkers, frame=frame, small=False))["bench"]
            unseen_s = time.monotonic() - t1
            print(f"{n:>11,} ops: plans (before) {plan_s + unseen_s:6.1f} s (plans {plan_s:.1f} + unseen "
                  f"{unseen_s:.1f})", flush=True)

        # the projection and its exchange alone (no walk): where the pass's time goes
        frame = spark.read.parquet(str(out))
        t0 = time.monotonic()
        queue_pass.project(frame).repartition("hist", "topic", "part").sortWithinPartitions(
            "hist", "topic", "part").write.format("noop").mode("overwrite").save()
        exchange_s = time.monotonic() - t0

        frame = spark.read.parquet(str(out))
        cpu0 = tree_cpu(spark)
        t0 = time.monotonic()
        res = queue_pass.run(frame, ["bench"], names)["bench"]
        first = time.monotonic() - t0
        cpu = tree_cpu(spark) - cpu0
        # again, as a check server or a campaign runs it (the floor below is timed warm too)
        frame = spark.read.parquet(str(out))
        t0 = time.monotonic()
        again = queue_pass.run(frame, ["bench"], names)["bench"]
        check = time.monotonic() - t0
        assert again == res, "the pass gave other results the second time"

        t0 = time.monotonic()
        count = spark.read.parquet(str(out)).count()
        count_s = time.monotonic() - t0
        ev = spark.read.parquet(str(out))
        t0 = time.monotonic()
        cols = [F.col(c) for c in needed]
        scan = ev.select(F.sum(F.hash(*cols)).alias("h"), F.count(F.lit(1)).alias("n")).collect()[0]
        floor = time.monotonic() - t0
        times[n] = check
        invalid = sorted(k for k, v in res.items() if v["valid"] is False)
        other = {k: v["valid"] for k, v in res.items() if v["valid"] not in (True, False)}
        expected = "as injected" if invalid == sorted(INJECTED) and not other else f"NOT as injected {invalid} {other}"
        agree = "" if old is None else (" | agrees with the plans" if old == res else " | DISAGREES with the plans: "
                                        + ", ".join(k for k in names if old[k] != res[k]))
        u = res[UNSEEN.name]["stats"]
        print(f"{n:>11,} ops ({count:,} events): generate+parse+write {gen:6.1f} s | one pass {first:6.1f} s "
              f"first (task CPU {cpu:.1f} s, JVM + Python workers), {check:6.1f} s again = {n / check:>9,.0f} ops/s; projection + exchange "
              f"+ sort alone {exchange_s:.1f} s | floor: count {count_s:4.1f} s, full scan of {len(needed)} columns "
              f"{floor:5.1f} s (rows {scan['n']:,}) | checkers/floor {check / floor:4.1f}x again, {first / floor:4.1f}x first (goal <= 3x) | "
              f"verdicts {expected}{agree} | client ops counted {u.get('client_ops'):,}, unseen "
              f"{u.get('unseen_total')}", flush=True)
    if len(sizes) >= 2:
        lo, hi = sizes[0], sizes[-1]
        print(f"time ratio {hi:,}/{lo:,} ops: checkers {times[hi] / times[lo]:.2f} (size ratio {hi / lo:.0f}; "
              f"target <= {1.1 * hi / lo:.0f})")
    return 0


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
