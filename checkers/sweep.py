"""Per-broker sweeps: checkers whose core is plain Python over one broker's rows, run by Spark
(partitioned by broker) or locally on the same rows.

A sweep checker has ``sweep(broker, rows, context) -> partial`` (``rows``: the broker's own events
of the kinds it reads, in per-source order; ``context``: the history's events about no broker,
such as ``run_end`` and the nemesis's) and ``fold(partials) -> Result`` (one history's partials,
one per broker whose agent wrote any of those kinds). A broker is an event's ``broker_id``, else
the agent that wrote it. Both drivers group the same rows (``checkers.events_df`` /
``checkers.rows``) the same way and call the same ``_group``; every sweep checker selected in one
call shares the pass (``Events.shared``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from checkers.checker import Events, Reads, columns, union
from checkers.result import Result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Key = tuple[str, int]  # (history, broker)


@runtime_checkable
class SweepChecker(Protocol):
    name: str
    reads: Reads

    def sweep(self, broker: int, rows: list[dict[str, Any]], context: list[dict[str, Any]]) -> Any: ...

    def fold(self, partials: list[Any]) -> Result: ...


def results(me: SweepChecker, events: Events) -> dict[str, Result]:
    """``me.check``: this checker's results, from the pass shared by every selected sweep checker."""
    partials = events.shared(me, SweepChecker, lambda group: _run(group, events))
    return {p: me.fold(partials.get((me.name, p), [])) for p in events.paths}


def _run(sweepers: tuple[SweepChecker, ...], events: Events) -> dict[tuple[str, str], list[Any]]:
    reads = union(c.reads for c in sweepers)
    if events.frame is None:
        out = [x for kv in _local_groups(events.rows_of(reads)) for x in _group(sweepers, kv)]
    else:
        out = _spark_groups(events.frame, reads).flatMap(partial(_group, sweepers)).collect()
    by: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for name, hist, p in out:
        by[(name, hist)].append(p)
    return by


def _broker(row: dict[str, Any]) -> int | None:
    b = row.get("v_broker_id")
    return row["node"] if b is None else b


def _local_groups(rows: list[dict[str, Any]]) -> Iterable[tuple[Key, list[dict[str, Any]]]]:
    own: dict[Key, list[dict[str, Any]]] = defaultdict(list)
    context: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        b = _broker(r)
        if b is None:
            context[r["hist"]].append({**r, "_ctx": True})
        else:
            own[(r["hist"], b)].append({**r, "_ctx": False})
    for (hist, b), rs in own.items():
        yield (hist, b), rs + context[hist]


def _spark_groups(frame: DataFrame, reads: Reads) -> Any:
    """An RDD of ((history, broker), rows): the broker's own rows plus the history's context rows."""
    from pyspark.sql import functions as F

    df = frame.filter(F.col("f").isin(*reads)).select(*columns(reads))
    b = F.coalesce("v_broker_id", "node") if "v_broker_id" in df.columns else F.col("node")
    df = df.withColumn("_b", b)
    own = df.filter(F.col("_b").isNotNull())
    agents = own.filter(F.col("src").startswith("agent:")).select("hist", "_b").distinct()
    context = df.filter(F.col("_b").isNull()).drop("_b").join(agents, "hist")
    keyed = own.withColumn("_ctx", F.lit(False)).unionByName(context.withColumn("_ctx", F.lit(True)))
    return keyed.rdd.map(lambda r: ((r["hist"], r["_b"]), r.asDict())).groupByKey()


def _group(sweepers: tuple[SweepChecker, ...], kv: tuple[Key, Iterable[dict[str, Any]]]) -> list[tuple[str, str, Any]]:
    """Every sweep checker over one broker of one history: [(checker, history, partial)]. A broker
    none of whose agent's events is of the kinds a checker reads is not that checker's to sweep."""
    (hist, broker), rows = kv
    rows = sorted(rows, key=lambda r: (r["src"], r["seq"]))
    out = []
    for c in sweepers:
        cols = columns(c.reads)  # a checker sees what it declares, nothing else
        mine = [{k: r[k] for k in cols} for r in rows if r["f"] in c.reads and not r["_ctx"]]
        if not any(r["src"].startswith("agent:") for r in mine):
            continue
        context = [{k: r[k] for k in cols} for r in rows if r["f"] in c.reads and r["_ctx"]]
        out.append((c.name, hist, c.sweep(broker, mine, context)))
    return out
