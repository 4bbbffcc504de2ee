"""Scripted schedule parsing (one-line errors), dump/load round trips, package determinism,
and the search strategy's shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from base.errors import UsageError
from nemesis.base import FaultOp
from nemesis.packages import package_schedule
from nemesis.schedule import Schedule, Step
from nemesis.scripted import ScheduleError, dump_schedule, dumps_schedule, load_schedule, parse_schedule
from nemesis.search import HuntResult, Window, hunt, schedules, windows_to_schedule

GOOD = """
name = "demo"

[[step]]
at = 2.0
fault = "partition"
targets = "minority-zk"
duration = 5
params = { grudge = "isolate", direction = "one-way" }

[[step]]
at = 3
fault = "kill"
phase = "start"
targets = ["b1", "zk2"]
seed = 4

[[step]]
at = 6
fault = "kill"
phase = "stop"

[[step]]
at = 7
fault = "bounce"
targets = "controller"
"""


def parse(text: str) -> Schedule:
    return parse_schedule(text, Path("s.toml"))


def test_parse_good():
    s = parse(GOOD)
    assert s.name == "demo"
    ops = [(st.at, st.op.f, st.op.phase, st.op.targets, st.op.params) for st in s.sorted_steps()]
    assert ops[0] == (2.0, "partition", "start", [], {"grudge": "isolate", "direction": "one-way",
                                                       "spec": "minority-zk"})
    assert (7.0, "partition", "stop", [], {"spec": "minority-zk"}) in ops
    assert (3.0, "kill", "start", ["b1", "zk2"], {"seed": 4}) in ops
    assert (6.0, "kill", "stop", [], {}) in ops


def test_round_trip(tmp_path):
    s = parse(GOOD)
    p = dump_schedule(s, tmp_path / "x.toml", comment="hello\nworld")
    again = load_schedule(p)
    assert dumps_schedule(again) == dumps_schedule(s)
    assert p.read_text().startswith("# hello\n# world\n")


@pytest.mark.parametrize("text,expected", [
    ("[[step]\nat = 1", "s.toml:1:"),
    ("name = \n", "s.toml:1:"),
    ("\n\n[[step]]\nat = 1\nfault = 'nope'\ntargets='b1'", "s.toml:3: step 1: fault: unknown fault 'nope'"),
    ("[[step]]\nfault = 'kill'\ntargets='b1'", "step 1: at: missing"),
    ("[[step]]\nat = -1\nfault = 'kill'\ntargets='b1'", "step 1: at: expected a number of seconds"),
    ("[[step]]\nat = 1\nfault='kill'\ntargets='b1'\n[[step]]\nat = 2\nfault = 'kill'\nphase = 'middle'",
     "s.toml:5: step 2: phase: must be 'start' or 'stop'"),
    ("[[step]]\nat = 1\nfault = 'kill'", "step 1: targets: missing"),
    ("[[step]]\nat = 1\nfault = 'kill'\ntargets = 'one-zookeeper'", "step 1: targets: unknown target spec"),
    ("[[step]]\nat = 1\nfault = 'kill'\ntargets = 'halves'", "step 1: targets: 'halves' is a partition spec"),
    ("[[step]]\nat = 1\nfault = 'kill'\ntargets = []", "step 1: targets: a target list must be non-empty"
     .replace("must be non-empty", "must be a non-empty list")),
    ("[[step]]\nat = 1\nfault = 'kill'\ntargets = 'b1'\ncolour = 1", "step 1: colour: unknown key"),
    ("[[step]]\nat = 1\nfault = 'bounce'\ntargets = 'b1'\nduration = 2", "step 1: duration: only for"),
    ("[[step]]\nat = 1\nfault = 'bounce'\nphase = 'stop'", "step 1: phase: bounce is instant"),
    ("[[step]]\nat = 1\nfault = 'latency'\ntargets = 'b1'\nparams = { latency_ms = 'x' }",
     "step 1: params.latency_ms: wrong type str"),
    ("[[step]]\nat = 1\nfault = 'latency'\ntargets = 'b1'\nparams = { rate_kb = 1 }",
     "step 1: params.rate_kb: not a parameter of latency"),
    ("[[step]]\nat = 1\nfault = 'partition'\ntargets = 'b1'\nparams = { grudge = 'moon' }",
     "step 1: params.grudge: must be one of"),
    ("[[step]]\nat = 1\nfault = 'kill'\ntargets = 'b1'\nseed = 1.5", "step 1: seed: expected an integer in [0, "),
    ("colour = 'red'", "unknown top-level key 'colour'"),
    ("step = 3", "'step' must be an array of tables"),
])
def test_parse_errors_are_one_line(text, expected):
    with pytest.raises(ScheduleError) as e:
        parse(text)
    msg = str(e.value)
    assert expected in msg and "\n" not in msg
    assert isinstance(e.value, UsageError)


def test_missing_file(tmp_path):
    with pytest.raises(ScheduleError, match="cannot read schedule"):
        load_schedule(tmp_path / "nope.toml")


def test_packages_are_deterministic_and_healed():
    a = package_schedule(["partition", "kill", "pause", "bounce"], interval=2.0, time_limit=20.0, seed=11)
    b = package_schedule(["partition", "kill", "pause", "bounce"], interval=2.0, time_limit=20.0, seed=11)
    c = package_schedule(["partition", "kill", "pause", "bounce"], interval=2.0, time_limit=20.0, seed=12)
    assert dumps_schedule(a) == dumps_schedule(b) != dumps_schedule(c)
    for f in ("partition", "kill", "pause"):  # flip-flop, ending stopped
        phases = [s.op.phase for s in a.sorted_steps() if s.op.f == f]
        assert phases and phases[-1] == "stop"
        assert all(x != y for x, y in zip(phases, phases[1:], strict=False))
    assert all(s.op.phase == "start" for s in a.steps if s.op.f == "bounce")
    assert max(s.at for s in a.steps) <= 20.0
    # plain data: survives a file round trip
    assert dumps_schedule(parse(dumps_schedule(a))) == dumps_schedule(a)


def test_packages_reject_unknown_faults():
    with pytest.raises(ValueError, match="unknown faults"):
        package_schedule(["meteor"])


@settings(max_examples=50, deadline=None)
@given(schedules(["isolate", "pause", "bounce"], ["b1", "b2", "controller"], time_limit=10.0))
def test_search_schedules_are_well_formed(s):
    starts = [st for st in s.steps if st.op.phase == "start"]
    assert starts
    assert all(0 < st.at <= 10.0 + 1.0 + 5.0 for st in s.steps)
    for st in starts:
        assert st.op.targets or st.op.params.get("spec") == "controller"
    assert dumps_schedule(parse(dumps_schedule(s))) == dumps_schedule(s)


class FakeOutcome:
    def __init__(self, valid, anomalies):
        self.valid = valid
        self.results = {"valid": valid, "anomalies": anomalies}
        self.run_dir = Path("/tmp/fake")


def test_hunt_shrinks_within_budget():
    """A fake system: a broker's isolation longer than 3 s is a liveness failure of that broker."""
    calls: list[Schedule] = []

    def run_one(schedule: Schedule, n: int) -> FakeOutcome:
        calls.append(schedule)
        starts = {}
        for st in schedule.sorted_steps():
            if st.op.phase == "start":
                starts[st.op.targets[0]] = st.at
            elif st.at - starts[st.op.targets[0]] > 3.0:
                return FakeOutcome(False, [{"checker": "registration_liveness", "broker": st.op.targets[0]}])
        return FakeOutcome(True, [])

    res = hunt(run_one, faults=["isolate"], targets=["b1", "b2"], time_limit=10.0, max_runs=60, seed=3,
               progress=lambda m: None)
    assert isinstance(res, HuntResult) and res.found and res.runs == len(calls) <= 60
    assert res.schedule is not None and len(res.schedule.steps) == 2  # one window
    start, stop = res.schedule.sorted_steps()
    assert stop.at - start.at == 3.5  # the shortest failing isolation on the half-second grid
    assert res.signature == ("registration_liveness", start.op.targets[0])


