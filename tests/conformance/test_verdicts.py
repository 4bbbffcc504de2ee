"""Every reference history in VERDICTS.tsv gets its expected verdict, on the pure path and on Spark.

The corpus lives outside the repo (../shared/histories or $HARNESS_SHARED_HISTORIES); these tests
skip with a clear message when it is absent.
"""

from __future__ import annotations

import csv

import pytest

from checkers import linearizability, models, parsers
from checkers.testing import shared_histories

ROOT = shared_histories()
pytestmark = pytest.mark.skipif(
    ROOT is None, reason="reference corpus not found: set HARNESS_SHARED_HISTORIES or put it at ../shared/histories"
)
ROWS = list(csv.DictReader(open(ROOT / "VERDICTS.tsv"), delimiter="\t")) if ROOT else []
FILES = [r["file"] for r in ROWS]
EXPECTED = {r["file"]: r["expected"] == "valid" for r in ROWS}
BUDGET = 20.0  # CPU seconds per part; unknown (never valid) past it


@pytest.fixture(scope="module")
def histories() -> list[linearizability.History]:
    out = []
    for f in FILES:
        fmt, ops = parsers.load(ROOT / f)
        out.append((f, ops, models.make_model(parsers.default_model(fmt, ops))))
    return out


@pytest.fixture(scope="module")
def pure(histories):  # noqa: ANN001, ANN201
    return linearizability.check_local(histories, budget_seconds=BUDGET)


@pytest.fixture(scope="module")
def on_spark(histories, spark):  # noqa: ANN001, ANN201
    return linearizability.check_spark(spark, histories, budget_seconds=BUDGET)


def test_corpus_is_complete() -> None:
    assert len(FILES) >= 180
    assert all((ROOT / f).is_file() for f in FILES)


@pytest.mark.parametrize("name", FILES)
def test_pure_verdict(pure, name: str) -> None:  # noqa: ANN001
    assert pure[name]["valid"] is EXPECTED[name], pure[name]


@pytest.mark.integration
@pytest.mark.parametrize("name", FILES)
def test_spark_verdict(on_spark, name: str) -> None:  # noqa: ANN001
    r = on_spark[name]
    assert r["valid"] is EXPECTED[name], r
    if r["valid"] is False:
        assert r["anomalies"] and all(a["event_ids"] for a in r["anomalies"])


@pytest.mark.integration
def test_whole_corpus_is_one_job(on_spark) -> None:  # noqa: ANN001
    jobs = {r["stats"]["job_seconds"] for r in on_spark.values()}
    assert len(jobs) == 1  # every history was decided by the same Spark job
    assert all(r["stats"]["engine"] == "spark" for r in on_spark.values())


@pytest.mark.integration
def test_c50_bad_stops_its_other_parts(on_spark) -> None:  # noqa: ANN001
    r = on_spark["porcupine/kv/c50-bad.txt"]
    assert r["valid"] is False
    # the hopeless parts ("0", "9") never finish on their own; cancellation must have stopped them
    assert r["stats"]["parts_checked"] < r["stats"]["parts"]
    assert r["stats"]["parts_unknown"] == 0
