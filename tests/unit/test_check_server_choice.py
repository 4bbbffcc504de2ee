"""Which `harness check` calls and runs go to a running check server (harness.commands.check._server_for,
harness.effects.check_server_for) and how a
stale server record is handled (harness.checkserver.read_state), and which temporary directories (a batch
server's warm-up stores, a Spark driver's files) `harness teardown` removes: plain data, no server."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from base.localstate import process_start_time
from checkers.spark import SCRATCH_PREFIX
from harness import checkserver as server
from harness import effects
from harness.analysis.job import WARM_UP_PREFIX
from harness.commands import check as command


def args(**kw: object) -> argparse.Namespace:
    base = dict(no_server=False, parquet=None, local=False, spark_master=None, skip_damaged=False)
    return argparse.Namespace(**{**base, **kw})


@pytest.fixture()
def running(monkeypatch: pytest.MonkeyPatch) -> server.ServerState:
    st = server.ServerState(pid=os.getpid(), start_time=process_start_time(os.getpid()), port=1, key="00",
                            master="local[*]", started=0.0, log="-")
    monkeypatch.setattr(server, "read_state", lambda path=server.STATE: st)
    monkeypatch.delenv("HARNESS_SPARK_MASTER", raising=False)
    return st


def test_project_histories_go_to_the_server(running: server.ServerState) -> None:
    assert command._server_for(args(), ["jsonl", "jsonl"]) is running
    assert command._server_for(args(spark_master="local[*]"), ["jsonl"]) is running
    assert command._server_for(args(local=True), ["jsonl", "porcupine-kv"]) is running
    assert command._server_for(args(skip_damaged=True), ["jsonl"]) is running  # the request carries it


def engine(**kw: object) -> SimpleNamespace:
    base = dict(use_check_server=True, spark_master=None, spark_started=False)
    return SimpleNamespace(**{**base, **kw})


def spec(local_check: bool = False) -> SimpleNamespace:
    return SimpleNamespace(local_check=local_check)


def test_a_run_checks_on_the_server(running: server.ServerState) -> None:
    assert effects.check_server_for(engine(), spec()) is running
    assert effects.check_server_for(engine(spark_master="local[*]"), spec()) is running


@pytest.mark.parametrize("eng,local", [
    (dict(use_check_server=False), False),  # --no-server
    (dict(), True),  # a local check needs no Spark
    (dict(spark_started=True), False),  # the engine's own session is up (a warm engine): as quick
    (dict(spark_master="spark://127.0.0.1:7077"), False),  # another master than the server's
])
def test_a_run_checks_in_process_otherwise(running: server.ServerState, eng: dict, local: bool) -> None:
    assert effects.check_server_for(engine(**eng), spec(local)) is None


@pytest.mark.parametrize("kw,fmts", [
    (dict(no_server=True), ["jsonl"]),
    (dict(parquet="out"), ["jsonl"]),
    (dict(), ["jsonl", "knossos"]),  # a reference history on Spark: this process starts Spark anyway
    (dict(spark_master="spark://127.0.0.1:7077"), ["jsonl"]),  # another master than the server's
])
def test_everything_else_stays_in_process(running: server.ServerState, kw: dict, fmts: list[str]) -> None:
    assert command._server_for(args(**kw), fmts) is None


def test_no_server_and_stale_records(tmp_path: Path) -> None:
    state = tmp_path / "server.json"
    assert server.read_state(state) is None
    record = dict(port=1, key="00", master="local[*]", started=0.0, log="-")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    state.write_text(json.dumps(dict(pid=int(dead.stdout), start_time=1, **record)))
    assert server.read_state(state) is None and not state.exists()  # its process is gone: the record too
    # a live process under the recorded pid that started at another time is not the server
    state.write_text(json.dumps(dict(pid=os.getpid(), start_time=process_start_time(os.getpid()) - 1, **record)))
    assert server.read_state(state) is None and not state.exists()
    state.write_text(json.dumps(dict(pid=os.getpid(), start_time=process_start_time(os.getpid()), **record)))
    assert server.read_state(state) is not None
    state.write_text("{not json")
    assert server.read_state(state) is None


def test_the_record_lives_in_the_state_dir_teardown_reads() -> None:
    from harness.commands import teardown

    assert server.STATE.parent.parent == teardown.STATE_DIR


@pytest.mark.parametrize("prefix", [WARM_UP_PREFIX, SCRATCH_PREFIX])  # a batch server's warm-up, a Spark driver's
def test_teardown_removes_only_the_temp_dirs_of_processes_that_are_gone(tmp_path, prefix) -> None:  # noqa: ANN001
    from base.localstate import orphaned, owner_prefix

    me = os.getpid()
    gone = subprocess.Popen(["true"])
    gone_start = process_start_time(gone.pid) or 1
    gone.wait()
    live = tmp_path / f"{prefix}{me}-{process_start_time(me)}-ab_c1"
    dead = tmp_path / f"{prefix}{gone.pid}-{gone_start}-xyz"
    reused = tmp_path / f"{prefix}{me}-{(process_start_time(me) or 0) + 1}-q"  # same pid, another process
    older = tmp_path / f"{prefix}k2j_x9"  # named before the owner was part of the name
    for d in (live, dead, reused, older):
        d.mkdir()
    (tmp_path / "other").mkdir()
    assert orphaned(tmp_path, prefix) == sorted([dead, reused, older])
    assert owner_prefix(prefix) == f"{prefix}{me}-{process_start_time(me)}-"
