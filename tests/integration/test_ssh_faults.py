"""The harness's own SSH connections as a fault: dropped mid-run they are re-established and the
run finishes; a node that stays unreachable ends the run `unknown` with a one-line error and keeps
what `harness teardown` needs to stop everything. Real embedded sshd, ZooKeeper, Toxiproxy, Spark."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from base.localstate import processes_mentioning
from history import read_events

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid``."""
    parents: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(proc.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _sessions(sshd: int) -> list[int]:
    """The sshd processes serving the harness's connections (not commands in flight under them)."""
    out = []
    for pid in _children(sshd):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sshd: "):
                out.append(pid)
        except OSError:
            continue
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _sshd(scratch: str) -> int:
    (pid,) = [p for p, cmd in processes_mentioning(scratch) if "sshd_config" in cmd and "sshd" in cmd.split()[0]]
    return pid


def _start(store: Path, *argv: str, env: dict[str, str] = ENV) -> tuple[subprocess.Popen[str], list[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--store", str(store), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
                            start_new_session=True)
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line)
        if " nemesis " in line:
            break
    else:
        raise AssertionError("the run never reached its faults:\n" + "".join(seen))
    (run_dir,) = [p for p in store.glob("*/2*") if p.is_dir()]
    return proc, seen, json.loads((run_dir / "run.json").read_text())["scratch"]


def _finish(proc: subprocess.Popen[str], seen: list[str], timeout: float = 240) -> str:
    try:
        rest, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return "".join(seen) + rest


def test_dropped_ssh_connections_are_reestablished_and_the_run_finishes(tmp_path):
    store = tmp_path / "store"
    proc, seen, scratch = _start(store, "--faults", "kill,pause", "--interval", "1.5", "--time-limit", "14",
                                 "--seed", "11")
    drops = _sessions(_sshd(scratch))
    assert drops, "the harness holds SSH connections to its nodes"
    dropped_at = time.time()
    for pid in drops:  # every per-connection sshd: the listener stays, each connection dies
        _kill(pid)
    out = _finish(proc, seen)
    assert proc.returncode in (0, 1, 2), out
    assert "Traceback" not in out and "did not complete" not in out, out
    (run_dir,) = [p for p in store.glob("*/2*") if p.is_dir()]
    history = list(read_events(run_dir / "history.jsonl"))
    assert {e.src for e in history if e.src.startswith("agent:")} == {"agent:1", "agent:2", "agent:3"}
    after = [e for e in history if e.src == "nemesis" and e.t_wall > dropped_at and e.value.get("stage") == "complete"]
    assert after, "no fault completed over SSH after the connections dropped"
    assert not [e for e in history if e.f == "run_error"]
    assert "missing_sources" not in json.loads((run_dir / "results.json").read_text())
    assert processes_mentioning(scratch) == []


def test_a_node_that_stays_unreachable_ends_unknown_and_teardown_stops_everything(tmp_path):
    store = tmp_path / "store"
    # a control node of its own (its state dir): the teardown --force below stops this run only, not
    # a warm cluster another test of this worker still uses
    env = {**ENV, "ZKFENCE_STATE_DIR": str(tmp_path / "state")}
    proc, seen, scratch = _start(store, "--time-limit", "12", "--target", "1", "--seed", "3", env=env)
    sshd = _sshd(scratch)
    sessions = _sessions(sshd)  # before the listener dies: its orphans would be reparented
    os.kill(sshd, signal.SIGKILL)  # the listener first: nothing can reconnect
    for pid in sessions:
        _kill(pid)
    try:
        out = _finish(proc, seen)
        assert proc.returncode == 2, out  # unknown: the run could not see its nodes to the end
        assert "unreachable" in out and "Traceback" not in out, out
        (run_dir,) = [p for p in store.glob("*/2*") if p.is_dir()]
        results = json.loads((run_dir / "results.json").read_text())
        assert results["valid"] == "unknown" and results["error"]
        assert processes_mentioning(scratch), "ZooKeeper and the agents outlive a control node that lost them"
        res = subprocess.run([sys.executable, "-m", "harness.cli", "teardown"], capture_output=True, text=True,
                             env=env, cwd=REPO, timeout=120)
        assert res.returncode == 0 and "signalled" in res.stdout, res.stdout + res.stderr
        deadline = time.monotonic() + 10
        while processes_mentioning(scratch) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_mentioning(scratch) == []
    finally:
        subprocess.run([sys.executable, "-m", "harness.cli", "teardown", "--force"], env=env, cwd=REPO, timeout=120,
                       capture_output=True)
