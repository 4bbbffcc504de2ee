"""Runs cut short keep their history: SIGTERM mid-fault ends a run with exit 130, its history
(agents' events included) and a verdict on it; after a SIGKILL of the control node, `harness
teardown` salvages the events, and removes the run's scratch dir whenever the control node died.
Real sshd, ZooKeeper, Toxiproxy and Spark."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from base.localstate import ENGINE_PREFIX, STATE_DIR, processes_mentioning
from history import read_events
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


def _harness(*argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True, env=ENV,
                          cwd=REPO, timeout=timeout)


def _start_run(store: Path) -> subprocess.Popen[str]:
    """`harness run` with a long isolation, returned once the fault is on."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--store", str(store), "--time-limit", "40",
                             "--target", "1", "--seed", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=ENV, cwd=REPO, start_new_session=True)
    seen = []
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if "nemesis isolate start" in line:
            time.sleep(1.0)  # the fault has been on for a moment: the agents have written about it
            return proc
    raise AssertionError("the run never started its fault:\n" + "".join(seen))


def _run_dir(store: Path) -> Path:
    (run_dir,) = [p for p in (store / "isolate-broker").iterdir() if p.is_dir() and not p.is_symlink()]
    return run_dir


def _assert_partial_history_checked(run_dir: Path, reason: str) -> None:
    history = list(read_events(run_dir / "history.jsonl"))
    kinds = {(e.src, e.f) for e in history}
    assert ("harness", "run_start") in kinds and ("harness", "run_end") not in kinds
    interrupted = [e for e in history if e.f == "run_interrupted"]
    assert [e.value["reason"] for e in interrupted] == [reason]
    assert {e.src for e in history if e.src.startswith("agent:")} == {"agent:1", "agent:2", "agent:3"}
    assert any(e.src == "nemesis" and e.f == "isolate" for e in history)
    check = _harness("check", str(run_dir), "--json")
    assert check.returncode in (0, 1, 2), check.stderr  # a verdict, not bad input
    row = json.loads(check.stdout.strip().splitlines()[-1])
    # liveness cannot be judged on a history that ends mid-fault: never "valid"
    assert row["checkers"]["registration_liveness"]["valid"] == "unknown"


def test_sigterm_during_the_fault_keeps_the_history_and_checks_it(tmp_path):
    store = tmp_path / "store"
    proc = _start_run(store)
    try:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, out
    assert "partial history checked" in out
    run_dir = _run_dir(store)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["interrupted"] == "interrupted during play" and results["valid"] != True  # noqa: E712
    _assert_partial_history_checked(run_dir, "interrupted during play")
    scratch = json.loads((run_dir / "run.json").read_text())["scratch"]
    assert processes_mentioning(scratch) == [], "an interrupted run left a process behind"


def test_teardown_salvages_the_history_of_a_killed_control_node(tmp_path):
    store = tmp_path / "store"
    proc = _start_run(store)
    run_dir = _run_dir(store)
    scratch = json.loads((run_dir / "run.json").read_text())["scratch"]
    try:
        os.kill(proc.pid, signal.SIGKILL)  # the control node crashes: nothing of its own cleans up
        proc.wait(10)
        assert not (run_dir / "history.jsonl").exists()
        res = _harness("teardown", timeout=120)
        assert res.returncode == 0, res.stderr
        assert "salvaged" in res.stdout and str(run_dir) in res.stdout, res.stdout
        deadline = time.monotonic() + 10
        while processes_mentioning(scratch) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_mentioning(scratch) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _harness("teardown", timeout=120)
    _assert_partial_history_checked(run_dir, "the control process died; events salvaged by harness teardown")
    assert not Path(scratch).exists(), "the engine's scratch dir outlived the salvage"


def _states_of(pid: int) -> list[str]:
    texts = []
    for p in STATE_DIR.glob("*.json"):
        with contextlib.suppress(OSError):  # removed since the glob
            texts.append(p.read_text())
    return [t for t in texts if json.loads(t).get("owner_pid") == pid]


def test_teardown_removes_the_scratch_dir_of_a_control_node_killed_while_it_checked(tmp_path):
    # By then the cluster is torn down and its state gone: only the engine's own dir is left, which
    # nothing recorded (before, it stayed in the temp dir for good).
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--store", str(tmp_path / "store"),
                             "--time-limit", "10", "--target", "1", "--seed", "3"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=ENV, cwd=REPO, start_new_session=True)
    mine = f"{ENGINE_PREFIX}{proc.pid}-*"
    try:
        seen = []
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("collect "):
                break
        else:
            raise AssertionError("the run never collected its history:\n" + "".join(seen))
        (scratch,) = Path(tempfile.gettempdir()).glob(mine)
        wait_for(lambda: not _states_of(proc.pid), timeout=30, what="the cluster torn down while the run checks")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert scratch.exists()
        res = _harness("teardown", timeout=120)
        assert res.returncode == 0, res.stderr
        assert f"removed {scratch}, a run's scratch dir of a process that is gone" in res.stdout, res.stdout
        assert not scratch.exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _harness("teardown", timeout=120)
    assert list(Path(tempfile.gettempdir()).glob(mine)) == []
