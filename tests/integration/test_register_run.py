"""Register workload runs: real sshd, ZooKeeper ensemble, Toxiproxy, broker agents and Spark; clients on
the control node read, write and cas znodes, each through its one server's Toxiproxy link, and the
WGL checker judges the history on Spark, one part per key.

* ``sync`` reads under faults that cut a server from its clients and pause the ZooKeeper leader
  (a new election) are linearizable.
* ``plain`` reads while one follower is paused again and again (ZooKeeper's quorum links are not
  proxied: a pause is how a follower falls behind the quorum here): see the test's docstring.

Only the register checker runs, to keep them short."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from history import read_events
from nemesis.base import FaultOp
from nemesis.schedule import Schedule, Step
from tests.runs import run_on

pytestmark = pytest.mark.integration


def _run(engine, tmp_path, reads: str, schedule: Schedule, time_limit: float, seed: int, extra: list[str] = ()):  # noqa: ANN202
    from base.inventory import load_inventory
    from harness.cli import build_parser
    from harness.commands.run import spec_from_args
    from workloads.register import REGISTER_CHECKERS

    args = build_parser().parse_args(["run", "--store", str(tmp_path / "store"), "--workload", "register",
                                      "--reads", reads, "--time-limit", str(time_limit), "--seed", str(seed),
                                      *extra])
    inv = load_inventory(args.inventory)
    spec = replace(spec_from_args(args, inv, schedule), checkers=REGISTER_CHECKERS)
    outcome = run_on(engine, args.store, spec)
    results = json.loads((outcome.run_dir / "results.json").read_text())
    history = list(read_events(outcome.run_dir / "history.jsonl"))
    print(f"register {reads}: {outcome.ops} in {outcome.wall_s:.1f}s (loaded), phases {outcome.phases}, "
          f"checker {results['checkers']['register_linearizable']}")
    return outcome, results, history


def test_sync_reads_are_linearizable_under_client_cuts_and_a_leader_pause(tmp_path, warm_engine):
    schedule = Schedule("register-faults", [
        Step(1.0, FaultOp("cut", "start", [], {"links": ["client->zk1"]})),
        Step(4.0, FaultOp("cut", "stop", [], {"links": ["client->zk1"]})),
        Step(4.5, FaultOp("pause", "start", [], {"spec": "zk-leader"})),
        Step(6.5, FaultOp("pause", "stop", [])),
    ])
    outcome, results, history = _run(warm_engine, tmp_path, "sync", schedule, 9.0, 11)

    assert outcome.error is None and outcome.valid is True, results
    stats = results["checkers"]["register_linearizable"]["stats"]
    ops = [e for e in history if e.f in ("reg_read", "reg_write", "reg_cas") and e.type != "invoke"]
    assert stats["keys"] == 3 and stats["keys_unknown"] == 0 and stats["engine"] == "spark"
    assert stats["register_ops"] > 100 and stats["by_kind"]["read_ok"] > 0 and stats["by_kind"]["write_ok"] > 0
    assert {e.value["mode"] for e in ops if e.f == "reg_read"} == {"sync"}
    assert {e.value["server"] for e in ops} == {"zk1", "zk2", "zk3"}, "clients spread over the servers"
    nemesis = [e for e in history if e.src == "nemesis" and e.f in ("cut", "pause")]
    assert any(e.f == "pause" and e.value.get("stage") == "complete" for e in nemesis), "the leader was paused"
    assert any(e.type == "info" for e in ops) or any(e.type == "fail" for e in ops), "the faults were felt"


def _follower_pauses(n: int, pause: float, gap: float) -> tuple[Schedule, float]:
    """Pause the first ZooKeeper follower ``n`` times (SIGSTOP, then SIGCONT ``pause`` s later): its
    clients stay connected to it while the other two servers keep the quorum and go on writing."""
    steps, t = [], 1.0
    for _ in range(n):
        steps += [Step(t, FaultOp("pause", "start", [], {"spec": "zk-follower"})),
                  Step(t + pause, FaultOp("pause", "stop", []))]
        t += pause + gap
    return Schedule("follower-pauses", steps), t + 1.0


def test_plain_follower_reads_while_a_follower_lags_are_shown_stale(tmp_path, warm_engine):
    """ZooKeeper's plain reads are only sequentially consistent: a client of a server that has not
    yet applied a committed write reads a version older than that write, which completed (through
    another server) before the read began. WGL finds no linearization, and the anomaly cites the
    stale read and its witness: that write or, when the write had not yet completed (its server
    applied it before its client heard back), another server's read that had already returned it,
    or a cas expecting the version read that had already failed.

    Measured on this loaded 2-core machine (9 clients, 3 per server): with five 1.2 s pauses of a
    follower, each of the four plain runs tried was invalid (2, 2, 4 and 9 stale reads of 1,550-4,836
    reads; 16 of the 17 inside the pause windows, on the paused follower and on the other follower,
    which the quorum then needs for every write); with no fault at all both plain runs tried were
    invalid too (6 of 2,907 and 2 of 2,789 reads: commit lag alone); sync reads under the same
    pauses stayed valid. The pauses widen the window; they are not what opens it. Whether one run
    sees a stale read is therefore a matter of chance, so up to three runs (seeds 5, 6, 7) are made
    and the first invalid one is examined; every run must end with a verdict, never an error, and
    no run may be invalid for any other reason than a stale read."""
    schedule, limit = _follower_pauses(5, 1.2, 1.3)
    for seed in (5, 6, 7):
        outcome, results, history = _run(warm_engine, tmp_path / f"seed{seed}", "plain", schedule, limit, seed,
                                         ["--concurrency", "9"])
        assert outcome.error is None and outcome.valid is not None, results
        if outcome.valid is False:
            break
    assert outcome.valid is False, f"no stale plain read in 3 runs: {results}"
    stale = [a for a in results["anomalies"] if a["checker"] == "register_linearizable"]
    assert stale and stale[0]["message"].startswith("stale read: "), stale
    by_id = {f"{e.src}/{e.seq}": e for e in history}
    read_inv, read_ok, seen_inv, seen_ok = (by_id[i] for i in stale[0]["event_ids"][:4])
    assert read_inv.f == read_ok.f == "reg_read" and read_ok.type == "ok" and read_ok.value["mode"] == "plain"
    assert seen_inv.f == seen_ok.f and read_ok.value["key"] == seen_ok.value["key"]
    assert seen_ok.t_wall <= read_inv.t_wall, "the witness had completed before the stale read began"
    if seen_ok.type == "fail":  # a cas expecting the version read had failed: the version was no longer that
        assert seen_ok.f == "reg_cas" and seen_ok.value["error"] == "bad version"
        assert seen_ok.value["expected"] == read_ok.value["version"]
    else:  # an op had shown a later version: on another server, as a server's state only moves forward
        assert seen_ok.type == "ok" and read_ok.value["version"] < seen_ok.value["version"]
        assert read_ok.value["server"] != seen_ok.value["server"]
