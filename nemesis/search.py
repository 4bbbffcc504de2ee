"""Search for a failing schedule with Hypothesis, and shrink it (``harness hunt``).

A schedule is drawn as a list of fault *windows* (fault, target, start, duration) on a half-second
grid, so Hypothesis shrinks it toward fewer windows, earlier and shorter faults (never shorter
than ``min_fault``), the first fault in ``faults`` and the first target. Every example is a real ``harness.run.execute`` run; the
first invalid verdict fixes the failure signature (checker name + broker of its first anomaly) and
only runs with that same signature count as failures while shrinking, so the shrink cannot slip
to a different bug. Runs are capped at ``max_runs`` (generation + shrinking); past the cap new
examples count as passing, so Hypothesis keeps the smallest failure it has already seen.

Shrinking walks to the edge of the failure, so the minimal schedule is often borderline (an
isolation just about as long as the session timeout). :func:`confirm` replays it and, when it does
not reproduce, widens every window step by step until it does, so what gets written reproduces.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st

from nemesis.base import FaultOp
from nemesis.registry import FAULTS, hunt_defaults
from nemesis.schedule import Schedule, Step
from nemesis.targets import DYNAMIC, WHOLE_GRUDGES, _count_role

HUNT_FAULTS = hunt_defaults()  # the rows of nemesis.registry.FAULTS with a ``hunt`` place, in that order
GRID = 0.5


@dataclass(frozen=True)
class Window:
    fault: str
    target: str
    start: float  # seconds after the warm-up
    duration: float


def duration_steps(time_limit: float, min_fault: float = GRID) -> tuple[int, int]:
    """Grid steps (lowest, highest) a fault window may last: at least ``min_fault``, at most half the run."""
    half = max(1, int(time_limit / 2 / GRID))
    low = max(1, math.ceil(round(min_fault / GRID, 6)))
    if low > half:
        raise ValueError(f"min_fault {min_fault:g}s is longer than half the time limit ({half * GRID:g}s)")
    return low, half


def window_strategy(faults: Sequence[str], targets: Sequence[str], time_limit: float,
                    min_fault: float = GRID) -> st.SearchStrategy[Window]:
    low, half = duration_steps(time_limit, min_fault)
    return st.builds(
        Window,
        fault=st.sampled_from(list(faults)),
        target=st.sampled_from(list(targets)),
        start=st.integers(0, half).map(lambda k: k * GRID),
        duration=st.integers(low, half).map(lambda k: k * GRID),
    )


def window_lists(faults: Sequence[str], targets: Sequence[str], time_limit: float, max_windows: int = 3,
                 min_fault: float = GRID) -> st.SearchStrategy[list[Window]]:
    """Hypothesis strategy over fault windows (shrinks toward one short early fault on the first target)."""
    return st.lists(window_strategy(faults, targets, time_limit, min_fault), min_size=1, max_size=max_windows)


def schedules(faults: Sequence[str], targets: Sequence[str], time_limit: float, max_windows: int = 3,
              warmup: float = 1.0, min_fault: float = GRID) -> st.SearchStrategy[Schedule]:
    """Hypothesis strategy over schedules: :func:`window_lists` laid out by :func:`windows_to_schedule`."""
    return window_lists(faults, targets, time_limit, max_windows, min_fault).map(
        lambda w: windows_to_schedule(w, warmup))


def windows_to_schedule(windows: Sequence[Window], warmup: float = 1.0, name: str = "hunt") -> Schedule:
    steps: list[Step] = []
    for w in windows:
        at = round(warmup + w.start, 3)
        targets = [] if is_spec(w.target) else [w.target]
        params: dict[str, Any] = {} if targets else {"spec": w.target}
        steps.append(Step(at, FaultOp(w.fault, "start", list(targets), dict(params))))
        if not FAULTS[w.fault].instant:
            steps.append(Step(round(at + w.duration, 3), FaultOp(w.fault, "stop", list(targets), {})))
    steps.sort(key=lambda s: s.at)
    return Schedule(name=name, steps=steps)


def is_spec(target: str) -> bool:
    return target in DYNAMIC or target in WHOLE_GRUDGES or _count_role(target) is not None


def schedule_key(schedule: Schedule) -> str:
    return json.dumps([[s.at, s.op.f, s.op.phase, s.op.targets, s.op.params] for s in schedule.sorted_steps()],
                      sort_keys=True)


def signatures(results: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(a.get("checker"), a.get("broker")) for a in results.get("anomalies", [])]


def describe(schedule: Schedule) -> str:
    return "; ".join(f"{s.at:g}s {s.op.f} {s.op.phase} {','.join(s.op.targets) or s.op.params.get('spec', '*')}"
                     for s in schedule.sorted_steps())


@dataclass
class HuntResult:
    found: bool
    runs: int
    schedule: Schedule | None = None
    signature: tuple[str, Any] | None = None
    run_dir: Path | None = None
    windows: list[Window] | None = None
    first_schedule: Schedule | None = None
    out: Path | None = None
    replay_signatures: list[tuple[str, Any]] | None = None
    replay_dir: Path | None = None
    log: list[str] = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        return bool(self.replay_signatures) and self.signature in (self.replay_signatures or [])


class _Found(Exception):  # noqa: N818 - Hypothesis's failure signal, not an error
    pass


def hunt(run_one: Callable[[Schedule, int], Any], *, faults: Sequence[str] = HUNT_FAULTS,
         targets: Sequence[str], time_limit: float, max_runs: int = 10, seed: int = 0,
         progress: Callable[[str], None] = print, max_windows: int = 3, min_fault: float = GRID) -> HuntResult:
    """Generate and shrink schedules; ``run_one(schedule, n)`` runs one and returns a RunOutcome-like
    object with ``valid``, ``results`` and ``run_dir``."""
    cache: dict[str, bool] = {}
    res = HuntResult(found=False, runs=0)
    t0 = time.monotonic()

    def run_cached(windows: list[Window]) -> bool:
        """True = this schedule shows the failure we hunt."""
        schedule = windows_to_schedule(windows)
        key = schedule_key(schedule)
        if key in cache:
            return cache[key]
        if res.runs >= max_runs:
            cache[key] = False  # over budget: treated as passing, consistently
            return False
        res.runs += 1
        phase = "shrink" if res.found else "search"
        progress(f"hunt {phase} run {res.runs}/{max_runs} ({time.monotonic() - t0:.0f}s): {describe(schedule)}")
        outcome = run_one(schedule, res.runs)
        sigs = signatures(outcome.results)
        failed = outcome.valid is False and bool(sigs)
        if failed and res.signature is None:
            res.signature = sigs[0]
            res.first_schedule = schedule
        hit = failed and res.signature in sigs
        verdict = {True: "valid", False: "invalid"}.get(outcome.valid, "unknown")
        progress(f"  → {verdict}{' ' + ', '.join(f'{c}/broker {b}' for c, b in sigs) if sigs else ''}"
                 f"{'  (target failure)' if hit else ''}")
        if hit:
            res.found = True
            res.schedule, res.windows, res.run_dir = schedule, list(windows), outcome.run_dir
        cache[key] = hit
        return hit

    @hyp_seed(seed)
    @settings(max_examples=max_runs, phases=[Phase.generate, Phase.shrink], database=None, deadline=None,
              verbosity=Verbosity.quiet, suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(window_lists(faults, targets, time_limit, max_windows, min_fault))
    def prop(windows: list[Window]) -> None:
        if run_cached(windows):
            raise _Found()

    try:
        prop()
    except _Found:
        pass
    return res


def widen(windows: Sequence[Window], extra: float) -> list[Window]:
    """The same windows, each lasting ``extra`` seconds longer (instant faults have no length)."""
    return [w if FAULTS[w.fault].instant else replace(w, duration=round(w.duration + extra, 3)) for w in windows]


@dataclass
class Confirmation:
    reproduced: bool
    schedule: Schedule
    windows: list[Window]
    widened_by: float  # seconds added to every window (0: the minimal schedule itself)
    replay_signatures: list[tuple[str, Any]]
    replay_dir: Path | None
    replays: int


def confirm(replay: Callable[[Schedule, int], Any], windows: Sequence[Window], signature: tuple[str, Any], *,
            widen_step: float, attempts: int = 3, progress: Callable[[str], None] = print) -> Confirmation:
    """Replay the minimal windows; while the signature does not come back, widen every window by
    ``widen_step`` more and replay again, at most ``attempts`` replays in all. Honest either way:
    the result says whether the last replay reproduced and by how much it was widened."""
    if attempts < 1:
        raise ValueError("attempts must be >= 1")
    sigs: list[tuple[str, Any]] = []
    run_dir = None
    for i in range(attempts):
        extra = round(i * widen_step, 3)
        current = widen(windows, extra)
        schedule = windows_to_schedule(current)
        outcome = replay(schedule, i + 1)
        sigs, run_dir = signatures(outcome.results), outcome.run_dir
        same = outcome.valid is False and signature in sigs
        label = "minimal schedule" if i == 0 else f"widened by {extra:g}s"
        progress(f"replay {i + 1}/{attempts} ({label}): {describe(schedule)}\n"
                 f"  → {'same anomaly' if same else 'not reproduced'} "
                 f"({', '.join(f'{c}/broker {b}' for c, b in sigs) or 'valid'}) {run_dir}")
        if same:
            return Confirmation(True, schedule, current, extra, sigs, run_dir, i + 1)
    return Confirmation(False, windows_to_schedule(windows), list(windows), 0.0, sigs, run_dir, attempts)


def hunt_targets(broker_names: Sequence[str], zk_names: Sequence[str], faults: Sequence[str]) -> list[str]:
    """Explicit brokers first (the simplest shrink target), then ZooKeeper nodes and dynamic specs."""
    out = list(broker_names)
    if any(FAULTS[f].hunt_zk for f in faults):
        out += list(zk_names) + ["controller", "zk-leader"]
    return out


def replace_schedule_name(schedule: Schedule, name: str) -> Schedule:
    return replace(schedule, name=name)
