"""Histories generated from a sequential model with random concurrency are linearizable; changing
one read that overlaps no other op makes them not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from checkers.models import KeyValue, Register
from checkers.ops import Op
from checkers.wgl import check

reg_ops = st.lists(st.one_of(st.tuples(st.just("write"), st.integers(0, 3)), st.just(("read", None))),
                   min_size=1, max_size=14)
jitter = st.lists(st.tuples(st.floats(0, 25), st.floats(0, 25)), min_size=14, max_size=14)


def build(seq, jit, isolate: int | None = None) -> tuple[list[Op], list]:  # noqa: ANN001
    """Run ``seq`` on a register at points 10*i; intervals are jittered around those points."""
    state, ops, outs = 0, [], []
    for i, (f, v) in enumerate(seq):
        if f == "write":
            state = v
        out = state if f == "read" else None
        outs.append(state)
        lp = 10.0 * i
        call, ret = lp - jit[i][0], lp + jit[i][1]
        ops.append(Op(i, i, f, (f, v), out, call, ret))
    if isolate is not None:
        k = 10.0 * isolate
        for o in ops:
            if o.index < isolate:
                o.ret = min(o.ret, k - 5)
            elif o.index > isolate:
                o.call = max(o.call, k + 5)
            else:
                o.call, o.ret = k - 1, k + 1
    return ops, outs


@settings(max_examples=60, deadline=None)
@given(reg_ops, jitter)
def test_generated_histories_are_linearizable(seq, jit) -> None:  # noqa: ANN001
    ops, _ = build(seq, jit)
    assert check(ops, Register(0, nil_reads_any=False)) is True


@settings(max_examples=60, deadline=None)
@given(reg_ops, jitter, st.data())
def test_one_wrong_isolated_read_is_caught(seq, jit, data) -> None:  # noqa: ANN001
    seq = [*seq, ("read", None)]
    k = data.draw(st.sampled_from([i for i, (f, _) in enumerate(seq) if f == "read"]))
    ops, outs = build(seq, [*jit, (0.0, 0.0)], isolate=k)
    assert check(ops, Register(0, nil_reads_any=False)) is True
    ops[k].output = outs[k] + data.draw(st.integers(10, 13))  # never written: no order can explain it
    assert check(ops, Register(0, nil_reads_any=False)) is False


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["put", "append", "get"]),
                          st.sampled_from(["x", "y"])), min_size=1, max_size=14), jitter)
def test_kv_generated_histories_are_linearizable(seq, jit) -> None:  # noqa: ANN001
    state: dict[str, str] = {}
    ops = []
    for i, (key, f, v) in enumerate(seq):
        cur = state.get(key, "")
        state[key] = v if f == "put" else cur + v if f == "append" else cur
        ops.append(Op(i, i, f, (f, key, None if f == "get" else v), cur if f == "get" else None,
                      10.0 * i - jit[i][0], 10.0 * i + jit[i][1]))
    assert check(ops, KeyValue()) is True
