"""The queue checkers' one pass (``checkers.queue_pass``) against their plans (``checkers.queue``):
the same verdicts, anomalies (messages, cited ids, keys, counts) and ``queue_unseen`` stats on every
queue fixture (tests/integration/test_check_queue.py's histories, the queue CASES of
tests/integration/test_check_fencing.py, the stored runs of tests/data/store) and on the bench's
history with one injected anomaly of each kind (bench/queue_checkers.py), all in one frame."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from checkers import events_df, plans, queue_pass
from checkers.checker import Events, field_types, union
from checkers.project import check_histories
from checkers.queue import QUEUE_PLANS, UNSEEN
from checkers.testing import EventLog
from tests.integration import test_check_queue as tq
from tests.integration.test_check_fencing import CASES

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
OLD = (*QUEUE_PLANS, UNSEEN)
NAMES = [c.name for c in OLD]
READS = union(c.reads for c in OLD)
STORE = sorted(str(p) for p in (REPO / "tests" / "data" / "store").glob("*/*/history.jsonl"))


def _bench() -> Any:
    """bench/queue_checkers.py, whose generator injects one anomaly of each kind."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import queue_checkers
    finally:
        sys.path.remove(str(REPO / "bench"))
    return queue_checkers


@pytest.fixture(scope="module")
def fixtures(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[str]]:
    """Every queue fixture's rows in one frame (as ``harness check`` loads them) plus the bench's."""
    root = tmp_path_factory.mktemp("queue-pass")
    paths = [str(h.write(root / f"{name}.jsonl")) for name, h in (
        ("clean", tq.clean()), ("lost_write", tq.lost_write()[0]), ("inconsistent", tq.inconsistent()[0]),
        ("duplicate", tq.duplicated()[0]), ("aborted", tq.aborted()[0]), ("skip", tq.skip()[0]),
        ("backwards", tq.backwards()[0]), ("unseen", tq.unseen()[0]))]
    for case, (name, build) in CASES.items():
        if name.startswith("queue_"):
            for bad in (False, True):
                log = EventLog(run=f"{case}-{bad}")
                build(log, bad)
                paths.append(str(log.write(root / f"{case}-{bad}.jsonl")))
    paths += STORE
    loaded = events_df.load(spark, paths, READS)
    bench = events_df.parse(_bench().generate(spark, 60, 2), field_types(READS))
    # one partition: a few hundred rows of fixtures and bench, so each job below is a handful of tasks
    frame = loaded.frame.unionByName(bench.select(*loaded.frame.columns)).coalesce(1).localCheckpoint()
    loaded.release()
    return frame, [*paths, "bench"]


@pytest.fixture(scope="module")
def both(fixtures: tuple[Any, list[str]]) -> tuple[dict[str, Any], dict[str, Any]]:
    frame, paths = fixtures
    old = plans.collect(QUEUE_PLANS, frame, paths, small=False)
    unseen = UNSEEN.check(Events(tuple(paths), OLD, frame=frame, small=False))
    for p in paths:
        old[p][UNSEEN.name] = unseen[p]
    return old, queue_pass.run(frame, paths, NAMES)


def test_one_pass_equals_the_plans_on_every_fixture(both: tuple[dict, dict], fixtures: tuple[Any, list[str]]) -> None:
    old, new = both
    for p in fixtures[1]:
        for name in NAMES:
            assert new[p][name] == old[p][name], (p, name)
    invalid = {(Path(p).stem, n) for p in fixtures[1] for n in NAMES if old[p][n]["valid"] is False}
    assert len(invalid) >= 10, "the fixtures show anomalies of every kind, not only clean histories"


def test_the_bench_history_shows_every_injected_kind(both: tuple[dict, dict]) -> None:
    _, new = both
    got = new["bench"]
    assert {n for n in NAMES if got[n]["valid"] is False} == set(_bench().INJECTED), got
    assert got["queue_poll_order"]["stats"]["anomalies_total"] == 2, "a skip and a non-monotonic poll"
    (lost,) = got["queue_lost_write"]["anomalies"]
    assert "lost-1" in lost["message"] and "broker 1: " in lost["message"] and "leader 2@epoch 1" in lost["message"]


@pytest.mark.parametrize("walk", ["jvm", "python"])
def test_run_sized_checks_give_the_same_anomalies(spark: Any, both: tuple[dict, dict], fixtures: tuple[Any, list[str]],
                                                  walk: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``harness check`` on run-sized input takes the pass walked in the JVM, or without it the plans
    (their summaries in plan order): the same anomalies as the pass over the shared frame, as a set."""
    if walk == "python":
        monkeypatch.setenv(queue_pass.WALK_ENV, "python")
    (p,) = [p for p in fixtures[1] if Path(p).stem == "lost_write"]
    small = check_histories([p], spark=spark, names=NAMES)[p]
    new = both[1][p]

    def key(a: dict[str, Any]) -> tuple[str, list[str]]:
        return a["message"], a["event_ids"]

    for n in NAMES:
        assert small["checkers"][n] == {"valid": new[n]["valid"], "stats": new[n]["stats"]}, n
        mine = [a for a in small["anomalies"] if a["checker"] == n]
        assert sorted(mine, key=key) == sorted(new[n]["anomalies"], key=key), n
    assert small["checkers"]["queue_lost_write"]["valid"] is False


def test_the_jvm_walk_is_the_python_walk_row_for_row(spark: Any, fixtures: tuple[Any, list[str]]) -> None:
    """``zkfence.QueueWalk`` (the rows made from the events in the JVM) against ``checkers.queue_walk``
    (``project``'s rows in Python workers) on every fixture's groups: every anomaly row, unsummarised
    (all of them, not the first few a summary keeps), message and ids alike."""
    from checkers import udfs

    if not udfs.jar_loaded(spark):
        pytest.skip("the JVM functions are not built (no javac, or HARNESS_SPARK_UDFS=off)")

    def rows(df: Any) -> list[tuple]:
        return sorted((tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in df.collect()), key=repr)

    jvm = rows(queue_pass.walk_events(fixtures[0]))
    assert jvm == rows(queue_pass.walk_frame(queue_pass.project(fixtures[0])))
    kinds = {r[1] for r in jvm}
    assert kinds == {"queue_lost_write", "queue_inconsistent_offsets", "queue_duplicate", "queue_aborted_read",
                     "queue_poll_order", "queue_unseen"}, kinds
