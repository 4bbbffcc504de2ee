"""The register workload's checker (``workloads.register``): linearizability of ZooKeeper registers,
the P-compositional WGL search on Spark, one task part per key.

Reads the client ops ``reg_read``, ``reg_write``, ``reg_cas`` (docs/events.md) and turns each
invoke + completion into a ``checkers.ops.Op`` on the merged history's clock (``idx``):

* ok: the op with its output (a read's (value, version), a write's or cas's new version);
* fail: a cas's BadVersion is kept (output False: it says the version was not ``expected``);
  every other fail certainly did not happen and is dropped;
* info (or no completion): a write or cas is open until the end (it may or may not have taken
  effect); a read is dropped (it changed nothing).

A key whose search runs out of budget is ``unknown``, never valid. An illegal key's anomaly cites
the op the search could not linearize (invoke and completion ids) and, when that op is a read, the
write or cas that had already completed with a later version before the read began: the stale read.
A history without register ops is valid with ``register_ops`` 0 (nothing to check).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from checkers.checker import Events
from checkers.models import VersionedRegister
from checkers.ops import OPEN, UNKNOWN, Op
from checkers.result import Result, anomaly, result

NAME = "register_linearizable"
KINDS = {"reg_read": "read", "reg_write": "write", "reg_cas": "cas"}
READS = {"reg_read": ("key", "mode", "server", "value", "version"),
         "reg_write": ("key", "server", "value", "version"),
         "reg_cas": ("error", "expected", "key", "server", "value", "version")}
BUDGET_SECONDS = 30.0  # CPU seconds per key


def history_ops(rows: Iterable[dict[str, Any]]) -> tuple[list[Op], dict[int, str]]:
    """The register ops of one history's rows (envelope + ``v_<field>``), and ``idx`` → event id."""
    rows = sorted((r for r in rows if r["f"] in KINDS), key=lambda r: r["idx"])
    ids = {int(r["idx"]): r["id"] for r in rows}
    pending: dict[Any, dict[str, Any]] = {}  # process -> its invoke
    ops: list[Op] = []

    def add(inv: dict[str, Any], done: dict[str, Any] | None) -> None:
        f = KINDS[inv["f"]]
        typ = done["type"] if done is not None else "info"
        src = done if done is not None else inv
        key = inv["v_key"]
        if typ == "fail" and not (f == "cas" and src.get("v_error") == "bad version"):
            return
        if typ == "info" and f == "read":
            return
        value = inv["v_value"]
        expected = src.get("v_expected")
        arg = None if f == "read" else value if f == "write" else (expected, value)
        if typ == "ok":
            out: Any = (src["v_value"], src["v_version"]) if f == "read" else src["v_version"]
            ret, ret_line = float(src["idx"]), int(src["idx"])
        elif typ == "fail":
            out, ret, ret_line = False, float(src["idx"]), int(src["idx"])
        else:
            out, ret, ret_line = UNKNOWN, OPEN, int(src["idx"]) if done is not None else 0
        ops.append(Op(len(ops), inv["process"], f, (f, key, arg), out, float(inv["idx"]), ret, int(inv["idx"]),
                      ret_line))

    for r in rows:
        if r["type"] == "invoke":
            pending[r["process"]] = r
        elif r["process"] in pending:
            add(pending.pop(r["process"]), r)
    for inv in pending.values():  # never completed: unknown outcome
        add(inv, None)
    return ops, ids


def stale_writes(ops: list[Op], blocker: Op) -> list[Op]:
    """For a read that cannot be linearized: the writes/cas of its key that completed, with a later
    version than it returned, before it was invoked (it read a state older than they left)."""
    if blocker.f != "read" or blocker.output is UNKNOWN:
        return []
    _, version = blocker.output
    key = blocker.input[1]
    return sorted((o for o in ops if o.f in ("write", "cas") and o.input[1] == key and isinstance(o.output, int)
                   and not isinstance(o.output, bool) and o.output > version and o.ret < blocker.call),
                  key=lambda o: -o.ret)[:1]


def _describe(op: Op, ids: dict[int, str]) -> str:
    out = "?" if op.output is UNKNOWN else repr(op.output)
    return f"{ids.get(op.line, op.line)} process {op.process} {op.f} {op.input[2]!r} -> {out}"


@dataclass(frozen=True)
class RegisterLinearizable:
    name: str = NAME
    reads: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(READS))
    # runs on Spark in a run; ``check`` also takes plain rows (the unit tests), but a run's histories
    # always go to Spark, one task part per key
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

            frame = events.frame.filter(F.col("f").isin(*KINDS))
            by = _by_hist(r.asDict() for r in frame.collect())
            spark = events.frame.sparkSession
        histories = {p: history_ops(by.get(p, [])) for p in events.paths}
        model = VersionedRegister()
        todo = [(p, ops, model) for p, (ops, _) in histories.items() if ops]
        checked: dict[str, Result] = {}
        if todo:
            from checkers.linearizability import check_histories

            checked = check_histories(todo, spark, budget_seconds=self.budget_seconds,
                                     budget_steps=self.budget_steps)
        return {p: self._result(p, histories[p], checked.get(p)) for p in events.paths}

    def _result(self, path: str, got: tuple[list[Op], dict[int, str]], checked: Result | None) -> Result:
        ops, ids = got
        if checked is None:
            return result(True, [], register_ops=0)
        by_line = {o.line: o for o in ops}
        anomalies = []
        for a in checked["anomalies"]:
            lines = [int(str(e).rsplit(":", 1)[1]) for e in a["event_ids"]]
            cited = [ids[n] for n in lines if n in ids]
            blocker = by_line.get(lines[0]) if lines else None
            msg = a["message"]
            if blocker is not None:
                stale = stale_writes(ops, blocker)
                for w in stale:
                    cited += [ids[n] for n in (w.line, w.ret_line) if n in ids]
                    msg = (f"stale read: {_describe(blocker, ids)} began after {_describe(w, ids)} had completed "
                           f"(version {w.output}); {msg}")
            keys = {k: v for k, v in a.items() if k not in ("checker", "message", "event_ids")}
            anomalies.append(anomaly(self.name, msg, cited, **keys))
        s = checked["stats"]
        return result(checked["valid"], anomalies, register_ops=len(ops), keys=s.get("parts"),
                      keys_unknown=s.get("parts_unknown"), steps=s.get("steps"),
                      engine=s.get("engine"), by_kind=_counts(ops))


def _by_hist(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["hist"], []).append(r)
    return out


def _counts(ops: list[Op]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in ops:
        t = "info" if o.output is UNKNOWN else "fail" if o.output is False else "ok"
        out[f"{o.f}_{t}"] = out.get(f"{o.f}_{t}", 0) + 1
    return out


REGISTER = RegisterLinearizable()
