"""A Spark driver's temporary files (checkers.spark: ``java.io.tmpdir`` and a local session's
``spark.local.dir``) live in one directory per process and leave nothing behind: not when the
process exits, not when its JVM is killed alone, and, after ``harness teardown``, not when both were
killed with SIGKILL (before, Spark's ``blockmgr-*`` and ``spark-*`` directories, shuffle files
included, stayed in /tmp for good). Real SparkSessions in child processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.cli import main
from tests.waiting import wait_for

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
TMP = Path(tempfile.gettempdir())

# A session that shuffles (so the block manager writes files), says where its files are and which pid
# its JVM has, then waits for a line on stdin before it exits.
CHILD = """
import json, sys
from checkers import spark as s
session = s.get_spark("local[2]")
session.range(20000).repartition(4).selectExpr("id % 7 AS k").groupBy("k").count().collect()
print(json.dumps({"scratch": str(s._jvm_scratch()), "jvm": session.sparkContext._gateway.proc.pid}), flush=True)
sys.stdin.readline()
"""


def _spark_dirs() -> set[Path]:
    return {p for pat in ("blockmgr-*", "spark-*", "liblz4-java-*", "snappy-*") for p in TMP.glob(pat)}


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture()
def child():
    before = _spark_dirs()
    proc = subprocess.Popen([sys.executable, "-c", CHILD], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, start_new_session=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        info = json.loads(proc.stdout.readline())
        scratch, jvm = Path(info["scratch"]), info["jvm"]
        assert scratch.parent == TMP and any(scratch.glob("blockmgr-*")), list(scratch.iterdir())
        yield proc, scratch, jvm
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert _spark_dirs() - before == set(), "the driver wrote outside its own directory"


def test_a_process_that_exits_leaves_no_files(child) -> None:  # noqa: ANN001
    proc, scratch, jvm = child
    proc.communicate("\n", timeout=60)
    wait_for(lambda: _gone(jvm), timeout=30, what="the JVM exits after its Python process")
    assert not scratch.exists()


def test_a_jvm_killed_alone_has_its_files_removed_when_the_process_exits(child) -> None:  # noqa: ANN001
    proc, scratch, jvm = child
    os.kill(jvm, signal.SIGKILL)
    wait_for(lambda: _gone(jvm), timeout=30, what="the killed JVM is gone")
    assert scratch.exists()  # a killed JVM runs no shutdown hook
    proc.communicate("\n", timeout=60)
    assert not scratch.exists()


def test_after_both_were_killed_teardown_removes_the_files(child, capsys) -> None:  # noqa: ANN001
    proc, scratch, jvm = child
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    wait_for(lambda: _gone(jvm), timeout=30, what="the killed JVM is gone")
    assert any(scratch.glob("blockmgr-*"))
    assert main(["teardown"]) == 0
    assert f"teardown: removed {scratch}, the Spark driver's temporary files of a process that is gone" \
        in capsys.readouterr().out
    assert not scratch.exists()


def test_a_session_that_never_started_leaves_no_directory() -> None:
    code = ("import json\nfrom checkers import spark as s\ntry:\n    s.get_spark('local[1]')\nexcept Exception as e:\n"
            "    print(json.dumps({'scratch': str(s._scratch), 'error': type(e).__name__}), flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO), "JAVA_HOME": "/nonexistent-jdk"})
    info = json.loads(out.stdout)  # the JVM could not start: no shutdown hook of its will remove the directory
    assert info["error"] and Path(info["scratch"]).parent == TMP
    assert not Path(info["scratch"]).exists()


def test_teardown_removes_the_build_dir_of_a_process_killed_while_javac_ran(tmp_path: Path) -> None:
    from base.localstate import JAVAC_PREFIX, processes_mentioning

    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO), "HARNESS_JAR_DIR": str(tmp_path / "jars")}
    proc = subprocess.Popen([sys.executable, "-c", "from checkers import udfs; udfs.build()"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        classes = wait_for(lambda: next((d for d in tmp_path.glob(f"{JAVAC_PREFIX}{proc.pid}-*")
                                         if processes_mentioning(str(d))), None), timeout=60, what="javac running")
        proc.kill()  # javac, its child, goes on into the directory no one will remove
        proc.wait(timeout=30)
        td = subprocess.run([sys.executable, "-m", "harness.cli", "teardown"], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=120)
        assert td.returncode == 0, td.stderr
        assert f"removed {classes}, a build of the JVM functions' classes of a process that is gone" in td.stdout
        wait_for(lambda: not processes_mentioning(str(classes)), timeout=10, what="javac reaped")
        assert not classes.exists()
        assert not (tmp_path / "jars").exists() or not any((tmp_path / "jars").glob("*.jar"))
    finally:
        proc.kill()
        for d in tmp_path.glob(f"{JAVAC_PREFIX}*"):
            for pid, _ in processes_mentioning(str(d)):
                os.kill(pid, signal.SIGKILL)


def test_teardown_removes_every_kind_of_scratch_dir_a_dead_process_left(tmp_path: Path) -> None:
    from base.localstate import (
        BENCH_PREFIX,
        DOCTOR_PREFIX,
        ENGINE_PREFIX,
        JAVAC_PREFIX,
        KAFKA_LOGS_PREFIX,
        owner_prefix,
    )
    from checkers.spark import SCRATCH_PREFIX
    from harness.analysis.job import WARM_UP_PREFIX

    dead = {p: tmp_path / f"{p}999999999-1-x" for p in (SCRATCH_PREFIX, JAVAC_PREFIX, WARM_UP_PREFIX, DOCTOR_PREFIX,
                                                          KAFKA_LOGS_PREFIX, BENCH_PREFIX, ENGINE_PREFIX)}
    live = tmp_path / f"{owner_prefix(DOCTOR_PREFIX)}x"  # this process's: left alone
    for d in [*dead.values(), live]:
        (d / "sub").mkdir(parents=True)
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    td = subprocess.run([sys.executable, "-m", "harness.cli", "teardown"], cwd=REPO, env=env, capture_output=True,
                        text=True, timeout=120)
    assert td.returncode == 0, td.stderr
    for d in dead.values():
        assert f"removed {d}, " in td.stdout and not d.exists()
    assert live.exists()
