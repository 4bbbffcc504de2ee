"""Events: the one record format every source writes (agents, ZK wire proxy, nemesis, observer).

One JSON object per line. Envelope fields are fixed (see docs/events.md); everything a checker
needs beyond them goes in ``value``. Writers flush every line so a crash loses nothing already
written; readers tolerate a torn last line.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from history.kinds import OP_TYPES
from history.validate import read_records


@dataclass(slots=True)
class Event:
    run: str
    src: str
    seq: int
    t_wall: float
    t_mono: int
    type: str
    f: str
    process: str | int | None = None
    value: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """Stable identifier an anomaly cites: ``<src>/<seq>``."""
        return f"{self.src}/{self.seq}"

    def to_json(self, **extra: Any) -> str:
        """The event's line (without its newline); ``extra`` fields go last (a history's ``index``)."""
        # Field by field, not dataclasses.asdict: its deep copy of every value was most of the time a
        # run spent writing its merged history (10,021 events: 1.9 -> 0.09 s, with no re-parse there).
        d = {"run": self.run, "src": self.src, "seq": self.seq, "t_wall": self.t_wall, "t_mono": self.t_mono,
             "type": self.type, "f": self.f, "process": self.process, "value": self.value, "id": self.id, **extra}
        try:  # strict JSON: NaN/Infinity are not JSON, and readers (Spark, jq) reject them
            return json.dumps(d, separators=(",", ":"), default=_json_default, allow_nan=False)
        except ValueError:
            return json.dumps(_finite(d), separators=(",", ":"), default=_json_default, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Event:
        return cls(
            run=d.get("run", ""),
            src=d["src"],
            seq=int(d["seq"]),
            t_wall=float(d["t_wall"]),
            t_mono=int(d.get("t_mono", 0)),
            type=d["type"],
            f=d["f"],
            process=d.get("process"),
            value=d.get("value") or {},
        )


def _finite(o: Any) -> Any:
    """``o`` with every non-finite float as its name ("NaN", "Infinity", "-Infinity"): a reader
    takes the wrong-typed field as null, and the line stays strict JSON."""
    if isinstance(o, float) and not math.isfinite(o):
        return "NaN" if o != o else ("Infinity" if o > 0 else "-Infinity")
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple, set, frozenset)):
        return [_finite(v) for v in o]
    return o


def _json_default(o: Any) -> Any:
    if is_dataclass(o) and not isinstance(o, type):
        return asdict(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, bytes):
        return o.hex()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


class EventWriter:
    """Append-only, thread-safe JSONL writer for one source.

    Every line is flushed as it is written: histories are small (thousands to a few million
    lines) and losing the last second on a crash is worse than the syscall.
    """

    def __init__(self, path: str | os.PathLike[str], src: str, run: str = "") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.src = src
        self.run = run
        self._seq = _last_seq(self.path)  # a restarted process continues the numbering
        self._lock = threading.Lock()
        self._fh = open(self.path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115

    def emit(self, f: str, type: str = "event", process: str | int | None = None, **value: Any) -> Event:
        if type not in OP_TYPES:
            raise ValueError(f"event type must be one of {OP_TYPES}, not {type!r}")
        with self._lock:
            self._seq += 1
            ev = Event(
                run=self.run,
                src=self.src,
                seq=self._seq,
                t_wall=time.time(),
                t_mono=time.monotonic_ns(),
                type=type,
                f=f,
                process=process,
                value=value,
            )
            if not self._fh.closed:
                self._fh.write(ev.to_json() + "\n")
            return ev

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tail(path: str | os.PathLike[str], size: int = 65536) -> bytes:
    """The file's last ``size`` bytes (whole lines but the first, unless the file is shorter)."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - size))
        return fh.read()


def _last_seq(path: Path) -> int:
    try:
        tail = _tail(path).decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(tail):
        try:
            return int(json.loads(line)["seq"])
        except (ValueError, KeyError, TypeError):
            continue
    return 0


def read_events(path: str | os.PathLike[str]) -> Iterator[Event]:
    """Yield events from a source's JSONL file: the envelope validated (``history.validate``), a torn
    final line skipped. Value fields and repeated ids are not judged here: this is how a run's
    per-source files are collected into its history, which must keep every line recorded; the
    check judges the merged history whole (``read_records``) and names what is damaged."""
    for d in read_records(path, values=False, unique=False):
        yield Event.from_dict(d)


def merge(sources: Iterable[Iterable[Event]]) -> list[Event]:
    """Merge per-source event streams into one history ordered by wall time.

    Ties and per-source order are kept: within a source ``seq`` order always wins, so a
    source whose clock stepped backwards never has its own events reordered.
    """
    streams = [sorted(s, key=lambda e: e.seq) for s in sources]
    # Clamp each source's wall clock to be non-decreasing in seq order so the merge is a
    # merge of sorted lists (per-source order preserved exactly).
    keyed: list[tuple[float, int, int, Event]] = []
    for si, stream in enumerate(streams):
        last = float("-inf")
        for ev in stream:
            last = max(last, ev.t_wall)
            keyed.append((last, si, ev.seq, ev))
    keyed.sort(key=lambda k: (k[0], k[1], k[2]))
    return [k[3] for k in keyed]


def write_history(events: Iterable[Event], path: str | os.PathLike[str]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for index, ev in enumerate(events):
            fh.write(ev.to_json(index=index) + "\n")
            n += 1
    return n