def test_hunt_respects_max_runs():
    n = []

    def run_one(schedule, i):
        n.append(i)
        return FakeOutcome(True, [])

    res = hunt(run_one, faults=["isolate"], targets=["b1"], time_limit=10.0, max_runs=4, progress=lambda m: None)
    assert not res.found and res.runs == len(n) <= 4


def test_windows_to_schedule_specs_and_instants():
    s = windows_to_schedule([Window("bounce", "controller", 1.0, 2.0), Window("pause", "zk1", 0.0, 1.5)])
    ops = [(st.at, st.op.f, st.op.phase, st.op.targets, st.op.params) for st in s.sorted_steps()]
    assert ops == [(1.0, "pause", "start", ["zk1"], {}), (2.0, "bounce", "start", [], {"spec": "controller"}),
                   (2.5, "pause", "stop", ["zk1"], {})]
    assert Step(1.0, FaultOp("pause", "start", ["zk1"], {})) in s.steps


def test_min_fault_bounds_window_durations():
    from nemesis.search import duration_steps

    assert duration_steps(10.0) == (1, 10)
    assert duration_steps(10.0, 4.5) == (9, 10)
    assert duration_steps(10.0, 4.6) == (10, 10)  # rounded up to the grid, never shorter
    with pytest.raises(ValueError, match="longer than half"):
        duration_steps(8.0, 4.5)


