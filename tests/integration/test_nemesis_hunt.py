"""`harness hunt` against the deliberately broken agent (reregister_on_expiry=false): find a
failing schedule, shrink it, write it, replay it to the same anomaly (checker + broker)."""

from __future__ import annotations

import pytest

from harness.cli import main
from nemesis.scripted import load_schedule

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_hunt_finds_shrinks_writes_and_replays(tmp_path, capsys):
    out = tmp_path / "minimal.toml"
    rc = main(["hunt", "--toggle", "reregister_on_expiry=false", "--faults", "isolate", "--max-runs", "3",
               "--time-limit", "8", "--seed", "1", "--out", str(out), "--store", str(tmp_path / "store")])
    text = capsys.readouterr().out
    assert "found" in text, text
    assert out.exists()
    schedule = load_schedule(out)
    assert schedule.steps and all(s.op.f == "isolate" for s in schedule.steps)
    assert "same anomaly" in text, text
    assert rc == 1
