"""`harness repro KAFKA-14845`: the anomaly N/N with the bug's toggles, clean N/N with the fix, on one
cluster (warm runs). The verdicts come from the registration checkers over each recorded history."""

from __future__ import annotations

import pytest

from scenarios import scenarios
from tests.runs import explain, repro_runs, run_on, told_runs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

N = repro_runs()  # 1 in make test, 3 in make nightly


@pytest.mark.parametrize("fixed", [False, True], ids=["bug", "fixed"])
def test_kafka_14845(warm_engine, tmp_path, fixed):
    sc = scenarios()["KAFKA-14845"]
    results = told_runs(lambda: run_on(warm_engine, tmp_path / "store", sc.spec(fixed)), N)
    for r in results:
        assert r.error is None, r.error
        assert r.matched, explain(r)
        assert (r.run_dir / "history.jsonl").exists()
    if not fixed:
        assert all(a["checker"] == "registration_liveness" for r in results for a in r.anomalies)
        assert all(r.anomalies for r in results)
