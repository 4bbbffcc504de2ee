from __future__ import annotations

from checkers.models import CasRegister, KeyValue, MultiRegister, Mutex, Register, make_model
from checkers.ops import OPEN, UNKNOWN, Op
from checkers.result import compose, worst
from checkers.wgl import check


def op(i: int, f: str, inp, out, call: float, ret: float = OPEN) -> Op:  # noqa: ANN001
    return Op(i, i, f, inp, UNKNOWN if ret == OPEN else out, call, ret)


def test_register_valid_and_invalid() -> None:
    m = Register(0)
    w = op(0, "write", ("write", 1), None, 0, 3)
    good = [w, op(1, "read", ("read", None), 1, 1, 2)]  # concurrent read may see the write
    bad = [w, op(1, "read", ("read", None), 2, 4, 5)]
    stale = [w, op(1, "read", ("read", None), 0, 4, 5)]  # after the write returned: must see 1
    assert check(good, m) is True
    assert check(bad, m) is False
    assert check(stale, m) is False


def test_open_ops_may_or_may_not_take_effect() -> None:
    m = Register(0, nil_reads_any=False)
    w = op(0, "write", ("write", 1), None, 0)  # unknown outcome, open until the end
    assert check([w, op(1, "read", ("read", None), 1, 1, 2)], m) is True
    assert check([w, op(1, "read", ("read", None), 0, 1, 2)], m) is True
    assert check([w, op(1, "read", ("read", None), 1, 1, 2), op(2, "read", ("read", None), 0, 3, 4)], m) is False


def test_cas_register_etcd_semantics() -> None:
    m = make_model("etcd")
    assert m.init() is None
    cas_fail = op(0, "cas", ("cas", (3, 0)), False, 0, 1)
    assert check([cas_fail], m) is True
    assert check([op(0, "cas", ("cas", (None, 1)), True, 0, 1)], m) is True
    assert check([cas_fail, op(1, "read", ("read", None), 3, 2, 3)], m) is False
    assert CasRegister(0).step(0, ("cas", (0, 5)), UNKNOWN) == (True, 5)


def test_kv_partitions_and_mutex_multi() -> None:
    kv = KeyValue()
    ops = [
        op(0, "append", ("append", "a", "x"), None, 0, 1),
        op(1, "append", ("append", "b", "y"), None, 0, 1),
        op(2, "get", ("get", "a", None), "x", 2, 3),
    ]
    assert len(kv.partition(ops)) == 2 and check(ops, kv) is True
    ops[2] = op(2, "get", ("get", "a", None), "xy", 2, 3)
    assert check(ops, kv) is False and check(ops, KeyValue(partitioned=False)) is False
    mx = Mutex()
    acq = [op(0, "acquire", ("acquire", None), None, 0, 1), op(1, "acquire", ("acquire", None), None, 2, 3)]
    assert check(acq, mx) is False
    assert check([acq[0], op(1, "acquire", ("acquire", None), None, 2)], mx) is True  # open: may never happen
    mr = MultiRegister({"x": 0})
    assert check([op(0, "txn", (("write", "x", 2), ("read", "x", None)), (None, 2), 0, 1)], mr) is True
    assert check([op(0, "txn", (("read", "x", None),), (2,), 0, 1)], mr) is False


def test_budget_gives_unknown_never_valid() -> None:
    m = Register(0)
    ops = [op(i, "write", ("write", i), None, 0, 100) for i in range(14)]
    ops.append(op(14, "read", ("read", None), 99, 101, 102))
    assert check(ops, m, budget_steps=50, budget_seconds=None) == "unknown"


def test_result_ranking() -> None:
    assert worst(True, "unknown", True) == "unknown"
    assert worst("unknown", False) is False
    r = compose({"a": {"valid": True, "anomalies": []}, "b": {"valid": "unknown", "anomalies": []}})
    assert r["valid"] == "unknown" and set(r["checkers"]) == {"a", "b"}
