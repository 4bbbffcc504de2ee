"""The queue workload's log model and its pure preparation, on plain data: the partition-log model
under WGL (legal, a real-time order violation, a lost write), how invoke/completion rows become
ops, and how a final read settles open sends without changing the verdict."""

from __future__ import annotations

from typing import Any

from checkers.models import PartitionLog
from checkers.ops import OPEN, UNKNOWN, Op
from checkers.queue_log import READS, queue_op, settle_open_sends
from checkers.wgl import check
from checkers.wgl_workload import history_ops

M = PartitionLog()
P = "q-0"


def op(i: int, f: str, arg: Any, out: Any, call: float, ret: float) -> Op:
    return Op(i, i, f, (f, P, arg), out, call, ret, int(call), 0 if ret == OPEN else int(ret))


def test_sends_and_prefix_reads_linearize() -> None:
    ops = [op(0, "send", "a", 0, 1, 2), op(1, "send", "b", 1, 1.5, 3),
           op(2, "read", 0, ((0, "a"),), 4, 5),  # a poll may read less than the log holds
           op(3, "read_all", None, ((0, "a"), (1, "b")), 6, 7)]
    assert check(ops, M) is True


def test_a_later_send_with_a_lower_offset_is_not_linearizable() -> None:
    ops = [op(0, "send", "A", 1, 1, 2), op(1, "send", "B", 0, 3, 4),
           op(2, "read_all", None, ((0, "B"), (1, "A")), 5, 6)]
    assert check(ops, M) is False


def test_a_final_read_missing_an_acknowledged_send_is_not_linearizable() -> None:
    ops = [op(0, "send", "a", 0, 1, 2), op(1, "send", "b", 1, 3, 4), op(2, "read_all", None, ((0, "a"),), 5, 6)]
    assert check(ops, M) is False
    gap = [op(0, "send", "a", 0, 1, 2), op(1, "read", 0, ((0, "a"), (2, "c")), 3, 4)]
    assert check(gap, M) is False, "a read's offsets are consecutive"


def test_open_sends_are_settled_by_the_final_read_with_the_same_verdict() -> None:
    ops = [op(0, "send", "a", UNKNOWN, 1, OPEN), op(1, "send", "x", UNKNOWN, 1, OPEN),
           op(2, "send", "b", 1, 2, 3), op(3, "read_all", None, ((0, "a"), (1, "b")), 5, 6)]
    settled = settle_open_sends(ops)
    assert [(o.input[2], o.output) for o in settled if o.f == "send"] == [("a", 0), ("b", 1)], "x never happened"
    assert check(ops, M) is True and check(settled, M) is True
    bad = [*ops[:3], op(3, "read_all", None, ((0, "b"), (1, "a")), 5, 6)]
    assert check(bad, M) is False and check(settle_open_sends(bad), M) is False
    no_final = ops[:3]
    assert settle_open_sends(no_final) == no_final, "without a final read nothing is settled"


def rows(*specs: tuple[str, str, Any, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for i, (f, typ, process, value) in enumerate(specs, 1):
        out.append({"hist": "h", "id": f"client/{i}", "idx": i, "f": f, "type": typ, "process": process,
                    **{f"v_{k}": v for k, v in value.items()}})
    return out


def test_rows_become_ops() -> None:
    base = {"topic": "q", "partition": 0}
    h = history_ops(rows(
        ("send", "invoke", 0, {**base, "value": "a", "acks": "all"}),
        ("send", "ok", 0, {**base, "value": "a", "acks": "all", "offset": 0}),
        ("send", "invoke", 1, {**base, "value": "b", "acks": "1"}),
        ("send", "ok", 1, {**base, "value": "b", "acks": "1", "offset": 1}),  # acks=1: promises nothing
        ("send", "invoke", 2, {**base, "value": "c", "acks": "all"}),
        ("send", "fail", 2, {**base, "value": "c", "acks": "all"}),  # did not append: left out
        ("poll", "invoke", 3, {**base}),
        ("poll", "ok", 3, {**base, "offset": 0, "offsets": [0, 1], "values": '["a","b"]'}),
        ("final_read", "invoke", "final", {**base}),
        ("final_read", "info", "final", {**base}),  # a read that did not answer: left out
    ), READS, queue_op)
    got, ids = h.ops, h.ids
    assert [(o.input, o.output, o.open) for o in got] == [
        (("send", "q-0", "a"), 0, False), (("send", "q-0", "b"), UNKNOWN, True),
        (("read", "q-0", 0), ((0, "a"), (1, "b")), False)]
    assert ids[8] == "client/8"
