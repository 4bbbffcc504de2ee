"""`make test` stopped by SIGTERM (a cancelled CI job, `timeout`) on two pytest-xdist workers: each
worker's fixtures are torn down, even one that takes longer to stop than execnet waits before it
kills a worker (about 10 s), as a warm engine's cluster or real brokers can.

The inner session runs this project's own tests/conftest.py (copied, so its state and marker dirs
are the inner project's, not this suite's) with a session fixture that starts a real process and
takes 15 s to stop it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from base.wait import wait_until

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SLOW_TEARDOWN_S = 15  # execnet gives a worker ~10 s after the controller's session ends

INNER_TEST = f'''
import os, subprocess, sys, time
from pathlib import Path
import pytest

OUT = Path(__file__).resolve().parents[1] / "out"

@pytest.fixture(scope="session")
def server():
    me = os.environ["PYTEST_XDIST_WORKER"]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (OUT / f"started-{{me}}").write_text(str(child.pid))
    yield child
    time.sleep({SLOW_TEARDOWN_S})  # a cluster slower to stop than execnet waits
    child.terminate()
    child.wait()
    (OUT / f"stopped-{{me}}").write_text(str(child.pid))

def test_long(server):
    time.sleep(600)
'''


def test_sigterm_tears_every_worker_down_before_xdist_ends_them(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "out").mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
    (tmp_path / "tests" / "test_slow.py").write_text(INNER_TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ZKFENCE_STATE_DIR"))}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "each", "-p", "no:cacheprovider",
                             "tests/test_slow.py"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        started = [tmp_path / "out" / f"started-gw{i}" for i in (0, 1)]
        assert wait_until(lambda: all(p.exists() for p in started), 120), "the workers never started their fixture"
        time.sleep(1)  # both in their test
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        pids = [int(p.read_text()) for p in started if p.exists()]
        left = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
        for pid in left:  # what a failing run leaves is stopped here, then reported below
            os.kill(pid, signal.SIGKILL)
    assert [(tmp_path / "out" / f"stopped-gw{i}").exists() for i in (0, 1)] == [True, True], out
    assert len(pids) == 2 and not left, out
    assert proc.returncode == pytest.ExitCode.INTERRUPTED and "waiting for gw0, gw1 to tear" in out, out
    assert not (tmp_path / ".local" / "pytest-workers").exists()  # the controller removed what named its workers
