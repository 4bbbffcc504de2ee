"""`harness check-server`: a real detached server process with its own SparkSession. `harness check`
from a new process hands it the histories and prints the same verdicts as a check in-process; a
malformed history is the same one-line error; `stop`, the idle timeout and `harness teardown` each
end the process and remove its record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checkers.testing import EventLog
from harness import checkserver as server
from tests.integration.test_check_fencing import c2

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]
REPO = Path(__file__).resolve().parents[2]


def harness(*argv: str, timeout: float = 600, warm_up: bool = False) -> subprocess.CompletedProcess[str]:
    """The CLI in a new process; a check server it starts skips its warm-up (tests/conftest.py) unless
    ``warm_up``: the batch server's test keeps both of its warm-ups."""
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_SPARK_MASTER"}
    if warm_up:
        env.pop("HARNESS_SPARK_WARM_UP", None)
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env)


def gone(st: server.ServerState, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not st.alive:
            return True
        time.sleep(0.5)
    return False


@pytest.fixture()
def histories(tmp_path: Path) -> list[str]:
    out = []
    for bad in (False, True):
        log = EventLog(run=f"c2-{bad}")
        c2(log, bad)  # single_registrant holds / is broken
        out.append(str(log.write(tmp_path / f"{'bad' if bad else 'good'}.jsonl")))
    return out


def test_check_on_the_server_then_stop_and_teardown(histories: list[str], tmp_path: Path) -> None:
    harness("check-server", "stop")
    # two starts at once: one server, the second start finds it (they take turns on a lock file)
    starts = [subprocess.Popen([sys.executable, "-m", "harness.cli", "check-server", "start", "--idle-timeout", "600"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
              for _ in range(2)]
    outs = sorted((s.communicate(timeout=600), s.returncode) for s in starts)
    st = server.read_state()
    assert st is not None and st.master == "local[*]" and oct(server.STATE.stat().st_mode & 0o777) == "0o600"
    try:
        assert [rc for _, rc in outs] == [0, 0], outs
        said = sorted("started" if "check server started" in out else "running" if "already running" in out else out
                      for (out, _), _ in outs)
        assert said == ["running", "started"], outs
        assert all(f"pid {st.pid}" in out for (out, _), _ in outs), outs
        # `harness run` hands its check to the server too (and keeps no Spark session of its own)
        run = harness("run", "--store", str(tmp_path / "store"), "--time-limit", "10", "--seed", "1")
        assert run.returncode == 0 and f"check on the check server (pid {st.pid}" in run.stdout, run.stdout + run.stderr
        run_dir = next((tmp_path / "store").glob("*/*/results.json")).parent
        on_server = harness("check", "--json", *histories, str(run_dir))
        assert f"on the check server (pid {st.pid}" in on_server.stderr
        in_process = harness("check", "--json", "--no-server", *histories, str(run_dir))
        assert "check server" not in in_process.stderr
        assert on_server.returncode == in_process.returncode == 1, on_server.stderr
        rows = [json.loads(x) for x in on_server.stdout.splitlines() if x.startswith("{")]
        assert rows == [json.loads(x) for x in in_process.stdout.splitlines() if x.startswith("{")]
        assert [r["checkers"]["single_registrant"]["valid"] for r in rows] == [True, False, True]
        assert rows[1]["valid"] is False and rows[2]["valid"] is True
        # the run's own verdicts (checked on the server) are the in-process check's
        stored = json.loads((run_dir / "results.json").read_text())
        assert {n: c["valid"] for n, c in stored["checkers"].items()} == \
            {n: c["valid"] for n, c in rows[2]["checkers"].items()}
        # bad input on the server: the same one-line error, exit 254, and the server keeps serving
        bad = tmp_path / "malformed.jsonl"
        bad.write_text(Path(histories[0]).read_text() + "not json\n" + Path(histories[0]).read_text())
        p = harness("check", str(bad))
        assert p.returncode == 254 and f"{bad}:" in p.stderr and len(p.stderr.strip().splitlines()) == 2, p.stderr
        status = harness("check-server", "status")
        # the run's; the check's two (the run's history with its stored margin, the others with none); the bad one
        assert status.returncode == 0 and "4 check(s) served" in status.stdout, status.stdout
    finally:
        stopped = harness("check-server", "stop")
    assert f"pid {st.pid} stopped" in stopped.stdout
    assert gone(st, 30) and server.read_state() is None and not server.STATE.exists()
    assert harness("check-server", "status").returncode == 1

    # the idle timeout stops a forgotten server (`harness teardown` stopping a running one: the next test)
    p = harness("check-server", "start", "--idle-timeout", "5")
    idle = server.read_state()
    assert p.returncode == 0 and idle is not None
    assert gone(idle, 60), "the idle server is still running"
    assert not server.STATE.exists()


def _tables(stdout: str) -> str:
    """What `harness analyze` printed before its summary line: the tables."""
    return stdout.split("ingested ")[0]


def test_analyze_on_a_batch_server_as_in_process(tmp_path: Path) -> None:
    import shutil

    from tests.integration.test_analyze_command import QUEUE_RUN, STORED_RUN, rates

    store = tmp_path / "store"
    for run in (STORED_RUN, QUEUE_RUN):
        shutil.copytree(run, store / run.parent.name / run.name)
    half = store / "isolate-broker" / "20261123T151500.000"
    half.mkdir(parents=True)
    (half / "run.json").write_text("{}")  # a run still being written: skipped with the same warning
    harness("check-server", "stop")
    p = harness("check-server", "start")
    st = server.read_state()
    assert p.returncode == 0 and st is not None and not st.batch
    try:  # a latency-tuned server takes no analysis: it runs in the calling process (compared below)
        local = harness("analyze", str(store), "--out", str(tmp_path / "local"))
        assert local.returncode == 0 and "check server" not in local.stderr, local.stderr
        p = harness("check-server", "start", "--batch")
        assert p.returncode == 1 and "the running server is quick" in p.stderr, p.stdout + p.stderr
    finally:
        p = harness("teardown")  # `harness teardown` stops a running server
    assert f"stopped the check server (pid {st.pid})" in p.stdout, p.stdout
    assert gone(st, 30) and not server.STATE.exists()

    p = harness("check-server", "start", "--batch", "--idle-timeout", "600", warm_up=True)
    st = server.read_state()
    assert p.returncode == 0 and "batch" in p.stdout and st is not None and st.batch, p.stdout + p.stderr
    assert "warm-up analysis" in Path(st.log).read_text(), Path(st.log).read_text()
    try:
        on = harness("analyze", str(store), "--out", str(tmp_path / "on"))
        assert on.returncode == 0 and f"on the batch check server (pid {st.pid}" in on.stderr, on.stderr
        for err in (on.stderr, local.stderr):
            assert [ln for ln in err.splitlines() if "skipping" in ln] == [
                f"harness analyze: skipping {half}: no results.json (half-written run?)"], err
        assert _tables(on.stdout) == _tables(local.stdout) and "ingested 2 new run(s)" in on.stdout
        for name in ("anomaly_rate", "heal_to_registration", "op_latency", "flaky"):
            assert (tmp_path / "on" / f"{name}.csv").read_text() == (tmp_path / "local" / f"{name}.csv").read_text()
        assert sum(runs for runs, _ in rates(tmp_path / "on").values()) >= 2
        again = harness("analyze", str(store), "--out", str(tmp_path / "on"))  # nothing new: the saved tables
        assert "ingested 0 new run(s)" in again.stdout and _tables(again.stdout) == _tables(on.stdout)
        checked = harness("check", "--json", str(STORED_RUN))  # and it still checks
        assert f"on the check server (pid {st.pid}" in checked.stderr and checked.returncode in (0, 1), checked.stderr
        status = harness("check-server", "status")
        assert "1 check(s) served, 2 analyze job(s)" in status.stdout, status.stdout
    finally:
        harness("check-server", "stop")
    assert gone(st, 30) and not server.STATE.exists()


def test_bad_flags_are_254() -> None:
    p = harness("check-server", "status", "--idle-timeout", "5")
    assert p.returncode == 254 and "--idle-timeout" in p.stderr
    p = harness("check-server", "start", "--idle-timeout", "0")
    assert p.returncode == 254 and "argument --idle-timeout: expected a number of seconds in (0," in p.stderr
    p = harness("check-server", "stop", "--batch")
    assert p.returncode == 254 and "--batch go with `check-server start`" in p.stderr
