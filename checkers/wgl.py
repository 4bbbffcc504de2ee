"""Wing & Gong linearizability search with Lowe's memoisation, as in Porcupine's checker.go.

Entries (calls and returns) sit in a doubly linked list sorted by time, calls first at equal
times. At a call, try the model step; if legal and (linearized bitset, new state) is new, lift the
op out and restart from the head; at a return, that op can no longer be linearized: backtrack.
Open ops (unknown outcome) have their return at the end of the list: reaching one means every
completed op is linearized, so the open ops left over are taken to have had no effect.

:class:`Search` is resumable (``run(max_iters)``) so one process can interleave many parts, like
Porcupine's goroutines, and stop the others as soon as one part is illegal.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from checkers.models import Model
from checkers.ops import Op

UNKNOWN = "unknown"


class Search:
    """One part's search. ``run`` returns None while unfinished, else True/False."""

    def __init__(self, ops: Sequence[Op], model: Model) -> None:
        self.ops = list(ops)
        self.model = model
        n = len(self.ops)
        events: list[tuple[float, int, int]] = []
        for i, op in enumerate(self.ops):
            events.append((op.call, 0, i))
            events.append((op.ret, 1, i))
        events.sort()
        # node 0 = head, 1..2n = entries, 2n+1 = tail
        size = 2 * n + 2
        self.tail = size - 1
        self.nxt = list(range(1, size + 1))
        self.prv = list(range(-1, size - 1))
        self.opidx = [-1] * size  # op index of a node
        self.match = [0] * size  # call node -> its return node; 0 for returns
        self.open_ret = [False] * size
        call_node = {}
        for node, (_, kind, i) in enumerate(events, 1):
            self.opidx[node] = i
            if kind == 0:
                call_node[i] = node
            else:
                self.match[call_node[i]] = node
                self.open_ret[node] = math.isinf(self.ops[i].ret)
        self.entry = self.nxt[0]
        self.state = model.init()
        self.linearized = 0
        self.calls: list[tuple[int, Any]] = []
        self.cache: set[tuple[int, Any]] = set()
        self.steps = 0
        self.done: bool | None = True if n == 0 else None
        self.best_depth = -1
        self.blocker = -1  # op index whose return ended the deepest partial linearization

    def run(self, max_iters: int) -> bool | None:
        if self.done is not None:
            return self.done
        nxt, prv, match, opidx, open_ret = self.nxt, self.prv, self.match, self.opidx, self.open_ret
        ops, step, cache, calls = self.ops, self.model.step, self.cache, self.calls
        entry, state, lin, tail = self.entry, self.state, self.linearized, self.tail
        it = 0
        result: bool | None = None
        while it < max_iters:
            it += 1
            if nxt[0] == tail:
                result = True
                break
            m = match[entry]
            if m:  # a call
                op = ops[opidx[entry]]
                ok, new_state = step(state, op.input, op.output)
                if ok:
                    new_lin = lin | (1 << opidx[entry])
                    key = (new_lin, new_state)
                    if key not in cache:
                        cache.add(key)
                        calls.append((entry, state))
                        state, lin = new_state, new_lin
                        # lift the call and its return out of the list
                        p, q = prv[entry], nxt[entry]
                        nxt[p] = q
                        prv[q] = p
                        p, q = prv[m], nxt[m]
                        nxt[p] = q
                        prv[q] = p
                        entry = nxt[0]
                        continue
                entry = nxt[entry]
            else:  # a return
                if open_ret[entry]:
                    result = True  # every completed op is linearized; leftover open ops had no effect
                    break
                if len(calls) > self.best_depth:
                    self.best_depth, self.blocker = len(calls), opidx[entry]
                if not calls:
                    result = False
                    break
                entry, state = calls.pop()
                lin &= ~(1 << opidx[entry])
                m = match[entry]
                # unlift: return first, then the call
                nxt[prv[m]] = m
                prv[nxt[m]] = m
                nxt[prv[entry]] = entry
                prv[nxt[entry]] = entry
                entry = nxt[entry]
        self.steps += it
        self.entry, self.state, self.linearized = entry, state, lin
        if result is not None:
            self.done = result
            if result:
                self.cache = set()  # free memory early
        return result

    def explain(self) -> str:
        if self.done is not False or self.blocker < 0:
            return ""
        return blocked(self.best_depth, self.ops[self.blocker])[0]


