"""Checker lanes (``checkers.checker.lane_of``, ``checkers.project._lanes``): which checkers run one
after another and which at once on run-sized input, and ``Events.once`` computing a shared pass once
when lanes on threads ask for it together. Plain data and threads, no Spark."""

from __future__ import annotations

import threading
import time

import pytest

from base.errors import UsageError
from checkers import project
from checkers.checker import Events, lane_of
from checkers.project import LANES_ENV, _lanes, lane_threads, make_checkers


def test_checkers_that_share_a_pass_share_a_lane() -> None:
    lanes = {c.name: lane_of(c) for c in make_checkers()}
    families = {
        "plans": ["single_registrant", "control_request_epochs", "controller_epochs", "controller_write_fencing",
                  "bounce_handling", "controlled_shutdown_epochs", "isr_expansion", "partition_states",
                  "max_broker_epoch"],
        "queue": ["queue_lost_write", "queue_inconsistent_offsets", "queue_duplicate", "queue_aborted_read",
                  "queue_poll_order", "queue_unseen"],
        "sweep": ["registration_epochs", "registration_liveness"],
        "zxid": ["zxid_realtime", "zxid_replay"],
    }
    wrong = [f"{n} runs in lane {lanes[n]!r}, not its family's {lane!r}" for lane, names in families.items()
             for n in names if lanes[n] != lane]
    assert not wrong, wrong


def test_lanes_keep_report_order_and_put_the_largest_first() -> None:
    selected = make_checkers()
    lanes = _lanes(selected)
    assert [lane_of(lane[0]) for lane in lanes[:2]] == ["plans", "queue"]
    assert sorted(c.name for lane in lanes for c in lane) == sorted(c.name for c in selected)
    order = [c.name for c in selected]
    for lane in lanes:
        names = [c.name for c in lane]
        assert names == sorted(names, key=order.index), names


def test_lane_threads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LANES_ENV, raising=False)
    assert lane_threads() >= 2
    monkeypatch.setenv(LANES_ENV, "1")
    assert lane_threads() == 1
    monkeypatch.setenv(LANES_ENV, "many")
    with pytest.raises(UsageError, match=rf"\${LANES_ENV}: 'many'"):
        lane_threads()


def test_a_shared_pass_is_computed_once_by_lanes_that_ask_together() -> None:
    events = Events(paths=("h",), selected=())
    calls: list[int] = []
    got: list[int] = []

    def compute() -> int:
        calls.append(1)
        time.sleep(0.2)  # the other threads ask meanwhile
        return 42

    threads = [threading.Thread(target=lambda: got.append(events.once("pass", compute))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1] and got == [42] * 4


def test_a_failed_pass_fails_every_lane_that_asked_for_it() -> None:
    events = Events(paths=("h",), selected=())

    def broken() -> int:
        raise RuntimeError("the plan failed")

    for _ in range(2):
        with pytest.raises(RuntimeError, match="the plan failed"):
            events.once("pass", broken)


def test_lanes_run_one_after_another_off_spark() -> None:
    """Local rows (no Spark) and large input keep one lane after another: the lanes' threads are for a
    JVM's idle core, and ``_run_lanes`` is reached only with a frame of one partition."""
    ran: list[str] = []

    class Probe:
        local = True
        reads: dict = {}

        def __init__(self, name: str, lane: str) -> None:
            self.name, self.lane = name, lane

        def check(self, events: Events) -> dict:
            ran.append(threading.current_thread().name)
            return {p: {"valid": True, "anomalies": [], "stats": {}} for p in events.paths}

    selected = (Probe("a", "x"), Probe("b", "y"))
    events = Events(paths=("h",), selected=selected, rows=[])
    project._compose(selected, events, {"h": 0})  # type: ignore[arg-type]
    assert ran == [threading.current_thread().name] * 2


class FakeConf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {"spark.sql.shuffle.partitions": "4"}

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class FakeSession:
    def __init__(self) -> None:
        self.conf = FakeConf()


def test_overlapping_settings_blocks_restore_the_value_before_the_first() -> None:
    """Two lanes' blocks overlapping (the first ends first): per-block save and restore left the
    second's value for good; the holds give the original back when the last ends."""
    from checkers.spark import session_conf

    spark = FakeSession()
    key = "spark.sql.shuffle.partitions"
    first, second = session_conf(spark, {key: "1"}), session_conf(spark, {key: "1"})  # type: ignore[arg-type]
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert spark.conf.get(key) == "1"  # the second still holds it
    second.__exit__(None, None, None)
    assert spark.conf.get(key) == "4"


def test_nested_settings_blocks_restore_the_outer_value_then_the_original() -> None:
    from checkers.spark import session_conf

    spark = FakeSession()
    key, unset = "spark.sql.shuffle.partitions", "spark.sql.codegen.wholeStage"
    with session_conf(spark, {key: "1", unset: "false"}):  # type: ignore[arg-type]
        with session_conf(spark, {key: "8", unset: None}):  # type: ignore[arg-type]
            assert spark.conf.get(key) == "8" and spark.conf.get(unset) is None
        assert spark.conf.get(key) == "1" and spark.conf.get(unset) == "false"
    assert spark.conf.get(key) == "4" and spark.conf.get(unset) is None


def test_a_failed_lane_stops_the_others_after_their_current_checker() -> None:
    """The error is raised to the caller, and a lane not yet past its first checker runs no second."""
    ran: list[str] = []

    class Probe:
        local = False
        reads: dict = {}

        def __init__(self, name: str, lane: str, fail: bool = False) -> None:
            self.name, self.lane, self.fail = name, lane, fail

        def check(self, events: Events) -> dict:
            time.sleep(0.3 if not self.fail else 0.05)
            ran.append(self.name)
            if self.fail:
                raise RuntimeError(f"{self.name} broke")
            return {p: {"valid": True, "anomalies": [], "stats": {}} for p in events.paths}

    class Frame:
        sparkSession = FakeSession()

    selected = (Probe("slow1", "x"), Probe("slow2", "x"), Probe("bad", "y", fail=True))
    events = Events(paths=("h",), selected=selected, frame=Frame(), small=True)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="bad broke"):
        project._compose(selected, events, {"h": 0})  # type: ignore[arg-type]
    time.sleep(0.5)  # what the first lane would have run by now
    assert "slow2" not in ran and "bad" in ran, ran
