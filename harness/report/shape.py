"""Pure data shaping for the run report: plain event dicts (history.jsonl lines) → bands, lanes,
client operations, throughput and anomaly contexts. No I/O, no plotting: unit-tested on lists.

Times are seconds since the run's origin (``origin``: ``run_start``, else the first event).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from history.ops import is_client_event, pair_operations
from nemesis.registry import instant_faults

Event = Mapping[str, Any]

_EVENT_ID = re.compile(r"^[A-Za-z][\w:.-]*/\d+$")


@dataclass(frozen=True)
class Band:
    """A fault active from ``start`` to ``end`` (seconds) on ``targets``."""

    f: str
    targets: tuple[str, ...]
    start: float
    end: float
    start_id: str
    end_id: str | None  # None: never stopped, runs to the end of the history
    error: bool = False  # the start op ended in an error

    @property
    def label(self) -> str:
        return f"{self.f} {','.join(self.targets)}".strip()


@dataclass(frozen=True)
class Instant:
    """A fault with one op (bounce, wipe…) or a heal: a line at ``t``."""

    f: str
    targets: tuple[str, ...]
    t: float
    event_id: str
    detail: str = ""
    error: bool = False

    @property
    def label(self) -> str:
        text = f"{self.f} {','.join(self.targets)}".strip()
        return f"{text} ({self.detail})" if self.detail else text


@dataclass(frozen=True)
class Segment:
    """A lane segment: ``state`` from ``start`` to ``end`` on one broker lane."""

    lane: str
    state: str
    start: float
    end: float
    event_id: str
    text: str = ""


@dataclass(frozen=True)
class Mark:
    """A point on a lane (a registration, a deregistration): ``label`` at ``t``."""

    lane: str
    t: float
    label: str
    event_id: str
    epoch: int | None = None


@dataclass
class Lanes:
    segments: list[Segment] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    epochs: dict[int, list[tuple[float, int, str]]] = field(default_factory=dict)  # broker → (t, epoch, id)

    @property
    def lanes(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.segments:
            seen.setdefault(s.lane, None)
        for m in self.marks:
            seen.setdefault(m.lane, None)
        return sorted(seen, key=_lane_key)


@dataclass(frozen=True)
class ClientOp:
    """An invoke and its completion: ``type`` ok/fail/info, or ``pending`` (no completion)."""

    process: Any
    f: str
    type: str
    start: float
    end: float | None
    invoke_id: str
    complete_id: str | None

    @property
    def latency_ms(self) -> float | None:
        return None if self.end is None else (self.end - self.start) * 1000.0


def event_id(e: Event) -> str:
    return str(e.get("id") or f"{e.get('src')}/{e.get('seq')}")


def origin(events: Sequence[Event]) -> float:
    for e in events:
        if e.get("src") == "harness" and e.get("f") == "run_start":
            return float(e["t_wall"])
    return min((float(e["t_wall"]) for e in events), default=0.0)


def span(events: Sequence[Event], t0: float) -> float:
    """The end of the history in seconds since ``t0`` (0 for an empty history)."""
    return max((float(e["t_wall"]) - t0 for e in events), default=0.0)


def _targets(value: Mapping[str, Any]) -> tuple[str, ...]:
    t = value.get("targets") or ()
    return tuple(str(x) for x in (t if isinstance(t, list | tuple) else [t]))


def nemesis_bands(events: Sequence[Event], t0: float) -> tuple[list[Band], list[Instant]]:
    """Pair each fault's ``start`` with its ``stop`` on the same targets: a band from the start's
    invoke to the stop's completion. A start never stopped ends at a later heal's completion, else at
    the end of the history. Instant faults (and heals) are lines at their completion."""
    end_of_history = span(events, t0)
    instant = instant_faults()  # a single (start) op: a line, not a band (an op may also say ``instant``)
    open_: dict[tuple[str, tuple[str, ...]], tuple[float, str, bool]] = {}
    bands: list[Band] = []
    instants: list[Instant] = []
    stop_seen: dict[tuple[str, tuple[str, ...]], tuple[float, str]] = {}
    for e in events:
        if e.get("src") != "nemesis":
            continue
        v = e.get("value") or {}
        f, stage, phase = str(e.get("f")), v.get("stage"), v.get("phase", "start")
        t, eid, key = float(e["t_wall"]) - t0, event_id(e), (str(e.get("f")), _targets(v))
        if f == "heal":
            if stage in ("complete", "error"):
                for k, (s, sid, err) in list(open_.items()):
                    bands.append(Band(k[0], k[1], s, t, sid, eid, err))
                    del open_[k]
                instants.append(Instant("heal", (), t, eid, str(v.get("reason") or ""), stage == "error"))
            continue
        if f in instant or v.get("instant"):
            if stage in ("complete", "error"):
                instants.append(Instant(f, key[1], t, eid, "", stage == "error"))
            continue
        if phase == "start":
            if stage == "invoke":
                open_[key] = (t, eid, False)
            elif stage == "error" and key in open_:
                s, sid, _ = open_[key]
                open_[key] = (s, sid, True)
        elif phase == "stop":
            if stage == "invoke":
                stop_seen[key] = (t, eid)
            elif stage in ("complete", "error") and key in open_:
                s, sid, err = open_.pop(key)
                bands.append(Band(key[0], key[1], s, t, sid, eid, err))
    for k, (s, sid, err) in open_.items():
        end = stop_seen.get(k, (end_of_history, None))
        bands.append(Band(k[0], k[1], s, max(end[0], s), sid, end[1], err))
    bands.sort(key=lambda b: (b.start, b.f))
    return bands, instants


def _broker(e: Event) -> int | None:
    v = e.get("value") or {}
    b = v.get("broker_id", e.get("process"))
    try:
        return int(b)
    except (TypeError, ValueError):
        return None


def _lane_key(lane: str) -> tuple[int, str]:
    m = re.match(r"b(\d+)", lane)
    return (int(m.group(1)) if m else 1 << 30, lane)


def broker_lanes(events: Sequence[Event], t0: float) -> Lanes:
    """Per broker two lanes: ``b<N> session`` (the agent's view: process down, ZooKeeper session
    connected/suspended/lost) and ``b<N> znode`` (the observer's view of ``/brokers/ids/N``:
    registered with an epoch, or absent). Registrations are marks with their epoch."""
    end = span(events, t0)
    out = Lanes()
    current: dict[str, tuple[str, float, str, str]] = {}  # lane → (state, since, id, text)

    def switch(lane: str, state: str, t: float, eid: str, text: str = "") -> None:
        prev = current.get(lane)
        if prev is not None:
            if prev[0] == state and prev[3] == text:
                return
            out.segments.append(Segment(lane, prev[0], prev[1], t, prev[2], prev[3]))
        current[lane] = (state, t, eid, text)

    for e in events:
        src, f, v = str(e.get("src")), e.get("f"), e.get("value") or {}
        t, eid = float(e["t_wall"]) - t0, event_id(e)
        b = _broker(e)
        if b is None:
            continue
        if src.startswith("agent:"):
            lane = f"b{b} session"
            if f == "agent_start":
                switch(lane, "started", t, eid, f"pid {v.get('pid')}")
            elif f in ("agent_stop", "startup_failed"):
                switch(lane, "down", t, eid, str(v.get("reason") or f))
            elif f == "session" and v.get("state"):
                switch(lane, str(v["state"]), t, eid, _session_text(v.get("session_id")))
            elif f == "register" and e.get("type") == "ok":
                epoch = v.get("epoch")
                out.marks.append(Mark(lane, t, f"registered epoch {epoch}", eid, epoch))
                if isinstance(epoch, int):
                    out.epochs.setdefault(b, []).append((t, epoch, eid))
            elif f == "deregistered":
                out.marks.append(Mark(lane, t, "deregistered", eid, v.get("epoch")))
        elif src == "observer" and f == "broker_znode" and not v.get("final"):
            lane = f"b{b} znode"
            if v.get("exists"):
                switch(lane, "registered", t, eid, f"epoch {v.get('czxid')}")
            else:
                switch(lane, "absent", t, eid)
    for lane, (state, since, eid, text) in current.items():
        out.segments.append(Segment(lane, state, since, max(end, since), eid, text))
    out.segments.sort(key=lambda s: (_lane_key(s.lane), s.start))
    return out


def _session_text(sid: Any) -> str:
    return f"session 0x{sid:x}" if isinstance(sid, int) else ""


def client_ops(events: Sequence[Event], t0: float) -> list[ClientOp]:
    """Every client operation (``history.ops`` pairs them); one that never completed is ``pending``."""
    clients = (e for e in events if is_client_event(str(e.get("src") or ""), str(e.get("type"))))
    ops: list[ClientOp] = []
    for inv, done in pair_operations(clients, lambda e: (str(e.get("src")), e.get("process")), lambda e: e.get("type")):
        start = float(inv["t_wall"]) - t0
        if done is None:
            ops.append(ClientOp(inv.get("process"), str(inv.get("f")), "pending", start, None, event_id(inv), None))
        else:
            ops.append(ClientOp(inv.get("process"), str(inv.get("f")), str(done.get("type")), start,
                                max(float(done["t_wall"]) - t0, start), event_id(inv), event_id(done)))
    ops.sort(key=lambda o: o.start)
    return ops


def throughput(ops: Iterable[ClientOp], bucket_s: float = 1.0) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """Completions per second by (operation, completion type) in ``bucket_s`` buckets, as (bucket
    midpoint, ops/s); buckets with no completions are left out."""
    counts: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for op in ops:
        if op.end is not None:
            counts[(op.f, op.type)][int(op.end // bucket_s)] += 1
    return {k: [((b + 0.5) * bucket_s, n / bucket_s) for b, n in sorted(v.items())]
            for k, v in sorted(counts.items())}


def cited_ids(anomaly: Any) -> list[str]:
    """Every event id an anomaly cites: ``event_ids`` and any string that looks like ``src/seq``,
    in order of appearance, without repeats."""
    found: dict[str, None] = {}

    def walk(x: Any) -> None:
        if isinstance(x, str):
            if _EVENT_ID.match(x):
                found.setdefault(x, None)
        elif isinstance(x, Mapping):
            for v in x.values():
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    walk(anomaly)
    return list(found)


@dataclass(frozen=True)
class Context:
    """A cited event with ``before``/``after`` neighbours from the merged history."""

    cited: str
    events: list[Event]  # the window, the cited event included
    found: bool


def event_contexts(anomaly: Any, events: Sequence[Event], around: int = 3) -> list[Context]:
    index = {event_id(e): i for i, e in enumerate(events)}
    out = []
    for cid in cited_ids(anomaly):
        i = index.get(cid)
        if i is None:
            out.append(Context(cid, [], False))
        else:
            out.append(Context(cid, list(events[max(0, i - around): i + around + 1]), True))
    return out
