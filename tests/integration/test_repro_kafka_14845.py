"""`harness repro KAFKA-14845`: the anomaly N/N with the bug's toggles, clean N/N with the fix, on one
cluster (warm runs). The verdicts come from the registration checkers over each recorded history."""

from __future__ import annotations

import pytest
from rich.console import Console

from base.inventory import load_inventory
from harness.engine import Engine
from scenarios import scenarios

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

N = 3


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with Engine(load_inventory(), tmp_path_factory.mktemp("store"), Console(quiet=True), keep_warm=True) as e:
        e.warm(scenarios()["KAFKA-14845"].spec(False))
        yield e


@pytest.mark.parametrize("fixed", [False, True], ids=["bug", "fixed"])
def test_kafka_14845(engine, fixed):
    sc = scenarios()["KAFKA-14845"]
    results = [engine.run(sc.spec(fixed)) for _ in range(N)]
    for r in results:
        assert r.error is None, r.error
        assert r.matched, f"{r.run_dir}: verdicts {r.verdicts}"
        assert (r.run_dir / "history.jsonl").exists()
    if not fixed:
        assert all(a["checker"] == "registration_liveness" for r in results for a in r.anomalies)
        assert all(r.anomalies for r in results)
