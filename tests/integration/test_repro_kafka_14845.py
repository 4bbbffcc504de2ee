"""`harness repro KAFKA-14845`: the anomaly N/N with the bug's toggles, clean N/N with the fix, on one
cluster (warm runs). The verdicts come from checkers.registration over each recorded history."""

from __future__ import annotations

import pytest

from workloads.repro import scenarios
from workloads.repro.framework import ReproSession

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

N = 3


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    with ReproSession(store=str(tmp_path_factory.mktemp("store"))) as s:
        s.up(scenarios()["KAFKA-14845"])
        yield s


@pytest.mark.parametrize("fixed", [False, True], ids=["bug", "fixed"])
def test_kafka_14845(session, fixed):
    sc = scenarios()["KAFKA-14845"]
    results = [session.run(sc, fixed) for _ in range(N)]
    for r in results:
        assert r.error is None, r.error
        assert r.matched, f"{r.run_dir}: verdicts {r.verdicts}"
        assert (r.run_dir / "history.jsonl").exists()
    if not fixed:
        assert all(a["checker"] == "registration-liveness" for r in results for a in r.anomalies)
        assert all(r.anomalies for r in results)
