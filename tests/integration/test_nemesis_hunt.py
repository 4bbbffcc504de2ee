"""`harness hunt` against the deliberately broken agent (reregister_on_expiry=false): find a
failing schedule, shrink it, write it, replay it to the same anomaly (checker + broker).

--min-fault 4.5 keeps every isolation well past the 3 s session timeout, so each one expires the
session for sure: without it the shrink walks to the edge (an isolation about as long as T) and
whether the replay reproduces is a coin toss (the confirm/widen step handles that, unit-tested)."""

from __future__ import annotations

import pytest

from harness.cli import main
from nemesis.scripted import load_schedule

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_hunt_finds_shrinks_writes_and_replays(tmp_path, capsys):
    out = tmp_path / "minimal.toml"
    rc = main(["hunt", "--toggle", "reregister_on_expiry=false", "--faults", "isolate", "--max-runs", "3",
               "--time-limit", "10", "--min-fault", "4.5", "--replays", "2", "--seed", "1",
               "--out", str(out), "--store", str(tmp_path / "store")])
    text = capsys.readouterr().out
    assert "found" in text, text
    assert out.exists()
    schedule = load_schedule(out)
    assert schedule.steps and all(s.op.f == "isolate" for s in schedule.steps)
    assert "confirmation: reproduced" in out.read_text()
    assert "same anomaly" in text, text
    assert rc == 1
