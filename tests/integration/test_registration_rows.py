"""The registration checks read the same rows with Spark and without it (repro's fast path)."""

from __future__ import annotations

import pytest

from checkers.registration import load_relevant, rows_from_history
from checkers.testing import EventLog

pytestmark = pytest.mark.integration


def test_spark_loader_and_plain_reader_extract_identical_rows(spark, tmp_path):
    log = EventLog(run="rows")
    log.emit("agent:1", "agent_start", process=1, broker_id=1, session_timeout_ms=3000, toggles={"x": True})
    log.emit("agent:1", "register", type="ok", process=1, broker_id=1, epoch=4294967302, czxid=4294967302,
             session_id=0x300000043230AC1, owner=0x300000043230AC1)
    log.emit("observer", "broker_znode", process=1, broker_id=1, exists=True, czxid=4294967302,
             owner=0x300000043230AC1, final=False)
    log.emit("nemesis", "heal", type="info", process="nemesis", phase="stop", stage="complete", reason="final")
    log.emit("harness", "run_end", live_brokers=[1, 2])
    log.emit("agent:1", "fetch", process=1, broker_id=1)  # not a row these checks read
    path = str(log.write(tmp_path / "history.jsonl"))

    def key(r: dict) -> tuple:
        return (r["src"], r["seq"])

    plain = sorted(rows_from_history(path), key=key)
    assert sorted(load_relevant(spark, [path]), key=key) == plain
    register = next(r for r in plain if r["f"] == "register")
    assert len(plain) == 5 and register["session_id"] == 0x300000043230AC1 and register["epoch"] == 4294967302
