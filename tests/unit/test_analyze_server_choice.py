"""Which running check server `harness analyze` hands its job to: only a batch one, on the same master."""

from __future__ import annotations

import pytest

from checkers import server
from checkers.server import ServerState
from harness.commands.analyze import _server_for


def state(master: str, batch: bool) -> ServerState:
    return ServerState(pid=1, start_time=None, port=1, key="00", master=master, started=0.0, log="l", batch=batch)


@pytest.mark.parametrize(("running", "asked", "env", "taken"), [
    (state("local[*]", True), None, None, True),
    (state("local[2]", True), "local[2]", None, True),
    (state("local[2]", True), None, "local[2]", True),  # $HARNESS_SPARK_MASTER as the flag's default
    (state("local[*]", False), None, None, False),  # latency-tuned: an ingest there took twice as long
    (state("local[*]", True), "local[2]", None, False),  # another master
    (None, None, None, False),
])
def test_server_for(monkeypatch: pytest.MonkeyPatch, running: ServerState | None, asked: str | None,
                    env: str | None, taken: bool) -> None:
    monkeypatch.setattr(server, "read_state", lambda: running)
    if env is None:
        monkeypatch.delenv("HARNESS_SPARK_MASTER", raising=False)
    else:
        monkeypatch.setenv("HARNESS_SPARK_MASTER", env)
    assert (_server_for(asked) is running) if taken else _server_for(asked) is None


def test_a_state_file_from_before_batch_reads_as_a_quick_server() -> None:
    doc = {"pid": 1, "start_time": None, "port": 1, "key": "00", "master": "local[*]", "started": 0.0, "log": "l"}
    assert ServerState(**doc).batch is False


def test_teardown_removes_only_the_warm_up_stores_of_processes_that_are_gone(tmp_path) -> None:  # noqa: ANN001
    import os
    import subprocess

    from harness.analysis.job import WARM_UP_PREFIX, orphaned_warm_ups
    from harness.localstate import process_start_time

    me = os.getpid()
    gone = subprocess.Popen(["true"])
    gone_start = process_start_time(gone.pid) or 1
    gone.wait()
    live = tmp_path / f"{WARM_UP_PREFIX}{me}-{process_start_time(me)}-ab_c1"
    dead = tmp_path / f"{WARM_UP_PREFIX}{gone.pid}-{gone_start}-xyz"
    reused = tmp_path / f"{WARM_UP_PREFIX}{me}-{(process_start_time(me) or 0) + 1}-q"  # same pid, another process
    older = tmp_path / f"{WARM_UP_PREFIX}k2j_x9"  # named before the owner was part of the name
    for d in (live, dead, reused, older):
        d.mkdir()
    (tmp_path / "other").mkdir()
    assert orphaned_warm_ups(tmp_path) == sorted([dead, reused, older])
