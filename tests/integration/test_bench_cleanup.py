"""A bench stopped by SIGTERM stops what it started: bench/zkproxy_latency.py, mid-measurement, leaves
no ZooKeeper server, no wire proxy and no scratch directory. Real ZooKeeper and proxy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import processes_mentioning

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_a_bench_stopped_by_sigterm_leaves_nothing_running(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "bench/zkproxy_latency.py", "--n", "10000000"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        workdir = None
        while workdir is None and time.monotonic() < deadline and proc.poll() is None:
            ready = list(tmp_path.glob("zkproxy-bench-*/zkproxy-ready-*.json"))  # ZooKeeper and the proxy are up
            workdir = ready[0].parent if ready else None
            time.sleep(0.2)
        assert workdir is not None, f"the bench never started measuring: {proc.poll()=}"
        assert processes_mentioning(str(workdir)), "the bench's ZooKeeper and proxy should be running"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0, out
    assert processes_mentioning(str(workdir)) == [], out
    assert not workdir.exists(), out
