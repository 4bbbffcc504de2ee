"""Linearizability of a workload's own client operations, the driver the register and queue-log
checkers share: a workload says which op kinds it reads, how one invoke and its completion become
a WGL op, its model, and how to explain the op the search could not linearize; this pairs the
history's invokes with completions (``history.ops``), runs the P-compositional WGL
(``checkers.linearizability``) on Spark, one part per key, and turns its anomalies into results
that cite event ids.

Each op sits on the merged history's clock (``idx``). An op whose outcome is unknown (``info``, no
completion, or an output the workload cannot promise) is open until the end: it may have taken
effect at any time after its invoke, or never. A part whose search runs out of budget is
``unknown``, never valid. A history with none of the workload's ops is valid with a count of 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from checkers.checker import Events, Reads
from checkers.models import Model
from checkers.ops import OPEN, UNKNOWN, Op, short
from checkers.result import UNKNOWN as UNKNOWN_VERDICT
from checkers.result import Result, anomaly, result
from history.ops import pair_operations

Row = dict[str, Any]


@dataclass(frozen=True)
class Undecided:
    """What ``to_op`` returns for an op whose events lack a field it needs (missing: the loader
    refuses a wrong-typed one): ``op`` is what can still be searched without it (made open, or None
    to leave it out), ``why`` is said in the result. The verdict is then never valid; and when
    ``op`` is not such a weakening (a write left out could make a read of its value look
    impossible), never invalid either (``fatal``)."""

    why: str
    op: tuple[str, Any, Any] | None = None
    fatal: bool = False


# (invoke row, completion row or None) → (f, model input, output), None to leave the op out, or Undecided
ToOp = Callable[[Row, Row | None], "tuple[str, Any, Any] | Undecided | None"]
# every op of one history → the ops to search: a workload may pin down what its other ops already
# determine (an open op's only possible outcome, or that it cannot have taken effect); it must not
# change the verdict, only the work
Prepare = Callable[[list[Op]], list[Op]]
# (every op of the history, the op that could not be linearized, describe) → (message prefix, ops to cite)
Explain = Callable[[list[Op], Op, Callable[[Op], str]], tuple[str, list[Op]]]
BUDGET_SECONDS = 30.0  # CPU seconds per part


@dataclass
class HistoryOps:
    ops: list[Op]
    ids: dict[int, str]  # idx → event id
    undecided: list[Undecided]  # with the event ids in ``why``


def history_ops(rows: Iterable[Row], kinds: Iterable[str], to_op: ToOp) -> HistoryOps:
    """One history's ops of ``kinds`` (rows: envelope + ``v_<field>``), ``idx`` → event id, and what
    could not be read whole. Without ``index`` (``idx`` null) no op has a place on the clock: every
    op is undecided."""
    wanted = set(kinds)
    rows = [r for r in rows if r["f"] in wanted]
    if any(r["idx"] is None for r in rows):
        why = Undecided(f"{next(r['id'] for r in rows if r['idx'] is None)} has no index: no order of the ops",
                        fatal=True)
        return HistoryOps([], {}, [why])
    rows = sorted(rows, key=lambda r: r["idx"])
    ids = {int(r["idx"]): r["id"] for r in rows}
    ops: list[Op] = []
    undecided: list[Undecided] = []
    for inv, done in pair_operations(rows, lambda r: (r.get("src"), r["process"]), lambda r: r["type"]):
        got = to_op(inv, done)
        if isinstance(got, Undecided):
            cite = " and ".join(r["id"] for r in (inv, done) if r is not None)
            undecided.append(Undecided(f"{cite}: {got.why}", got.op, got.fatal))
            got = got.op
        if got is None:
            continue
        f, inp, out = got
        ret_line = int(done["idx"]) if done is not None else 0
        ret = OPEN if out is UNKNOWN else float(ret_line)
        ops.append(Op(len(ops), inv["process"], f, inp, out, float(inv["idx"]), ret, int(inv["idx"]), ret_line))
    return HistoryOps(ops, ids, undecided)


def as_is(ops: list[Op]) -> list[Op]:
    return ops


def no_explanation(ops: list[Op], blocker: Op, describe: Callable[[Op], str]) -> tuple[str, list[Op]]:
    return "", []


@dataclass(frozen=True)
class WorkloadLinearizable:
    name: str
    reads: Reads
    to_op: ToOp
    model: Callable[[], Model]
    count: str  # the stats key of the op count, e.g. ``register_ops``
    explain: Explain = no_explanation
    prepare: Prepare = as_is
    # runs on Spark in a run; ``check`` also takes plain rows (the unit tests)
    local: bool = False
    budget_seconds: float | None = BUDGET_SECONDS
    budget_steps: int | None = None

    def check(self, events: Events) -> dict[str, Result]:
        if events.rows is not None:
            by = _by_hist(events.rows_of(self.reads))
            spark = None
        else:
            assert events.frame is not None
            from pyspark.sql import functions as F

            frame = events.frame.filter(F.col("f").isin(*self.reads))
            by = _by_hist(r.asDict() for r in frame.collect())
            spark = events.frame.sparkSession
        histories = {p: history_ops(by.get(p, []), self.reads, self.to_op) for p in events.paths}
        model = self.model()
        todo = [(p, self.prepare(h.ops), model) for p, h in histories.items() if h.ops]
        checked: dict[str, Result] = {}
        if todo:
            from checkers.linearizability import check_histories

            checked = check_histories(todo, spark, budget_seconds=self.budget_seconds,
                                      budget_steps=self.budget_steps)
        return {p: self._result(histories[p], checked.get(p)) for p in events.paths}

    def _result(self, got: HistoryOps, checked: Result | None) -> Result:
        ops, ids = got.ops, got.ids
        said = {"undecided": [u.why for u in got.undecided][:20]} if got.undecided else {}
        if checked is None:
            return result(UNKNOWN_VERDICT if said else True, [], **{self.count: 0}, **said)

        def describe(op: Op) -> str:
            out = "?" if op.output is UNKNOWN else short(op.output)
            return f"{ids.get(op.line, op.line)} process {op.process} {op.f} {short(op.input[2])} -> {out}"

        by_line = {o.line: o for o in ops}
        anomalies = []
        for a in checked["anomalies"]:
            lines = [int(str(e).rsplit(":", 1)[1]) for e in a["event_ids"]]
            cited = [ids[n] for n in lines if n in ids]
            blocker = by_line.get(lines[0]) if lines else None
            msg = a["message"]
            if blocker is not None:
                prefix, more = self.explain(ops, blocker, describe)
                for o in more:
                    cited += [ids[n] for n in (o.line, o.ret_line) if n in ids]
                msg = f"{prefix}; {msg}" if prefix else msg
            keys = {k: v for k, v in a.items() if k not in ("checker", "message", "event_ids")}
            anomalies.append(anomaly(self.name, msg, cited, **keys))
        s = checked["stats"]
        valid = checked["valid"]
        if got.undecided and (valid is True or any(u.fatal for u in got.undecided)):
            valid = UNKNOWN_VERDICT  # what could not be read could have explained, or hidden, an anomaly
        return result(valid, anomalies, **{self.count: len(ops)}, **said, keys=s.get("parts"),
                      keys_unknown=s.get("parts_unknown"), steps=s.get("steps"),
                      engine=s.get("engine"), by_kind=_counts(ops))


def _by_hist(rows: Iterable[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r["hist"], []).append(r)
    return out


def _counts(ops: list[Op]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in ops:
        t = "info" if o.output is UNKNOWN else "fail" if o.output is False else "ok"
        out[f"{o.f}_{t}"] = out.get(f"{o.f}_{t}", 0) + 1
    return out
