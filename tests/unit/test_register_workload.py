"""The register workload's pure parts and its checker on hand-written histories: the versioned
register model under WGL (legal, illegal, a stale read), the pairing of invoke/completion rows into
ops, and the checker's verdicts (the stale read and the write it missed cited by event id)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from checkers.checker import Events
from checkers.models import VersionedRegister
from checkers.ops import OPEN, UNKNOWN, Op
from checkers.register import KINDS, REGISTER, register_op
from checkers.wgl import check
from checkers.wgl_workload import WorkloadLinearizable, history_ops
from harness.cli import main
from workloads import WORKLOADS
from workloads.register import RegisterGenerator, register_workload, setup_ops

M = VersionedRegister()


def op(i: int, f: str, key: str, arg: Any, out: Any, call: float, ret: float) -> Op:
    return Op(i, i, f, (f, key, arg), out, call, ret)


# -- the model ------------------------------------------------------------------------------------------
def test_sequential_history_with_versions_is_linearizable() -> None:
    ops = [op(0, "write", "k", "a", 1, 0, 1), op(1, "read", "k", None, ("a", 1), 2, 3),
           op(2, "cas", "k", (1, "b"), 2, 4, 5), op(3, "cas", "k", (1, "c"), False, 6, 7),
           op(4, "read", "k", None, ("b", 2), 8, 9)]
    assert check(ops, M) is True


def test_initial_state_is_empty_at_version_zero() -> None:
    assert check([op(0, "read", "k", None, (None, 0), 0, 1)], M) is True
    assert check([op(0, "read", "k", None, ("x", 0), 0, 1)], M) is False


def test_a_write_must_return_the_next_version() -> None:
    assert check([op(0, "write", "k", "a", 2, 0, 1)], M) is False


def test_stale_read_after_a_completed_write_is_not_linearizable() -> None:
    ops = [op(0, "write", "k", "a", 1, 0, 1), op(1, "read", "k", None, (None, 0), 2, 3)]
    assert check(ops, M) is False


def test_concurrent_read_of_the_old_value_is_linearizable() -> None:
    ops = [op(0, "write", "k", "a", 1, 0, 3), op(1, "read", "k", None, (None, 0), 1, 4)]
    assert check(ops, M) is True


def test_failed_cas_says_the_version_was_not_the_expected_one() -> None:
    assert check([op(0, "cas", "k", (0, "b"), False, 0, 1)], M) is False  # version 0 was expected: it must swap
    assert check([op(0, "write", "k", "a", 1, 0, 1), op(1, "cas", "k", (0, "b"), False, 2, 3)], M) is True


def test_unknown_write_may_or_may_not_have_happened() -> None:
    w = Op(0, 0, "write", ("write", "k", "a"), UNKNOWN, 0, OPEN)
    assert check([w, op(1, "read", "k", None, ("a", 1), 2, 3)], M) is True
    assert check([w, op(1, "read", "k", None, (None, 0), 2, 3)], M) is True
    assert check([w, op(1, "read", "k", None, ("b", 1), 2, 3)], M) is False


def test_keys_are_independent_parts() -> None:
    ops = [op(0, "write", "a", "x", 1, 0, 1), op(1, "write", "b", "y", 1, 0, 1),
           op(2, "read", "a", None, ("x", 1), 2, 3)]
    assert [k for k, _ in M.partition(ops)] == ["a", "b"]
    assert check(ops, M) is True


# -- rows → ops, and the checker ---------------------------------------------------------------------
def _rows(events: list[tuple[str, str, int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """(f, type, proc, value fields) in merged order → loader rows (envelope + v_<field>)."""
    fields = ("expected", "key", "mode", "server", "value", "version", "error")
    out = []
    for i, (f, typ, proc, value) in enumerate(events):
        row = {"hist": "h", "src": "client", "seq": i + 1, "id": f"client/{i + 1}", "idx": i, "t_wall": float(i),
               "type": typ, "f": f, "process": str(proc), "node": None}
        row.update({f"v_{k}": None for k in fields})
        row.update({f"v_{k}": v for k, v in value.items()})
        out.append(row)
    return out


STALE = [
    ("reg_write", "invoke", 0, {"key": "k0", "value": "p0-0"}),
    ("reg_write", "ok", 0, {"key": "k0", "value": "p0-0", "version": 1, "server": "zk1"}),
    ("reg_read", "invoke", 1, {"key": "k0", "mode": "plain"}),
    ("reg_read", "ok", 1, {"key": "k0", "mode": "plain", "value": None, "version": 0, "server": "zk3"}),
]


def test_history_ops_pairs_invokes_and_completions_by_process() -> None:
    rows = _rows([
        ("reg_write", "invoke", 0, {"key": "k0", "value": "a"}),
        ("reg_read", "invoke", 1, {"key": "k0", "mode": "sync"}),
        ("reg_write", "info", 0, {"key": "k0", "value": "a", "error": "timeout"}),
        ("reg_read", "ok", 1, {"key": "k0", "value": "a", "version": 1}),
        ("reg_cas", "invoke", 2, {"key": "k0", "value": "b"}),
        ("reg_cas", "fail", 2, {"key": "k0", "value": "b", "expected": 0, "error": "bad version"}),
        ("reg_read", "invoke", 3, {"key": "k0"}),  # never completed: a read changes nothing, dropped
    ])
    h = history_ops(rows, KINDS, register_op)
    ops, ids = h.ops, h.ids
    assert [(o.f, o.output, o.open) for o in ops] == [("write", UNKNOWN, True), ("read", ("a", 1), False),
                                                      ("cas", False, False)]
    assert ops[2].input == ("cas", "k0", (0, "b"))
    assert ids[3] == "client/4"


def _check(rows: list[dict[str, Any]], checker: WorkloadLinearizable = REGISTER) -> dict[str, Any]:
    return checker.check(Events(("h",), (checker,), rows=rows))["h"]


def test_checker_cites_the_stale_read_and_the_write_it_missed() -> None:
    r = _check(_rows(STALE))
    assert r["valid"] is False and r["stats"]["register_ops"] == 2
    (a,) = r["anomalies"]
    assert a["checker"] == "register_linearizable" and a["key"] == "k0"
    assert a["message"].startswith("stale read: client/3 process 1 read None -> (None, 0) began after client/1 ")
    assert a["event_ids"] == ["client/3", "client/4", "client/1", "client/2"]


# the write of version 2 has not completed when the lagging server's read begins: the only proof of
# staleness is another server's read that had already returned version 2
STALE_AFTER_A_READ = STALE[:2] + [
    ("reg_write", "invoke", 2, {"key": "k0", "value": "p2-0"}),
    ("reg_read", "invoke", 3, {"key": "k0", "mode": "plain"}),
    ("reg_read", "ok", 3, {"key": "k0", "mode": "plain", "value": "p2-0", "version": 2, "server": "zk2"}),
    ("reg_read", "invoke", 1, {"key": "k0", "mode": "plain"}),
    ("reg_read", "ok", 1, {"key": "k0", "mode": "plain", "value": "p0-0", "version": 1, "server": "zk3"}),
    ("reg_write", "ok", 2, {"key": "k0", "value": "p2-0", "version": 2, "server": "zk2"}),
]


def test_checker_cites_the_read_that_saw_a_later_version_when_no_write_had_completed() -> None:
    r = _check(_rows(STALE_AFTER_A_READ))
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert a["message"].startswith("stale read: client/6 process 1 read None -> ('p0-0', 1) began after "
                                   "client/4 process 3 read None -> ('p2-0', 2) had completed (version 2)")
    assert a["event_ids"] == ["client/6", "client/7", "client/4", "client/5"]


def test_checker_cites_a_failed_cas_and_what_it_expected_when_nothing_showed_a_later_version() -> None:
    # process 2 saw version 1, then its cas expecting 1 failed: the pending write had made version 2;
    # process 1's read of version 1 after that is stale, though no op had shown version 2 yet
    rows = _rows(STALE[:2] + [
        ("reg_read", "invoke", 2, {"key": "k0", "mode": "plain"}),
        ("reg_read", "ok", 2, {"key": "k0", "mode": "plain", "value": "p0-0", "version": 1, "server": "zk2"}),
        ("reg_write", "invoke", 3, {"key": "k0", "value": "p3-0"}),
        ("reg_cas", "invoke", 2, {"key": "k0", "value": "p2-1"}),
        ("reg_cas", "fail", 2, {"key": "k0", "value": "p2-1", "expected": 1, "error": "bad version", "server": "zk2"}),
        ("reg_read", "invoke", 1, {"key": "k0", "mode": "plain"}),
        ("reg_read", "ok", 1, {"key": "k0", "mode": "plain", "value": "p0-0", "version": 1, "server": "zk3"}),
        ("reg_write", "ok", 3, {"key": "k0", "value": "p3-0", "version": 2, "server": "zk2"}),
    ])
    (a,) = _check(rows)["anomalies"]
    assert a["message"].startswith(
        "stale read: client/8 process 1 read None -> ('p0-0', 1) began after client/6 process 2 cas (1, 'p2-1') -> "
        "False had failed (the version was no longer 1, which client/3 process 2 read None -> ('p0-0', 1) had "
        "shown before the cas began)"), a["message"]
    assert a["event_ids"] == ["client/8", "client/9", "client/6", "client/7", "client/3", "client/4"]
    # version 0 needs no op to show it: every register starts there
    rows = _rows([
        ("reg_write", "invoke", 0, {"key": "k0", "value": "p0-0"}),
        ("reg_cas", "invoke", 2, {"key": "k0", "value": "p2-0"}),
        ("reg_cas", "fail", 2, {"key": "k0", "value": "p2-0", "expected": 0, "error": "bad version", "server": "zk2"}),
        ("reg_read", "invoke", 1, {"key": "k0", "mode": "plain"}),
        ("reg_read", "ok", 1, {"key": "k0", "mode": "plain", "value": None, "version": 0, "server": "zk3"}),
    ])
    (a,) = _check(rows)["anomalies"]
    assert a["message"].startswith("stale read: client/4 process 1 read None -> (None, 0) began after client/2 "
                                   "process 2 cas (0, 'p2-0') -> False had failed (the version was no longer 0);")
    assert a["event_ids"] == ["client/4", "client/5", "client/2", "client/3"]


def test_checker_valid_on_a_linearizable_history_and_silent_without_register_ops() -> None:
    ok = STALE[:2] + [("reg_read", "invoke", 1, {"key": "k0", "mode": "sync"}),
                      ("reg_read", "ok", 1, {"key": "k0", "value": "p0-0", "version": 1})]
    r = _check(_rows(ok))
    assert r["valid"] is True and r["stats"]["keys"] == 1 and r["stats"]["by_kind"] == {"write_ok": 1, "read_ok": 1}
    none = _check(_rows([("send", "invoke", 0, {})]))
    assert none == {"valid": True, "anomalies": [], "stats": {"register_ops": 0}}


def test_checker_over_budget_is_unknown_never_valid() -> None:
    writes = [("reg_write", "invoke", p, {"key": "k0", "value": f"v{p}"}) for p in range(16)]
    read = [("reg_read", "invoke", 99, {"key": "k0"}), ("reg_read", "ok", 99, {"key": "k0", "value": "zz",
                                                                               "version": 1})]
    r = _check(_rows(writes + read), replace(REGISTER, budget_steps=1))  # 16 open writes: > one slice
    assert r["valid"] == "unknown" and r["stats"]["keys_unknown"] == 1
    assert "budget exhausted" in r["anomalies"][0]["message"]


# -- the generator and the command line -------------------------------------------------------------
def test_generator_mixes_reads_writes_and_cas_with_unique_values() -> None:
    g = RegisterGenerator(keys=3, concurrency=2, reads="plain")
    ops = [g.next_op(p, 0.0) for _ in range(10) for p in (0, 1)]
    fs = [o.f for o in ops if o is not None]
    assert fs.count("reg_read") == 10 and fs.count("reg_write") == 6 and fs.count("reg_cas") == 4
    assert {o.value["mode"] for o in ops if o.f == "reg_read"} == {"plain"}
    values = [o.value["value"] for o in ops if o.f != "reg_read"]
    assert len(set(values)) == len(values), "every written value is unique"
    assert {o.value["key"] for o in ops} == {"k0", "k1", "k2"}


def test_workload_shape_and_bad_reads_mode() -> None:
    w = register_workload(concurrency=4)
    assert w.concurrency == 4 and w.checkers == ("register_linearizable",) and "register" in WORKLOADS
    assert [o.value["key"] for o in setup_ops(2)] == ["k0", "k1"]
    with pytest.raises(ValueError, match="reads"):
        register_workload(reads="stale")
    with pytest.raises(ValueError, match="rate"):
        register_workload(rate=0)


@pytest.mark.parametrize("args, flag", [
    (["--workload", "registers"], "--workload"),
    (["--workload", "register", "--rate", "0"], "--rate"),
    (["--workload", "register", "--concurrency", "-1"], "--concurrency"),
])
def test_bad_register_flags_exit_254(args: list[str], flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["run", *args])
    except SystemExit as e:  # a value its flag's type refuses: argparse's one line, exit 254
        code = e.code
    assert code == 254
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and (err.startswith(f"harness: {flag}:") or
                                           err.startswith(f"harness run: error: argument {flag}:")), err
