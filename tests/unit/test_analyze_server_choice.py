"""Which running check server `harness analyze` hands its job to: only a batch one, on the same master,
and none with ``--no-server``."""

from __future__ import annotations

import argparse

import pytest

from harness import checkserver as server
from harness.checkserver import ServerState
from harness.commands.analyze import _server_for


def state(master: str, batch: bool) -> ServerState:
    return ServerState(pid=1, start_time=None, port=1, key="00", master=master, started=0.0, log="l", batch=batch)


def args(master: str | None, no_server: bool = False) -> argparse.Namespace:
    return argparse.Namespace(spark_master=master, no_server=no_server)


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
    assert (_server_for(args(asked)) is running) if taken else _server_for(args(asked)) is None
    assert _server_for(args(asked, no_server=True)) is None


def test_a_state_file_from_before_batch_reads_as_a_quick_server() -> None:
    doc = {"pid": 1, "start_time": None, "port": 1, "key": "00", "master": "local[*]", "started": 0.0, "log": "l"}
    assert ServerState(**doc).batch is False

