"""A scripted schedule file replays through the run engine and the run ends valid."""

from __future__ import annotations

import pytest

from nemesis.scripted import load_schedule
from tests.runs import run_test

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEDULE = """
name = "scripted-smoke"

[[step]]
at = 1.0
fault = "partition"
targets = "one-broker"
duration = 7.0
seed = 1

[[step]]
at = 1.5
fault = "pause"
targets = "zk-leader"
duration = 1.0

[[step]]
at = 3.0
fault = "latency"
targets = ["b2"]
duration = 2.0
params = { latency_ms = 50, jitter_ms = 10 }
"""


def test_scripted_schedule_replays_valid(tmp_path, warm_engine):
    path = tmp_path / "smoke.toml"
    path.write_text(SCHEDULE)
    schedule = load_schedule(path)
    out = run_test(tmp_path / "store", "--time-limit", "8", "--test", "scripted", schedule=schedule,
                   engine=warm_engine)
    assert out.valid is True, out.results.get("anomalies")
    history = (out.run_dir / "history.jsonl").read_text()
    assert '"f":"partition"' in history and '"stage":"complete"' in history
    assert '"stage":"error"' not in history
