"""Every other `harness repro` scenario: the anomaly N/N with the bug's toggles and a clean run N/N
with the fix, one cluster per scenario (slow: each pair of N runs takes one to two minutes)."""

from __future__ import annotations

import pytest
from rich.console import Console

from base.inventory import load_inventory
from harness.engine import Engine
from scenarios import scenarios

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

N = 3
IDS = ["KAFKA-6584", "KAFKA-7235-fast-bounce", "KAFKA-7235-stale-stopreplica", "KAFKA-7235-stale-shutdown",
       "KAFKA-14139"]


@pytest.mark.parametrize("sid", IDS)
def test_scenario_reproduces_and_is_fixed(tmp_path, sid):
    sc = scenarios()[sid]
    assert sc.available() is None
    with Engine(load_inventory(), tmp_path / "store", Console(quiet=True), keep_warm=True) as engine:
        engine.warm(sc.spec(False))
        bug = [engine.run(sc.spec(False)) for _ in range(N)]
        fixed = [engine.run(sc.spec(True)) for _ in range(N)]
    for r in bug + fixed:
        assert r.error is None, f"{r.run_dir}: {r.error}"
        assert r.matched, f"{r.run_dir}: {r.spec.info} verdicts {r.verdicts}"
    assert all(r.reproduced for r in bug)
    assert not any(r.reproduced for r in fixed)