def blocked(depth: int, op: Op) -> tuple[str, list[int]]:
    """An illegal part's message and cited lines: ``op`` ended the deepest partial linearization, of
    ``depth`` ops (``zkfence.KvSearch`` reports the same two, ``checkers.ref_jvm``)."""
    return (f"no linearization: at most {depth} ops linearize before {op.describe()} must have taken effect, "
            f"and it cannot", [x for x in (op.line, op.ret_line) if x])


def over_budget(steps: int, cpu_seconds: float) -> str:
    """An unknown part's message: its budget ran out."""
    return f"budget exhausted after {steps} steps, {cpu_seconds:.1f}s CPU"


@dataclass
class Part:
    """One independently checkable piece of one history (P-compositionality)."""

    history: str
    key: Any
    ops: list[Op]
    model: Model


@dataclass
class PartResult:
    history: str
    key: Any
    valid: bool | str  # True, False, "unknown" ("cancelled" parts are dropped by callers)
    ops: int
    steps: int = 0
    seconds: float = 0.0
    message: str = ""
    lines: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "history": self.history,
            "key": None if self.key is None else str(self.key),
            "valid": self.valid,
            "ops": self.ops,
            "steps": self.steps,
            "seconds": round(self.seconds, 6),
            "message": self.message,
            "lines": self.lines,
        }


def split(history: str, ops: Sequence[Op], model: Model) -> list[Part]:
    return [Part(history, key, part_ops, model) for key, part_ops in model.partition(ops)]


def run_parts(
    parts: Sequence[Part],
    *,
    budget_seconds: float | None = 30.0,
    budget_steps: int | None = None,
    slice_iters: int = 4000,
    cancelled: Callable[[str], bool] | None = None,
    on_result: Callable[[PartResult], None] | None = None,
    poll_seconds: float = 0.05,
) -> list[PartResult]:
    """Check parts round-robin in this process, time-slicing like goroutines on one core.

    A part that exhausts its budget (its own CPU seconds or steps) is "unknown", never valid. The
    first illegal part of a history stops that history's other parts (they are dropped from the
    output). ``cancelled(history)`` is polled every ``poll_seconds`` for outside cancellation.
    """
    active: list[tuple[Part, Search, list[float]]] = [(p, Search(p.ops, p.model), [0.0]) for p in parts]
    dead: set[str] = set()
    out: list[PartResult] = []
    last_poll = time.monotonic()

    def emit(r: PartResult) -> None:
        out.append(r)
        if on_result is not None:
            on_result(r)

    while active:
        still: list[tuple[Part, Search, list[float]]] = []
        now = time.monotonic()
        if cancelled is not None and now - last_poll >= poll_seconds:
            last_poll = now
            for h in {p.history for p, _, _ in active} - dead:
                if cancelled(h):
                    dead.add(h)
        for part, search, spent in active:
            if part.history in dead:
                continue
            t0 = time.process_time()
            verdict = search.run(slice_iters)
            spent[0] += time.process_time() - t0
            if verdict is None:
                over_t = budget_seconds is not None and spent[0] >= budget_seconds
                over_s = budget_steps is not None and search.steps >= budget_steps
                if not (over_t or over_s):
                    still.append((part, search, spent))
                    continue
                msg = over_budget(search.steps, spent[0])
                emit(PartResult(part.history, part.key, UNKNOWN, len(part.ops), search.steps, spent[0], msg))
                continue
            lines: list[int] = []
            msg = ""
            if verdict is False:
                dead.add(part.history)
                if search.blocker >= 0:
                    msg, lines = blocked(search.best_depth, search.ops[search.blocker])
            emit(PartResult(part.history, part.key, verdict, len(part.ops), search.steps, spent[0], msg, lines))
        active = still
    return out


def check(ops: Sequence[Op], model: Model, **kw: Any) -> bool | str:
    """Pure check of one history: True, False or "unknown"."""
    results = run_parts(split("h", ops, model), **kw)
    return combine(r.valid for r in results)


def combine(valids: Any) -> bool | str:
    out: bool | str = True
    for v in valids:
        if v is False:
            return False
        if v == UNKNOWN:
            out = UNKNOWN
    return out
