"""The zxid sweep: ZooKeeper already names the order (every write's zxid), so check that it fits real
time and replays, in O(n log n) with no search (no linearizability search as in Knossos or Porcupine).

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
from itertools import groupby
from typing import Any

from checkers.result import anomaly

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


def realtime_spark(sc: Any, ops: Iterable[tuple[str, ZOp]] | Any, skew: float = DEFAULT_SKEW,
                   partitions: int = 4) -> list[tuple[str, dict]]:
    """The same check distributed, for many histories in one pass: ``ops`` is a list or an RDD of
    (history, ZOp); returns (history, anomaly) pairs. One global sort by (history, time), then per
    partition each history's max response z, an exclusive prefix max per history broadcast, and a
    second local pass."""
    rdd = ops if hasattr(ops, "mapPartitions") else sc.parallelize(list(ops), partitions)
    ev = rdd.flatMap(lambda kv: [(kv[0], *e) for e in _events([kv[1]], skew)])
    ev = ev.sortBy(lambda e: (e[0], e[1], e[2]), numPartitions=partitions).cache()

    def part_max(idx: int, it: Iterator[tuple]) -> Iterator[tuple[int, dict[str, tuple[int, str]]]]:
        maxes: dict[str, tuple[int, str]] = {}
        for hist, _t, kind, z, oid, _w in it:
            if kind == 1 and (hist not in maxes or z > maxes[hist][0]):
                maxes[hist] = (z, oid)
        yield idx, maxes

    prefix: list[dict[str, tuple[int, str]]] = []
    running: dict[str, tuple[int, str]] = {}
    for _idx, pm in sorted(ev.mapPartitionsWithIndex(part_max).collect(), key=lambda x: x[0]):
        prefix.append(dict(running))
        for hist, (z, oid) in pm.items():
            if hist not in running or z > running[hist][0]:
                running[hist] = (z, oid)
    bc = sc.broadcast(prefix)

    def part_sweep(idx: int, it: Iterator[tuple]) -> Iterator[tuple[str, dict]]:
        for hist, evs in groupby(it, key=lambda e: e[0]):
            m, m_id = bc.value[idx].get(hist, (None, None))
            for a in _sweep((e[1:] for e in evs), m, m_id):
                yield hist, a

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
