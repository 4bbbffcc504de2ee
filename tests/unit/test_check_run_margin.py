"""`harness check RUN_DIR` judges a stored run with the registration_liveness margin the run had
(real brokers' runs default to 30 s: checked again with the 3 s default, a broker that took 20 s to
start and register again would be called unregistered)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.commands.check import _run_margin


def test_a_stored_runs_margin_is_the_one_it_ran_with(tmp_path: Path) -> None:
    assert _run_margin(None) is None and _run_margin(tmp_path) is None  # a bare history: the default
    (tmp_path / "run.json").write_text(json.dumps({"margin_ms": 30000, "kafka": {"version": "3.9.1"}}))
    assert _run_margin(tmp_path) == 30000
    for bad in ({"margin_ms": "30000"}, {"margin_ms": -1}, {"margin_ms": True}, [1, 2]):
        (tmp_path / "run.json").write_text(json.dumps(bad))
        assert _run_margin(tmp_path) is None
