"""Pure logic of the cross-run tables, on plain rows: which heal pairs with which registration,
which invoke with which completion, percentiles, and flaky configurations.

Spark runs ``recoveries`` and ``op_latencies`` once per run on its executors (``tables``); the
plain-Python baseline of ``bench/analyze.py`` runs all of it in one process.

Heal → re-registration, per run, in ``t_wall`` order (the nemesis and the agents stamp different
sources, so only their wall clocks compare):

* a **heal** is a nemesis ``info`` event with ``stage = complete`` that ends a fault: ``phase =
  stop``, or an instant fault's start (``instant = true``: bounce, fast_bounce, wipe restart the
  broker at once). A ``heal`` event counts too, except ``reason`` ``setup``/``teardown`` (before the
  brokers first register, after the run's end) and ``noop`` ones (it undid nothing: docs/events.md), which
  neither count nor end the previous heal's window. Heals before the harness's ``run_start`` are left
  out (brokers' first registrations are not re-registrations). A ``heal`` that names the faults it
  ended (``ended``: they were still active) counts as theirs: its fault type is their names, sorted
  and joined with ``+`` (``isolate``, ``kill+pause``), else ``heal``;
* a **registration** is an agent's ``register`` ``ok``;
* a heal pairs with the first registration at or after it and before the next heal of the run;
  its time is the difference. A heal with no registration in that window is counted as
  ``unpaired`` (nothing needed re-registering, or it never happened in time) and has no time.

Client operation latency, per run: invokes pair with completions as ``history.ops`` says (one
operation in flight per source and process, in ``seq`` order); latency from ``t_mono`` (one
source's monotonic clock) when both carry it, else ``t_wall``. An invoke without completion is
``open``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from history.ops import COMPLETIONS, is_client_event, pair_operations

QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True, slots=True)
class Ev:
    """The fields of one history event that the tables read (``stage`` etc. from ``value``)."""

    src: str
    seq: int
    type: str
    f: str
    t_wall: float
    t_mono: int | None = None
    process: str | None = None
    stage: str | None = None
    phase: str | None = None
    instant: bool | None = None
    reason: str | None = None
    noop: bool | None = None
    ended: str | None = None  # a heal's fault type from its ``ended`` (``ended_fault``)


@dataclass(frozen=True, slots=True)
class Recovery:
    fault: str
    heal_id: str  # ``nemesis/<seq>``
    ms: float | None  # None: unpaired


@dataclass(frozen=True, slots=True)
class OpLatency:
    op: str
    outcome: str  # ok / fail / info / open
    ms: float | None  # None: open


def is_heal(e: Ev) -> bool:
    if e.src != "nemesis" or e.type != "info" or e.stage != "complete":
        return False
    if e.f == "heal":
        return e.reason not in ("setup", "teardown") and e.noop is not True
    return e.phase == "stop" or e.instant is True


def ended_fault(ended: object) -> str | None:
    """The fault type of a heal's ``ended`` (a list of fault names): the distinct names sorted and
    joined with ``+``; None when it names none or is not a list of strings."""
    if not isinstance(ended, list) or not all(isinstance(x, str) for x in ended):
        return None
    return "+".join(sorted(set(ended))) or None


def fault_type(e: Ev) -> str:
    return e.ended if e.f == "heal" and e.ended else e.f


def is_registration(e: Ev) -> bool:
    return e.src.startswith("agent:") and e.f == "register" and e.type == "ok"


def is_client(e: Ev) -> bool:
    return is_client_event(e.src, e.type)


def recoveries(events: Iterable[Ev]) -> list[Recovery]:
    """Every heal of one run with its time to the next registration (module docstring)."""
    evs = sorted(events, key=lambda e: (e.t_wall, e.src, e.seq))
    start = next((e.t_wall for e in evs if e.src == "harness" and e.f == "run_start"), -math.inf)
    heals = [e for e in evs if e.t_wall >= start and is_heal(e)]
    regs = [e.t_wall for e in evs if is_registration(e)]
    out = []
    for i, h in enumerate(heals):
        end = heals[i + 1].t_wall if i + 1 < len(heals) else math.inf
        first = next((t for t in regs if h.t_wall <= t < end), None)
        out.append(Recovery(fault_type(h), f"nemesis/{h.seq}", None if first is None else (first - h.t_wall) * 1000.0))
    return out


def op_latencies(events: Iterable[Ev]) -> list[OpLatency]:
    """Every client operation of one run with its latency (module docstring)."""
    clients = sorted((e for e in events if is_client(e)), key=lambda e: (e.src, e.seq))
    out = []
    for inv, done in pair_operations(clients, lambda e: (e.src, e.process), lambda e: e.type):
        if done is None:
            out.append(OpLatency(inv.f, "open", None))
        elif inv.t_mono is not None and done.t_mono is not None:
            out.append(OpLatency(inv.f, done.type, (done.t_mono - inv.t_mono) / 1e6))
        else:
            out.append(OpLatency(inv.f, done.type, (done.t_wall - inv.t_wall) * 1000.0))
    return out


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Exact percentile with linear interpolation between closest ranks (Spark SQL's ``percentile``)."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Summary:
    """Percentiles of the timed values of one group; ``count`` timed values, ``untimed`` the rest."""

    count: int
    untimed: int
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None


def summarize(values: Iterable[float | None]) -> Summary:
    vals = list(values)
    timed = sorted(v for v in vals if v is not None)
    if not timed:
        return Summary(0, len(vals), None, None, None, None)
    p50, p90, p99 = (percentile(timed, q) for q in QUANTILES)
    return Summary(len(timed), len(vals) - len(timed), p50, p90, p99, timed[-1])


@dataclass(frozen=True, slots=True)
class RunVerdict:
    run_id: str
    test: str
    toggles: str
    faults: str
    workload: str
    zk_version: str
    valid: str  # valid / invalid / unknown


@dataclass(frozen=True, slots=True)
class Flaky:
    test: str
    toggles: str
    faults: str
    workload: str
    zk_version: str
    runs: int
    valid: int
    invalid: int
    unknown: int
    run_ids: str  # space-separated, sorted


def flaky(runs: Iterable[RunVerdict]) -> list[Flaky]:
    """Configurations (everything but the seed) whose runs' verdicts differ, most runs first."""
    groups: dict[tuple[str, ...], list[RunVerdict]] = defaultdict(list)
    for r in runs:
        groups[(r.test, r.toggles, r.faults, r.workload, r.zk_version)].append(r)
    out = []
    for key, rs in groups.items():
        counts = {v: sum(1 for r in rs if r.valid == v) for v in ("valid", "invalid", "unknown")}
        if sum(1 for c in counts.values() if c) > 1:
            out.append(Flaky(*key, len(rs), counts["valid"], counts["invalid"], counts["unknown"],
                             " ".join(sorted(r.run_id for r in rs))))
    return sorted(out, key=flaky_order)


