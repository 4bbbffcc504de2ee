"""`harness check` and `harness analyze` with `--spark-master spark://...` on a real standalone Spark cluster (master + worker
from pyspark's own distribution, on loopback) whose executors run a Python that lacks this project:
the harness ships the checkers' code to them, and the verdict equals the local one. Pointed at the
master's web UI instead, a check fails at once naming what answered; the master's log shows no
error from the probes that tell the two apart."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from checkers.project import check_histories
from tests.sparkcluster import standalone_cluster

ROOT = Path(__file__).resolve().parents[2]
STORED_RUN = ROOT / "tests" / "data" / "store" / "isolate-broker" / "20261123T145216.364"
HARNESS = Path(sys.executable).with_name("harness")


def bare_python(where: Path) -> Path:
    """A virtualenv with nothing installed (Spark puts its own pyspark.zip on the workers' path)."""
    venv.EnvBuilder(with_pip=False).create(where)
    py = where / "bin" / "python"
    # Without the PYTHONPATH a local SparkSession earlier in this process exports (checkers/spark.py),
    # as the cluster's worker runs it (tests/sparkcluster.py strips PYTHON* too).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([str(py), "-c", "import checkers"], cwd=where, capture_output=True, text=True, env=env)
    assert probe.returncode != 0 and "No module named 'checkers'" in probe.stderr
    return py


def check(run_dir: Path, cwd: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    p = subprocess.run([str(HARNESS), "check", "--json", str(run_dir), *extra], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=300)
    rows = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    assert rows, p.stdout + p.stderr
    return p.returncode, rows[0]


@pytest.mark.integration
@pytest.mark.slow
def test_check_on_standalone_cluster_matches_local(spark, tmp_path: Path) -> None:  # noqa: ANN001
    py = bare_python(tmp_path / "bare")
    with standalone_cluster(tmp_path / "spark") as cluster:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_SPARK_MASTER")}
        env.update(PYSPARK_PYTHON=str(py))
        rc, remote = check(STORED_RUN, tmp_path, "--spark-master", cluster.url, env=env)
        store = tmp_path / "store"
        shutil.copytree(STORED_RUN, store / "isolate-broker" / STORED_RUN.name)
        a = subprocess.run([str(HARNESS), "analyze", str(store), "--spark-master", cluster.url], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=300)
        assert a.returncode == 0, a.stdout + a.stderr
        with (store / "analysis" / "anomaly_rate.csv").open() as f:
            table = {r["checker"]: (r["runs"], r["invalid"]) for r in csv.DictReader(f)}
        stored = json.loads((STORED_RUN / "results.json").read_text())  # what analyze reads: the stored verdicts
        assert table["registration_liveness"] == ("1", "0") and len(table) == len(stored["checkers"])
        apps = list((tmp_path / "spark" / "worker").glob("app-*/*/stderr"))
        assert apps, "no executor ran on the worker"
        shipped = "\n".join(p.read_text(errors="replace") for p in apps)
        # The master's web UI is no Spark RPC port: said at once, where Spark would retry for a minute.
        ui = cluster.webui.replace("http://", "spark://")
        wrong = subprocess.run([str(HARNESS), "check", str(STORED_RUN), "--no-server", "--spark-master", ui],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert (wrong.returncode, wrong.stderr.strip()) == (
            2, f"harness: Spark master {ui}: {ui.removeprefix('spark://')} answers 'HTTP/1.1 400 Bad Request', "
               "not Spark's RPC")
        # Every call above probed the master's RPC port first (checkers.rpc_probe): no error in its log.
        master_log = (cluster.log_dir / "master.out").read_text(errors="replace")
        assert "got disassociated" in master_log and " ERROR " not in master_log
    # the local verdict on the suite's own local session (a `harness check` in-process: the same call)
    history = str(STORED_RUN / "history.jsonl")
    local = check_histories([history], spark=spark)[history]
    assert (rc, remote["valid"], local["valid"]) == (0, True, True)
    assert remote["anomalies"] == local["anomalies"]
    assert {k: v["valid"] for k, v in remote["checkers"].items()} == {k: v["valid"] for k, v in local["checkers"].items()}
    assert remote["stats"]["events"] == local["stats"]["events"] == 109
    assert "zkfence-" in shipped  # the executor fetched the harness's zip of checkers/history/harness
