"""The walking skeleton end to end against real sshd, ZooKeeper, Toxiproxy and Spark."""

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
from tests.runs import run_test

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def _history(run_dir: Path) -> list:
    return list(read_events(run_dir / "history.jsonl"))


def test_isolated_broker_reregisters_with_larger_epoch_and_run_is_valid(tmp_path):
    outcome = run_test(tmp_path / "store", "--time-limit", "12", "--target", "1", "--seed", "7")
    assert outcome.valid is True, outcome.results
    assert outcome.exit_code == 0
    run_dir = outcome.run_dir
    for name in ("run.json", "history.jsonl", "results.json"):
        assert (run_dir / name).exists()
    assert (tmp_path / "store" / "latest").resolve() == run_dir.resolve()
    assert any(p.name.endswith("zookeeper.log") for p in (run_dir / "logs").iterdir())

    history = _history(run_dir)
    b1 = [e for e in history if e.src == "agent:1"]
    oks = [e for e in b1 if e.f == "register" and e.type == "ok"]
    lost = [e for e in b1 if e.f == "session" and e.value.get("state") == "lost"]
    isolate = [e for e in history if e.src == "nemesis" and e.f == "isolate" and e.value.get("stage") == "complete"]
    assert [e.value["phase"] for e in isolate] == ["start", "stop"]
    assert len(oks) >= 2 and lost, "the isolated broker must lose its session and register again"
    assert oks[-1].value["epoch"] > oks[0].value["epoch"]
    assert oks[-1].value["session_id"] != oks[0].value["session_id"]
    assert lost[0].t_wall > isolate[0].t_wall and oks[-1].t_wall > isolate[1].t_wall
    # results.json is the verdict on disk, the same one the engine returned
    assert json.loads((run_dir / "results.json").read_text())["valid"] is True

    scratch = json.loads((run_dir / "run.json").read_text())["scratch"]
    assert processes_mentioning(scratch) == [], "a process started by the run was left behind"
    assert not Path(scratch).exists()


def test_agent_without_reregistration_makes_the_run_invalid_naming_the_broker(tmp_path):
    outcome = run_test(tmp_path / "store", "--time-limit", "12", "--target", "2", "--seed", "7",
                       "--toggle", "reregister_on_expiry=false")
    assert outcome.valid is False
    assert outcome.exit_code == 1
    liveness = [a for a in outcome.results["anomalies"] if a["checker"] == "registration_liveness"]
    assert [a["broker"] for a in liveness] == [2]
    ids = {e.id for e in _history(outcome.run_dir)}
    assert liveness[0]["event_ids"] and set(liveness[0]["event_ids"]) <= ids
    scratch = json.loads((outcome.run_dir / "run.json").read_text())["scratch"]
    assert processes_mentioning(scratch) == []


def test_harness_teardown_cleans_up_after_a_crashed_run(tmp_path):
    script = tmp_path / "crashing_run.py"
    script.write_text(
        "import sys, time\n"
        "from pathlib import Path\n"
        "from harness.cluster import Cluster\n"
        "from base.inventory import load_inventory\n"
        f"c = Cluster(load_inventory(), Path({str(tmp_path / 'scratch')!r}), 'crash-test')\n"
        "c.start(); c.start_agents(); c.wait_registered(timeout=60)\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        marker = str(tmp_path / "scratch")
        started = processes_mentioning(marker)
        assert len(started) >= 8  # sshd, toxiproxy, 3 ZooKeeper, 3 agents
        live = subprocess.run([sys.executable, "-m", "harness.cli", "teardown"], capture_output=True, text=True,
                              env=env, cwd=REPO, timeout=60)
        assert "still running" in live.stdout, "teardown must leave a run whose owner is alive alone"
        assert len(processes_mentioning(marker)) == len(started)
        os.kill(proc.pid, signal.SIGKILL)  # the control node crashes: nothing of its own cleans up
        proc.wait(10)
        assert processes_mentioning(marker), "the crash should have left the cluster running"
        res = subprocess.run([sys.executable, "-m", "harness.cli", "teardown"], capture_output=True, text=True,
                             env=env, cwd=REPO, timeout=60)
        assert res.returncode == 0, res.stderr
        deadline = time.monotonic() + 10
        while processes_mentioning(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_mentioning(marker) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        subprocess.run([sys.executable, "-m", "harness.cli", "teardown"], env=env, cwd=REPO, timeout=60)
