"""A bench stops what it started: bench/zkproxy_latency.py stopped by SIGTERM mid-measurement leaves no
ZooKeeper server, no wire proxy and no scratch directory; killed outright (SIGKILL), `harness
teardown` stops them and removes the directory. Real ZooKeeper and proxy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from base.localstate import BENCH_PREFIX, processes_mentioning

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def _measuring(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """The bench started with its scratch dir under ``tmp_path``, returned once ZooKeeper and the
    proxy are up (the proxy's ready file is written)."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "bench/zkproxy_latency.py", "--n", "10000000"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        ready = list(tmp_path.glob(f"{BENCH_PREFIX}*/zkproxy-ready-*.json"))
        if ready:
            workdir = ready[0].parent
            assert processes_mentioning(str(workdir)), "the bench's ZooKeeper and proxy should be running"
            return proc, workdir
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the bench never started measuring (exit {proc.poll()}): {proc.communicate()[0][-2000:]}")


def _stopped(proc: subprocess.Popen[str], sig: int) -> str:
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_bench_stopped_by_sigterm_leaves_nothing_running(tmp_path: Path) -> None:
    proc, workdir = _measuring(tmp_path)
    out = _stopped(proc, signal.SIGTERM)
    assert proc.returncode != 0, out
    assert processes_mentioning(str(workdir)) == [], out
    assert not workdir.exists(), out


def test_teardown_stops_what_a_killed_bench_left_running(tmp_path: Path) -> None:
    proc, workdir = _measuring(tmp_path)
    try:
        _stopped(proc, signal.SIGKILL)
        assert processes_mentioning(str(workdir)), "a bench killed outright stops nothing itself"
        env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO)}
        td = subprocess.run([sys.executable, "-m", "harness.cli", "teardown"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
        assert td.returncode == 0, td.stderr
        assert f"removed {workdir}, a bench's scratch dir of a process that is gone; stopped the" in td.stdout, td.stdout
        deadline = time.monotonic() + 10  # SIGKILLed processes are gone once the kernel has reaped them
        while processes_mentioning(str(workdir)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_mentioning(str(workdir)) == []
        assert not workdir.exists()
    finally:
        for pid, _ in processes_mentioning(str(workdir)):
            os.kill(pid, signal.SIGKILL)
