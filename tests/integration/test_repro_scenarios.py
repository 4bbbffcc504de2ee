"""Every other `harness repro` scenario: the anomaly N/N with the bug's toggles and a clean run N/N
with the fix, one cluster per scenario (slow: each pair of N runs takes one to two minutes)."""

from __future__ import annotations

import pytest

from workloads.repro import scenarios
from workloads.repro.framework import ReproSession

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

N = 3
IDS = ["KAFKA-6584", "KAFKA-7235-fast-bounce", "KAFKA-7235-stale-stopreplica", "KAFKA-7235-stale-shutdown",
       "KAFKA-14139"]


@pytest.mark.parametrize("sid", IDS)
def test_scenario_reproduces_and_is_fixed(tmp_path, sid):
    sc = scenarios()[sid]
    assert sc.available() is None
    with ReproSession(store=str(tmp_path / "store")) as session:
        if sc.needs_spark:
            session.warm_spark()
        session.up(sc)
        bug = [session.run(sc, False) for _ in range(N)]
        fixed = [session.run(sc, True) for _ in range(N)]
    for r in bug + fixed:
        assert r.error is None, f"{r.run_dir}: {r.error}"
        assert r.matched, f"{r.run_dir}: fixed={r.fixed} verdicts {r.verdicts}"
    assert all(r.reproduced for r in bug)
    assert not any(r.reproduced for r in fixed)
