"""Every other `harness repro` scenario: the anomaly N/N with the bug's toggles and a clean run N/N
with the fix, on the session's warm engine. ``make test`` runs each variant once (N=1); ``make
nightly`` sets ZKFENCE_REPRO_RUNS=3, the rate check (a reproduction that holds 3/3, a fix clean 3/3).
A run whose story could not be told (a race the other way, ``story not told``) is run again, at most
twice per variant (tests.runs.told_runs): it is evidence neither of the bug nor of the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios import module_scenarios, scenario_modules, scenarios
from tests.runs import explain, repro_runs, run_on, told_runs

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

N = repro_runs()
# every scenario but those whose module has a test file of its own (test_repro_<module>.py)
IDS = [sc.id for m in scenario_modules()
       if not (Path(__file__).parent / f"test_repro_{m.__name__.rpartition('.')[2]}.py").exists()
       for sc in module_scenarios(m)]


@pytest.mark.parametrize("sid", IDS)
def test_scenario_reproduces_and_is_fixed(warm_engine, tmp_path, sid):
    sc = scenarios()[sid]
    assert sc.available() is None
    bug = told_runs(lambda: run_on(warm_engine, tmp_path / "store", sc.spec(False)), N)
    fixed = told_runs(lambda: run_on(warm_engine, tmp_path / "store", sc.spec(True)), N)
    for r in bug + fixed:
        assert r.error is None, f"{r.run_dir}: {r.error}"
        assert r.matched, explain(r)
    assert all(r.reproduced for r in bug), "\n".join(explain(r) for r in bug)
    assert not any(r.reproduced for r in fixed), "\n".join(explain(r) for r in fixed)