def flaky_order(f: Flaky) -> tuple[int, str, str, str, str, str]:
    return (-f.runs, f.test, f.toggles, f.faults, f.workload, f.zk_version)


@dataclass(frozen=True, slots=True)
class Rate:
    checker: str
    toggles: str
    faults: str
    runs: int
    invalid: int
    unknown: int

    @property
    def rate(self) -> float:
        return self.invalid / self.runs if self.runs else 0.0


def rate_order(r: Rate) -> tuple[float, str, str, str]:
    return (-r.rate, r.checker, r.toggles, r.faults)


def anomaly_rates(rows: Iterable[tuple[str, str, str, str, str]]) -> list[Rate]:
    """``(run_dir, checker, toggles, faults, valid)`` rows → runs, invalid and unknown per checker
    × toggle set × fault type (each run counted once per group)."""
    groups: dict[tuple[str, str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for run_dir, checker, toggles, faults, valid in rows:
        g = groups[(checker, toggles, faults)]
        g["runs"].add(run_dir)
        g[valid].add(run_dir)
    return sorted((Rate(*k, len(g["runs"]), len(g["invalid"]), len(g["unknown"])) for k, g in groups.items()),
                  key=rate_order)


@dataclass(frozen=True, slots=True)
class RecoveryRow:
    """Heal → re-registration times (ms) of one fault type."""

    fault: str
    heals: int
    paired: int
    unpaired: int
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    max_ms: float | None


def recovery_table(recs: Iterable[Recovery]) -> list[RecoveryRow]:
    by: dict[str, list[float | None]] = defaultdict(list)
    for r in recs:
        by[r.fault].append(r.ms)
    out = []
    for fault, ms in sorted(by.items()):
        s = summarize(ms)
        out.append(RecoveryRow(fault, len(ms), s.count, s.untimed, s.p50, s.p90, s.p99, s.max))
    return out


@dataclass(frozen=True, slots=True)
class LatencyRow:
    """Client operation latencies (ms) of one workload and op type; ``open``: invokes never completed."""

    workload: str
    op: str
    ops: int
    ok: int
    fail: int
    info: int
    open: int
    p50_ms: float | None
    p90_ms: float | None
    p99_ms: float | None
    max_ms: float | None


def latency_table(ops: Iterable[tuple[str, OpLatency]]) -> list[LatencyRow]:
    """``(workload, op)`` pairs → one row per workload and op type; workload ``none`` is left out."""
    by: dict[tuple[str, str], list[OpLatency]] = defaultdict(list)
    for workload, op in ops:
        if workload != "none":
            by[(workload, op.op)].append(op)
    out = []
    for (workload, name), group in sorted(by.items()):
        s = summarize(o.ms for o in group)
        n = {k: sum(1 for o in group if o.outcome == k) for k in (*COMPLETIONS, "open")}
        out.append(LatencyRow(workload, name, len(group), n["ok"], n["fail"], n["info"], n["open"],
                              s.p50, s.p90, s.p99, s.max))
    return out
