"""``queue_linearizable``: the queue workload's operations (``workloads.queue``) checked for
linearizability against a per-partition append-only log (``checkers.models.PartitionLog``) with
the P-compositional WGL on Spark, one part per topic-partition (``checkers.wgl_workload``).

Where the other queue checkers each look for one anomaly shape, this asks whether one order of
all the operations explains everything the clients saw:

* a send acknowledged with acks=all: the value at the offset the broker returned, the log's next;
* a send that failed: left out (the broker said it did not append; ``queue_aborted_read`` checks
  that no read returns it). A send that timed out, or was acknowledged with acks=1 (a leader's
  acknowledgement promises nothing once that leader fails), is open: appended wherever it is
  linearized, or never;
* a poll: consecutive offsets from the consumer's position with those values, a prefix of the log
  from there (a fetch reads up to the leader's high watermark, which may lag);
* the final read (after every heal): the whole log.

A failed or timed-out read changed nothing and is left out. An illegal partition's anomaly cites
the op the search could not linearize and the acknowledged sends that contradict it.

Open sends make the search exponential (each may or may not have happened, anywhere after its
invoke), so before searching, a partition's successful final read settles them: it must return the
whole log, so an open send whose value it holds took effect at that offset, and one whose value it
does not hold never took effect. Both are the only outcomes any legal order allows: the verdict is
the same, the work is not (a run with 44 timed-out sends went from over budget to a few seconds).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from checkers.models import PartitionLog
from checkers.ops import UNKNOWN, Op
from checkers.wgl_workload import Row, Undecided, WorkloadLinearizable

NAME = "queue_linearizable"
READS = {"send": ("acks", "offset", "partition", "topic", "value"),
         "poll": ("offset", "offsets", "partition", "topic", "values"),
         "final_read": ("offsets", "partition", "topic", "values")}


def _records(done: Row) -> tuple[tuple[int, Any], ...] | None:
    """(offset, value) pairs a read returned; None when they cannot be paired (not arrays of the same length)."""
    values = done.get("v_values")
    values = json.loads(values) if isinstance(values, str) else values
    offsets = done.get("v_offsets")
    if not isinstance(values, list) or offsets is None or len(offsets) != len(values) or None in offsets:
        return None
    return tuple(zip((int(o) for o in offsets), values, strict=True))


def queue_op(inv: Row, done: Row | None) -> tuple[str, Any, Any] | Undecided | None:
    typ = done["type"] if done is not None else "info"
    if inv["v_topic"] is None or inv["v_partition"] is None:  # no partition to place it in
        return Undecided(f"a {inv['f']} of no topic-partition: left out", fatal=inv["f"] == "send")
    key = f"{inv['v_topic']}-{inv['v_partition']}"
    if inv["f"] == "send":
        if typ == "fail":
            return None
        if inv["v_value"] is None:  # a send nobody can tell from another could explain any read
            return Undecided("a send with no value: left out", fatal=True)
        acks = inv.get("v_acks")
        acks_all = str(acks or "").strip().lower() in ("all", "-1")
        ok = typ == "ok" and done is not None and done.get("v_offset") is not None and acks_all
        op = "send", ("send", key, inv["v_value"]), int(done["v_offset"]) if ok and done else UNKNOWN
        if typ == "ok" and not ok and (acks is None or (acks_all and done is not None)):
            return Undecided(f"an acknowledged send without its {'acks' if acks is None else 'offset'}: searched as of "
                             "unknown outcome", op=op)
        return op
    if typ != "ok" or done is None:
        return None
    records = _records(done)
    if records is None:  # read as empty it would be a claim: that the log held nothing there
        return Undecided(f"a {inv['f']} whose records are missing or do not pair offsets with values: left out")
    if inv["f"] == "poll":
        start = done.get("v_offset")
        start = records[0][0] if start is None and records else start
        return None if start is None else ("read", ("read", key, int(start)), records)
    return "read_all", ("read_all", key, None), records


def settle_open_sends(ops: list[Op]) -> list[Op]:
    """Open sends of a partition with a successful final read: given the offset it holds them at,
    or left out when it does not hold them (module docstring)."""
    finals: dict[Any, dict[Any, int]] = {}
    for o in ops:
        if o.f == "read_all" and o.input[1] not in finals:
            finals[o.input[1]] = {v: off for off, v in o.output}
    out = []
    for o in ops:
        held = finals.get(o.input[1])
        if o.f != "send" or o.output is not UNKNOWN or held is None:
            out.append(o)
        elif o.input[2] in held:
            out.append(replace(o, output=held[o.input[2]]))
    return out


def explain_log(ops: list[Op], blocker: Op, describe: Callable[[Op], str]) -> tuple[str, list[Op]]:
    """The acknowledged sends that contradict the op the search could not linearize: another value
    at an offset it read or was given, or (a final read) an offset it should have held."""
    key = blocker.input[1]
    acked = [o for o in ops if o.f == "send" and o.input[1] == key and o is not blocker
             and isinstance(o.output, int) and o.ret < blocker.call]
    if blocker.f == "send" and isinstance(blocker.output, int):
        same = [o for o in acked if o.output == blocker.output and o.input[2] != blocker.input[2]]
        if same:
            return f"{describe(blocker)}: offset {blocker.output} already acknowledged to {describe(same[0])}", same[:1]
    if blocker.f in ("read", "read_all") and blocker.output is not UNKNOWN:
        held = dict(blocker.output)
        for s in sorted(acked, key=lambda o: o.output):
            if s.output in held and held[s.output] != s.input[2]:
                return (f"{describe(blocker)} read {held[s.output]!r} at offset {s.output}, acknowledged to "
                        f"{describe(s)} before the read began"), [s]
            if blocker.f == "read_all" and s.output not in held:
                return (f"lost write: {describe(s)} was acknowledged at offset {s.output}, which the final read "
                        f"{describe(blocker)} does not hold"), [s]
    return "", []


QUEUE_LOG = WorkloadLinearizable(NAME, READS, queue_op, PartitionLog, "queue_log_ops", explain_log,
                                 settle_open_sends)
