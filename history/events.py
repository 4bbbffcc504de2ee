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

OP_TYPES = ("invoke", "ok", "fail", "info", "event")


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


class HistoryFormatError(ValueError):
    """A history line that is not a valid event; the message names file and line."""


# Every line carries these; the rest of the envelope (run, t_mono, process, id, index) is optional.
ENVELOPE_REQUIRED = ("src", "seq", "t_wall", "type", "f")


def parse_record(line: str) -> dict[str, Any]:
    """One history line as a dict, if its envelope is valid (``ValueError`` says why not). This is
    the one definition of a valid line: ``read_records`` and the Spark loader both use it."""
    d = json.loads(line)
    if not isinstance(d, dict):
        raise ValueError("not a JSON object")
    missing = [k for k in ENVELOPE_REQUIRED if d.get(k) is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    if not isinstance(d["seq"], int) or isinstance(d["seq"], bool):
        raise ValueError(f"seq must be an integer, not {d['seq']!r}")
    if not isinstance(d["t_wall"], int | float) or isinstance(d["t_wall"], bool):
        raise ValueError(f"t_wall must be a number, not {d['t_wall']!r}")
    if not all(isinstance(d[k], str) for k in ("src", "type", "f")):
        raise ValueError("src, type and f must be strings")
    if not isinstance(d.get("t_mono", 0), int) or not isinstance(d.get("value") or {}, dict):
        raise ValueError("t_mono must be an integer and value an object")
    return d


def read_records(path: str | os.PathLike[str], *, tolerate_torn_tail: bool = True) -> Iterator[dict[str, Any]]:
    """Yield each line of a JSONL history as a dict (``parse_record``). A torn final line (a crash
    mid-write: no newline, not a valid event) is skipped; any other bad line raises
    ``HistoryFormatError`` naming ``file:line``."""
    p = Path(path)
    with open(p, "rb") as fh:  # decoded line by line: bytes that are not UTF-8 are that line's error
        lines = fh.readlines()
    for lineno, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8").strip()
            if not line:
                continue
            record = parse_record(line)
        except ValueError as e:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
            if tolerate_torn_tail and lineno == len(lines) and not lines[-1].endswith(b"\n"):
                return
            raise HistoryFormatError(f"{p}:{lineno}: not a valid event: {e}") from e
        yield record


def read_events(path: str | os.PathLike[str], *, tolerate_torn_tail: bool = True) -> Iterator[Event]:
    """Yield events from a JSONL file (``read_records``): a torn final line is skipped."""
    for d in read_records(path, tolerate_torn_tail=tolerate_torn_tail):
        yield Event.from_dict(d)


def has_torn_tail(path: str | os.PathLike[str]) -> bool:
    """Whether the file ends with a torn line: one ``read_records`` skips. Reads only the tail."""
    tail = _tail(path)
    if b"\n" not in tail and os.path.getsize(path) > len(tail):  # a last line longer than the window
        tail = Path(path).read_bytes()
    if not tail or tail.endswith(b"\n"):
        return False
    last = tail.rsplit(b"\n", 1)[-1].decode("utf-8", "replace").strip()
    try:
        parse_record(last)
    except ValueError:
        return bool(last)
    return False


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
