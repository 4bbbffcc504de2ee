"""Check the project's own histories (``history.jsonl``): every project-history checker, one entry point.

``check_histories`` reads the histories once, projected to exactly the kinds and fields the selected
checkers read (``Checker.reads``), and runs each checker's ``check`` on that. With ``local=True``
and only checkers that have a local driver (the registration sweeps), it reads them without Spark
and never starts it. The run engine and ``harness check`` both call it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from base.errors import UsageError
from checkers.cds import TRAINED_ON
from checkers.checker import Checker, Events, lane_of, needs_of, union
from checkers.fencing import (
    BOUNCE_HANDLING,
    CONTROL_REQUEST_EPOCHS,
    CONTROLLED_SHUTDOWN_EPOCHS,
    CONTROLLER_EPOCHS,
    CONTROLLER_WRITE_FENCING,
    ISR_EXPANSION,
    MAX_BROKER_EPOCH,
    PARTITION_STATES,
    SINGLE_REGISTRANT,
)
from checkers.queue_log import QUEUE_LOG
from checkers.queue_pass import QUEUE_CHECKS
from checkers.register import REGISTER
from checkers.registration import DEFAULT_MARGIN_MS, RegistrationEpochs, RegistrationLiveness
from checkers.result import UNKNOWN, Result, compose
from checkers.zxid_project import ZxidRealtime, ZxidReplay, ZxidSession

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from history import Lacking, Scan

MODEL = "epoch-fencing"


def make_checkers(margin_ms: int = DEFAULT_MARGIN_MS) -> tuple[Checker, ...]:
    """Every project-history checker, in report order: the registry. A new checker is one line here;
    ``CHECKER_NAMES``, ``select``, the tests' completeness checks (a case per checker in
    tests/integration/test_check_fencing.py, the list in docs/checking.md) and ``harness check
    --checkers`` derive from it."""
    return (
        RegistrationEpochs(),  # invariant 1
        SINGLE_REGISTRANT,  # 2
        RegistrationLiveness(margin_ms),  # 3
        CONTROL_REQUEST_EPOCHS,  # 4
        CONTROLLER_EPOCHS,  # 5
        CONTROLLER_WRITE_FENCING,  # 6
        BOUNCE_HANDLING,  # 7
        CONTROLLED_SHUTDOWN_EPOCHS,  # 8
        ISR_EXPANSION,  # 9
        PARTITION_STATES,  # 10
        MAX_BROKER_EPOCH,  # 11
        ZxidRealtime(), ZxidReplay(), ZxidSession(),  # the zxid sweep
        *QUEUE_CHECKS, QUEUE_LOG,  # queue workload: one pass per partition on large input (checkers.queue_pass)
        REGISTER,  # register workload
    )


CHECKER_NAMES: tuple[str, ...] = tuple(c.name for c in make_checkers())


def select(names: Sequence[str] | None, margin_ms: int | None = None) -> tuple[Checker, ...]:
    """The checkers named (all for None), in report order; ``ValueError`` naming unknown ones."""
    every = make_checkers(DEFAULT_MARGIN_MS if margin_ms is None else margin_ms)
    if names is None:
        return every
    unknown = sorted(set(names) - set(CHECKER_NAMES))
    if unknown or not names:  # no checker at all would be a valid verdict on nothing checked
        raise ValueError(f"unknown checker(s) {', '.join(unknown) or '(none named)'}; known: "
                         f"{', '.join(CHECKER_NAMES)}")
    return tuple(c for c in every if c.name in set(names))


def check_histories(paths: Sequence[str], *, spark: SparkSession | Callable[[], SparkSession] | None = None,
                    names: Sequence[str] | None = None, margin_ms: int | None = None,
                    local: bool = False, timings: dict[str, float] | None = None,
                    cancelled: Callable[[], bool] | None = None, skip_damaged: bool = False) -> dict[str, Result]:
    """{path: composed result} of the named checkers (all for None) over each history.

    A damaged line (``history.validate``) is a ``UsageError`` naming file and line. With
    ``skip_damaged`` it is left out instead (``damage``), and its history's verdict is ``unknown``.

    ``timings``, when given, receives the seconds each step took: ``session`` (getting the
    SparkSession), ``load`` (reading and projecting the histories) and one entry per checker, in
    order (a checker family's shared job is paid by its first checker: ``bench/check_latency.py``).
    With lanes at once (``lane_threads``, run-sized input on Spark) the checkers' entries overlap;
    ``$HARNESS_CHECK_LANES=1`` makes them add up.

    ``spark`` may be a zero-argument callable: it is called only when some checker needs Spark
    (``local=False``, or a selected checker without a local driver); ``None`` uses the shared
    session (``checkers.spark.get_spark``).

    ``cancelled``, when it returns True before a checker starts, skips that checker and the rest:
    a warm-up that the real check has overtaken (``warm_up``).
    """
    paths = tuple(str(p) for p in paths)
    selected = select(names, margin_ms)
    if not paths:
        return {}
    reads = union(c.reads for c in selected)
    needs = tuple(dict.fromkeys(n for c in selected for n in needs_of(c)))
    if local and all(c.local for c in selected):
        from checkers.rows import load_rows

        damaged: dict[str, Scan] = {}
        lacking: dict[str, list[Lacking]] = {}
        with _timed(timings, "load"):
            rows, counts = load_rows(paths, reads, skip_damaged=skip_damaged, damaged=damaged, needs=needs,
                                     lacking=lacking)
        return damage(_compose(selected, Events(paths, selected, rows=rows), counts, timings, cancelled, lacking),
                      damaged)
    from checkers import events_df
    from checkers.spark import generated_code

    with _timed(timings, "session"):
        spark_session = session(spark)
    with generated_code(spark_session, large=not events_df.small_input(paths)):
        with _timed(timings, "load"):
            loaded = events_df.load(spark_session, paths, reads, skip_damaged=skip_damaged, needs=needs)
        try:
            return damage(_compose(selected, Events(paths, selected, frame=loaded.frame, small=loaded.small),
                                   loaded.counts, timings, cancelled, loaded.lacking), loaded.damaged)
        finally:
            loaded.release()


def session(spark: SparkSession | Callable[[], SparkSession] | None) -> SparkSession:
    """The session a caller gave, made (a callable) or shared (None)."""
    if spark is None:
        from checkers.spark import get_spark

        return get_spark()
    return spark if hasattr(spark, "read") else spark()


@contextmanager
def _timed(timings: dict[str, float] | None, step: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if timings is not None:
            timings[step] = time.perf_counter() - t0


def _compose(selected: tuple[Checker, ...], events: Events, counts: dict[str, int],
             timings: dict[str, float] | None = None,
             cancelled: Callable[[], bool] | None = None,
             lacking: dict[str, list[Lacking]] | None = None) -> dict[str, Result]:
    per: dict[str, dict[str, Result]] = {}
    halted = threading.Event()  # another lane failed, or the caller was interrupted

    def run(lane: list[Checker]) -> None:
        for c in lane:
            if halted.is_set() or (cancelled is not None and cancelled()):
                return
            with _timed(timings, c.name):
                per[c.name] = undecided(c, c.check(events), lacking or {})

    lanes = _lanes(selected)
    width = lane_threads() if events.frame is not None and events.small else 1
    if width <= 1 or len(lanes) <= 1:
        run(list(selected))  # one after another, in report order
    else:
        _run_lanes(lanes, run, width, events.frame.sparkSession, halted)
    ordered = {c.name: per[c.name] for c in selected if c.name in per}
    return {p: compose({name: r[p] for name, r in ordered.items()}, events=counts.get(p, 0), model=MODEL)
            for p in events.paths}


LANES_ENV = "HARNESS_CHECK_LANES"  # lanes at once on run-sized input; 1: one checker after another


def lane_threads() -> int:
    """How many lanes run at once on run-sized input: ``$HARNESS_CHECK_LANES``, else one per core (at
    least two). A warm session's check is mostly single-partition jobs and Python-worker waits that
    leave a core idle; a cold JVM's compiler threads fill it already (bench/RESULTS.md)."""
    raw = os.environ.get(LANES_ENV)
    if raw is None:
        return max(2, os.cpu_count() or 2)
    try:
        return max(1, int(raw))
    except ValueError:
        raise UsageError(f"${LANES_ENV}: {raw!r} is not a number of lanes (1 runs the checkers one after another)") from None


def check_preflight(master: str | None) -> None:
    """What a check on Spark in this process judges before any work starts: the master
    (``checkers.spark.check_master``) and ``$HARNESS_CHECK_LANES``; a bad one is one line, exit 254,
    not an error after a run's play."""
    from checkers.spark import check_master

    check_master(master)
    lane_threads()


def _lanes(selected: tuple[Checker, ...]) -> list[list[Checker]]:
    """The selected checkers by lane (``lane_of``), each in report order; the lanes with the most
    checkers first (a family's shared pass is the long step), then in report order."""
    by: dict[str, list[Checker]] = {}
    for c in selected:
        by.setdefault(lane_of(c), []).append(c)
    return sorted(by.values(), key=lambda lane: -len(lane))


def _run_lanes(lanes: list[list[Checker]], run: Callable[[list[Checker]], None], width: int,
               spark: SparkSession, halted: threading.Event) -> None:
    """``run`` each lane on threads, ``width`` at once, under the settings for one in-memory partition
    (``checkers.plans.single_partition_conf``) for the whole call: the settings are session-wide, so
    without this a lane's jobs would be planned with them or without, depending on whether the plans'
    lane was collecting at that moment. The first error raised in a lane is raised here; that error,
    or an interrupt of the caller (Ctrl-C, SIGTERM), sets ``halted``, so the other lanes stop after
    the checker each is running instead of holding the interrupted process up to the end."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from checkers.plans import single_partition_conf

    pool = ThreadPoolExecutor(min(width, len(lanes)), thread_name_prefix="zkfence-lane")
    try:
        with single_partition_conf(spark):
            for f in as_completed([pool.submit(run, lane) for lane in lanes]):  # a failure as soon as it happens
                f.result()
    except BaseException:
        halted.set()
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def undecided(checker: Checker, results: dict[str, Result], lacking: dict[str, list[Lacking]]) -> dict[str, Result]:
    """``results`` with the verdict ``unknown`` on each history where an event lacks a field the
    checker needs (``Checker.needs``): what the plan made of the gap (an anomaly it implied, or one it
    hid) is not evidence either way. The anomalies found stay listed; ``stats.lacking`` cites the
    first events (``<id> (<kind> <type>, line N) lacks <fields>``)."""
    mine = set(needs_of(checker))
    if not mine:
        return results
    for path, found in lacking.items():
        r = results.get(path)
        cited = [x.cite() for x in found if x.needs & mine]
        if r is None or not cited:
            continue
        r["valid"] = UNKNOWN
        r["stats"]["lacking"] = cited[:LACKING_CITED]
        r["stats"]["unknown_reason"] = (f"an event lacks a field this checker needs, first {cited[0]}: the gap "
                                        "could explain or hide an anomaly")
    return results


LACKING_CITED = 5


def damage(results: dict[str, Result], damaged: dict[str, Scan]) -> dict[str, Result]:
    """``results`` with each history's skipped damaged lines in its stats (``damaged_lines``, the
    first few ``damaged``) and its verdict ``unknown``: what the checkers did not read might have
    held an anomaly, and its absence can make one (a skipped registration leaves its znode looking
    unclaimed), so neither valid nor invalid can rest on the rest. The anomalies found stay listed,
    and each checker's own result (``checkers``) is what it said of the events it read."""
    for path, scan in damaged.items():
        r = results.get(path)
        if r is None:
            continue
        r["stats"]["damaged_lines"] = scan.damaged_total
        r["stats"]["damaged"] = scan.problems()
        r["valid"] = UNKNOWN
        r["stats"]["unknown_reason"] = (f"{scan.damaged_total} damaged line(s) skipped: the checkers did not read "
                                        "every event, and a skipped one could explain or hide an anomaly")
    return results


