"""`harness check` from a cold process, as a user runs it: on run-sized input the SparkSession's JVM
is started for latency (``checkers.spark.QUICK_JVM``), and the verdicts are the stored run's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checkers.spark import QUICK_CONF, QUICK_JVM

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "store" / "isolate-broker" / "20261123T193419.839"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_SPARK_MASTER"}
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), env.get("PYTHONPATH")) if x)
    return env


def test_cold_check_of_a_stored_run_gives_its_stored_verdicts() -> None:
    p = subprocess.run([sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())",
                        "check", str(RUN), "--json"], cwd=ROOT, env=_env(), capture_output=True, text=True,
                       check=False)
    stored = json.loads((RUN / "results.json").read_text())
    assert p.returncode == 0, p.stderr[-2000:]
    (row,) = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    assert row["valid"] is True and row["stats"]["events"] == stored["stats"]["events"]
    assert {n: row["checkers"][n]["valid"] for n in stored["checkers"]} == \
        {n: c["valid"] for n, c in stored["checkers"].items()}


def test_a_quick_local_session_runs_its_jvm_and_sql_with_the_quick_settings() -> None:
    probe = ("from checkers.spark import get_spark; s = get_spark('local[1]', quick=True); "
             "print(list(s._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())); "
             "print(s.conf.get('spark.sql.codegen.factoryMode')); print(s.range(3).count())")
    p = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=_env(), capture_output=True, text=True,
                       check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    args, mode, count = p.stdout.strip().splitlines()[-3:]
    assert all(flag in args for flag in QUICK_JVM.split()) and count == "3"
    assert mode == QUICK_CONF["spark.sql.codegen.factoryMode"]


@pytest.fixture(scope="module")
def batch_session() -> dict:
    """One cold process with a batch local session (``get_spark`` without ``quick``: harness analyze,
    large input, the benches), probed for everything the tests below read: one JVM start for all."""
    probe = ("import json; from checkers.spark import get_spark; s = get_spark('local[1]'); "
             "mf = s._jvm.java.lang.management.ManagementFactory; "
             "gcs = sorted(g.getName() for g in mf.getGarbageCollectorMXBeans()); "
             "m = s._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME(); "
             # each query's code compiled as running it would (WholeStageCodegenExec compiles on the
             # driver when the plan is executed into an RDD), without the job: half the JVM's CPU
             "q = lambda i: s.range(3).selectExpr(f'id * {i} + {i} as x').filter(f'x > {i}')"
             "._jdf.queryExecution().executedPlan().execute(); "
             "[q(i) for i in range(1, 160)]; n = m.getCount(); q(1); "
             "print(json.dumps({'gcs': gcs, 'compiled': n, 'recompiled': m.getCount() - n}))")
    p = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=_env(), capture_output=True, text=True,
                       check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_batch_local_session_runs_the_throughput_collector(batch_session: dict) -> None:
    """Without ``quick`` (harness analyze, large input, the benches) the local JVM gets ``BATCH_JVM``:
    the collectors it runs are the parallel ones."""
    assert batch_session["gcs"] == ["PS MarkSweep", "PS Scavenge"]


def test_a_session_keeps_the_classes_of_more_queries_than_sparks_default(batch_session: dict) -> None:
    """Spark keeps 100 compiled classes by default; one run of the fencing plans generates about 160.
    After 159 queries of distinct code the first one's classes are still compiled (no Janino compile
    when it runs again)."""
    assert batch_session["compiled"] >= 159 and batch_session["recompiled"] == 0
