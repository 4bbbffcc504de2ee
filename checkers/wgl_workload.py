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
from checkers.result import Result, anomaly, result
from history.ops import pair_operations

Row = dict[str, Any]
# (invoke row, completion row or None) → (f, model input, output) or None to leave the op out
ToOp = Callable[[Row, Row | None], tuple[str, Any, Any] | None]
# every op of one history → the ops to search: a workload may pin down what its other ops already
# determine (an open op's only possible outcome, or that it cannot have taken effect); it must not
# change the verdict, only the work
Prepare = Callable[[list[Op]], list[Op]]
# (every op of the history, the op that could not be linearized, describe) → (message prefix, ops to cite)
Explain = Callable[[list[Op], Op, Callable[[Op], str]], tuple[str, list[Op]]]
BUDGET_SECONDS = 30.0  # CPU seconds per part


def history_ops(rows: Iterable[Row], kinds: Iterable[str], to_op: ToOp) -> tuple[list[Op], dict[int, str]]:
    """One history's ops of ``kinds`` (rows: envelope + ``v_<field>``), and ``idx`` → event id."""
    wanted = set(kinds)
    rows = sorted((r for r in rows if r["f"] in wanted), key=lambda r: r["idx"])
    ids = {int(r["idx"]): r["id"] for r in rows}
    ops: list[Op] = []
    for inv, done in pair_operations(rows, lambda r: (r.get("src"), r["process"]), lambda r: r["type"]):
        got = to_op(inv, done)
        if got is None:
            continue
        f, inp, out = got
        ret_line = int(done["idx"]) if done is not None else 0
        ret = OPEN if out is UNKNOWN else float(ret_line)
        ops.append(Op(len(ops), inv["process"], f, inp, out, float(inv["idx"]), ret, int(inv["idx"]), ret_line))
    return ops, ids


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
        todo = [(p, self.prepare(ops), model) for p, (ops, _) in histories.items() if ops]
        checked: dict[str, Result] = {}
        if todo:
            from checkers.linearizability import check_histories

            checked = check_histories(todo, spark, budget_seconds=self.budget_seconds,
                                      budget_steps=self.budget_steps)
        return {p: self._result(histories[p], checked.get(p)) for p in events.paths}

    def _result(self, got: tuple[list[Op], dict[int, str]], checked: Result | None) -> Result:
        ops, ids = got
        if checked is None:
            return result(True, [], **{self.count: 0})

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
        return result(checked["valid"], anomalies, **{self.count: len(ops)}, keys=s.get("parts"),
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