WARM_UP_HISTORY = TRAINED_ON  # the class-data-sharing archive is trained on this warm-up
WARM_UP_ENV = "HARNESS_SPARK_WARM_UP"  # "off": a run's session and the check server start without it


def warm_up_wanted() -> bool:
    """Whether a session should be warmed up (``$HARNESS_SPARK_WARM_UP`` is not ``off``): a head start
    that a machine whose cores the run itself needs, or a test suite that starts many sessions, skips."""
    return os.environ.get(WARM_UP_ENV) != "off"


def warm_up(spark: SparkSession, cancelled: Callable[[], bool] | None = None) -> float:
    """Check a small built-in history so that the JVM compiles the checkers' code paths before a real
    history arrives; the seconds it took. A check on a cold JIT takes two to three times as long as
    the same check warm (bench/RESULTS.md). ``warm_up.jsonl`` is a real run's history (`harness run
    --workload queue --rate 15 --concurrency 4 --time-limit 12`: 771 events of 37 kinds, a broker
    isolated and healed, valid), so that every checker takes the paths a real run's check takes; a
    history of two brokers registering left most of them cold. ``cancelled`` (see
    ``check_histories``) lets a run's check overtake it rather than wait for the checkers it has
    not reached. A file shipped with the package, not one written per call: a run killed during
    its background warm-up leaves nothing behind."""
    t0 = time.perf_counter()
    check_histories([str(WARM_UP_HISTORY)], spark=spark, cancelled=cancelled)
    return time.perf_counter() - t0