@settings(max_examples=30, deadline=None)
@given(schedules(["isolate"], ["b1"], time_limit=10.0, min_fault=3.0))
def test_search_respects_min_fault(s):
    start, stop = s.sorted_steps()[0], None
    for st in s.sorted_steps():
        if st.op.phase == "stop":
            stop = st
            break
    assert stop is not None and stop.at - start.at >= 3.0


def test_hunt_with_min_fault_never_tries_shorter_windows():
    durations = []

    def run_one(schedule, n):
        steps = schedule.sorted_steps()
        durations.extend(b.at - a.at for a, b in zip(steps[::2], steps[1::2], strict=True))
        return FakeOutcome(True, [])

    hunt(run_one, faults=["isolate"], targets=["b1"], time_limit=10.0, max_runs=5, max_windows=1,
         min_fault=4.0, progress=lambda m: None)
    assert durations and min(durations) >= 4.0


def test_confirm_widens_a_borderline_schedule_until_it_reproduces():
    """Fake system: isolation reproduces only when longer than 4 s; the minimal 3.5 s is borderline."""
    from nemesis.search import confirm

    sig = ("registration_liveness", "b1")
    seen = []

    def replay(schedule, n):
        start, stop = schedule.sorted_steps()
        seen.append(stop.at - start.at)
        if stop.at - start.at > 4.0:
            return FakeOutcome(False, [{"checker": sig[0], "broker": sig[1]}])
        return FakeOutcome(True, [])

    conf = confirm(replay, [Window("isolate", "b1", 0.0, 3.5)], sig, widen_step=3.0, attempts=3,
                   progress=lambda m: None)
    assert conf.reproduced and conf.replays == 2 and conf.widened_by == 3.0 and seen == [3.5, 6.5]
    start, stop = conf.schedule.sorted_steps()
    assert stop.at - start.at == 6.5 and conf.windows == [Window("isolate", "b1", 0.0, 6.5)]


def test_confirm_reports_honestly_when_nothing_reproduces():
    from nemesis.search import confirm

    def replay(schedule, n):  # a different anomaly is not the same failure
        return FakeOutcome(False, [{"checker": "registration_liveness", "broker": "b2"}])

    conf = confirm(replay, [Window("isolate", "b1", 0.0, 1.0), Window("bounce", "b2", 0.5, 1.0)],
                   ("registration_liveness", "b1"), widen_step=2.0, attempts=2, progress=lambda m: None)
    assert not conf.reproduced and conf.replays == 2 and conf.widened_by == 0.0
    assert conf.windows == [Window("isolate", "b1", 0.0, 1.0), Window("bounce", "b2", 0.5, 1.0)]
    assert conf.replay_signatures == [("registration_liveness", "b2")]


def test_widen_leaves_instant_faults_alone():
    from nemesis.search import widen

    assert widen([Window("isolate", "b1", 1.0, 1.5), Window("bounce", "b2", 0.0, 1.0)], 3.0) == [
        Window("isolate", "b1", 1.0, 4.5), Window("bounce", "b2", 0.0, 1.0)]
