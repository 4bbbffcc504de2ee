"""The one reading of a history: which lines are events, decided once, for every consumer.

A history is judged by several readers: the plain-Python reader (``checkers.rows``), the Spark
loader (``checkers.events_df``, which runs this over each file before Spark reads it), the report
and ``harness repro``. When each applied its own rules, a damaged line (a numeric ``src``, a
string ``t_mono``, a byte-order mark) was an error to one and data to another, and damage became a
verdict. Here is the only definition (docs/events.md, "Envelope"):

* a line is UTF-8 strict JSON (no ``NaN``/``Infinity``, no number a 64-bit double cannot hold, no
  byte-order mark, no lone surrogate, no carriage return inside it): one object;
* its envelope has the contract's types: ``src``, ``type`` (an op type), ``f`` non-empty strings,
  ``seq`` a positive 64-bit integer, ``t_wall`` a finite number, and when present ``t_mono`` a 64-bit
  integer, ``id`` the string ``<src>/<seq>``, ``index`` a non-negative 64-bit integer, ``run`` a
  string, ``process`` a string, 64-bit integer or null, ``value`` an object or null;
* each value field a kind declares (``history.kinds``) is null or of its declared type: an ``int``
  outside 64 bits is damage, not a number to wrap or drop. A ``float`` field may hold the writer's
  own spelling of a non-finite float (``"NaN"``, ``"Infinity"``, ``"-Infinity"``,
  ``history.events._finite``): read as null;
* an id occurs once per file: a duplicated line is a duplicate, not a second event.

Value fields are optional in the contract, but a checker that reads a field of a kind may *need* it
(``Need``): a pass given needs records each event that lacks a needed field (``Scan.lacking``), so
that the checker can say ``unknown`` citing the event instead of reading the gap as data
(``checkers.project``). A needed field must be present; ``null`` is a value (a read of nothing, an
unfenced write).

A torn last line (no newline, not JSON: a crash mid-write) is no event and no damage either: it is
dropped. Every other bad line is damage, reported as ``FILE:LINE: not a valid event: reason``.
"""

from __future__ import annotations

import json
import math
import os
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from history.kinds import KINDS, OP_TYPES, Need

INT64 = (-(1 << 63), (1 << 63) - 1)
NON_FINITE = frozenset(("NaN", "Infinity", "-Infinity"))  # how a writer spells a non-finite float


class HistoryFormatError(ValueError):
    """A history line that is not a valid event; the message names file and line."""


class Torn(ValueError):
    """A line that is not JSON at all (or not UTF-8): as the last line without a newline, a torn write."""


@dataclass(frozen=True, slots=True)
class Damage:
    line: int
    reason: str

    def where(self, path: str | os.PathLike[str]) -> str:
        return f"{path}:{self.line}: not a valid event: {self.reason}"


@dataclass(frozen=True, slots=True)
class Lacking:
    """An event without a field some checker needs: which needs it fails, and the fields."""

    line: int
    id: str
    kind: str
    type: str
    fields: tuple[str, ...]
    needs: frozenset[Need]

    def cite(self) -> str:
        return f"{self.id} ({self.kind} {self.type}, line {self.line}) lacks {', '.join(self.fields)}"


@dataclass
class Scan:
    """What a pass over one file found: events read, damaged lines (the first ``KEEP``), a torn tail,
    events lacking a needed field (the first ``KEEP_LACKING`` of each ``Need``: a checker whose need
    fails only late in a long history is still told)."""

    path: str
    events: int = 0
    damaged: list[Damage] = field(default_factory=list)
    damaged_total: int = 0
    torn: bool = False
    lacking: list[Lacking] = field(default_factory=list)
    _lacking_per_need: dict[Need, int] = field(default_factory=dict, repr=False)

    KEEP = 20
    KEEP_LACKING = 20

    def add(self, d: Damage) -> None:
        self.damaged_total += 1
        if len(self.damaged) < self.KEEP:
            self.damaged.append(d)

    def lack(self, line: int, record: dict[str, Any], needs: Sequence[Need]) -> None:
        failed = {n: m for n in needs if (m := n.missing(record))}
        kept = self._lacking_per_need
        if not any(kept.get(n, 0) < self.KEEP_LACKING for n in failed):
            return
        for n in failed:
            kept[n] = kept.get(n, 0) + 1
        fields = tuple(sorted({f for m in failed.values() for f in m}))
        self.lacking.append(Lacking(line, f"{record['src']}/{record['seq']}", record["f"], record["type"], fields,
                                    frozenset(failed)))

    def problems(self) -> list[str]:
        return [d.where(self.path) for d in self.damaged]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"number {text[:40]} does not fit a 64-bit float")
    return x


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)
_JSON_SPACE = b" \t\r\n"


def _is_int64(x: Any) -> bool:
    return type(x) is int and INT64[0] <= x <= INT64[1]


def _show(x: Any) -> str:
    s = json.dumps(x)
    return s if len(s) <= 40 else s[:37] + "..."


# --- value field types ------------------------------------------------------------------------------
def _int(x: Any) -> bool:
    return _is_int64(x)


def _float(x: Any) -> bool:
    if type(x) is float:
        return True
    if type(x) is int:
        return abs(x) <= 1 << 1023  # a JSON integer read as a double must stay finite
    return x in NON_FINITE if type(x) is str else False


_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "int": (_int, "a 64-bit integer"),
    "float": (_float, "a number"),
    "bool": (lambda x: type(x) is bool, "true or false"),
    "str": (lambda x: type(x) is str, "a string"),
    "json": (lambda x: True, "any JSON value"),
    "ints": (lambda x: type(x) is list and all(_is_int64(e) for e in x), "an array of 64-bit integers"),
    "strs": (lambda x: type(x) is list and all(type(e) is str for e in x), "an array of strings"),
    # an entry of a map may be null (``based_on_fetch`` of a replica the leader has no fetch from):
    # Spark's MAP reads it as null, as the plain reader does
    "int_map": (lambda x: type(x) is dict and all(e is None or _is_int64(e) for e in x.values()),
                "an object of 64-bit integers (or nulls)"),
    "str_map": (lambda x: type(x) is dict and all(e is None or type(e) is str for e in x.values()),
                "an object of strings (or nulls)"),
}
# kind -> {field: (check, what it must be)}, with the ``json`` fields (anything goes) left out
_FIELDS: dict[str, dict[str, tuple[Callable[[Any], bool], str]]] = {
    name: {f: _CHECKS[t] for f, t in kind.fields.items() if t != "json"} for name, kind in KINDS.items()
}


def _surrogate(x: Any) -> bool:
    """Whether a string anywhere in ``x`` holds a lone surrogate (an escape like ``\\ud800``)."""
    if type(x) is str:
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if type(x) is dict:
        return any(_surrogate(k) or _surrogate(v) for k, v in x.items())
    if type(x) is list:
        return any(_surrogate(v) for v in x)
    return False


# --- one line ---------------------------------------------------------------------------------------
def decode(raw: bytes | str) -> Any:
    """A line's JSON value; ``Torn`` when it is not UTF-8 strict JSON (what a torn write leaves)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        text = text.strip(" \t\r\n")
        if text.startswith("\ufeff"):
            raise Torn("the line starts with a byte-order mark")
        if "\r" in text:
            raise Torn("a carriage return inside the line (readers split lines there)")
        d = _DECODER.decode(text)
    except Torn:
        raise
    except ValueError as e:  # json.JSONDecodeError, UnicodeDecodeError and _finite_float's ValueError
        raise Torn(str(e)) from None
    if ("\\ud" in text or "\\uD" in text) and _surrogate(d):
        raise ValueError("a string holds a lone surrogate (not Unicode)")
    return d


def check_record(d: Any, *, values: bool = True) -> dict[str, Any]:
    """``d`` if it is an event by the contract (``values``: its declared value fields too);
    ``ValueError`` saying why not."""
    if type(d) is not dict:
        raise ValueError("not a JSON object")
    missing = [k for k in ("src", "seq", "t_wall", "type", "f") if d.get(k) is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    src, seq, f = d["src"], d["seq"], d["f"]
    if type(src) is not str or not src:
        raise ValueError(f"src must be a non-empty string, not {_show(src)}")
    if not _is_int64(seq) or seq < 1:
        raise ValueError(f"seq must be a positive 64-bit integer, not {_show(seq)}")
    t_wall = d["t_wall"]
    if type(t_wall) is not float and (type(t_wall) is not int or abs(t_wall) > 1 << 1023):
        raise ValueError(f"t_wall must be a number, not {_show(t_wall)}")
    if d["type"] not in OP_TYPES:
        raise ValueError(f"type must be one of {', '.join(OP_TYPES)}, not {_show(d['type'])}")
    if type(f) is not str or not f:
        raise ValueError(f"f must be a non-empty string, not {_show(f)}")
    if "t_mono" in d and not _is_int64(d["t_mono"]):
        raise ValueError(f"t_mono must be a 64-bit integer, not {_show(d['t_mono'])}")
    ev_id = d.get("id")
    if ev_id is not None and ev_id != f"{src}/{seq}":
        raise ValueError(f"id must be {_show(f'{src}/{seq}')} (<src>/<seq>), not {_show(ev_id)}")
    index = d.get("index")
    if index is not None and (not _is_int64(index) or index < 0):
        raise ValueError(f"index must be a non-negative 64-bit integer, not {_show(index)}")
    run = d.get("run")
    if run is not None and type(run) is not str:
        raise ValueError(f"run must be a string, not {_show(run)}")
    process = d.get("process")
    if process is not None and type(process) is not str and not _is_int64(process):
        raise ValueError(f"process must be a string, a 64-bit integer or null, not {_show(process)}")
    value = d.get("value")
    if value is None:
        return d
    if type(value) is not dict:
        raise ValueError(f"value must be an object, not {_show(value)}")
    if values:
        declared = _FIELDS.get(f)
        if declared:
            for name, x in value.items():
                spec = declared.get(name)
                if spec is not None and x is not None and not spec[0](x):
                    raise ValueError(f"value.{name} of a {f} event must be {spec[1]}, not {_show(x)}")
    return d


def parse_record(line: bytes | str, *, values: bool = True) -> dict[str, Any]:
    """One history line as a dict, if it is an event (``ValueError`` says why not): the one
    definition of a valid line."""
    return check_record(decode(line), values=values)


# --- one file ---------------------------------------------------------------------------------------
class _Ids:
    """The ids seen in one file, to find a duplicate and the line of its first copy. A source's
    events are in ``seq`` order in its own file and in a merged history, so each source keeps a
    sorted array (16 bytes an event, not a set's hundred); an out-of-order seq goes to a dict."""

    def __init__(self) -> None:
        self._sorted: dict[str, tuple[array[int], array[int]]] = {}
        self._other: dict[tuple[str, int], int] = {}

    def first(self, src: str, seq: int, line: int) -> int | None:
        """The line ``src/seq`` was first seen on, or None (and it is recorded as seen on ``line``)."""
        seqs, lines = self._sorted.setdefault(src, (array("q"), array("q")))
        if not seqs or seq > seqs[-1]:
            seqs.append(seq)
            lines.append(line)
            return None
        i = bisect_left(seqs, seq)
        if i < len(seqs) and seqs[i] == seq:
            return lines[i]
        key = (src, seq)
        if key in self._other:
            return self._other[key]
        self._other[key] = line
        return None


def scan_lines(path: str | os.PathLike[str], scan: Scan | None = None, *, skip: bool = False, values: bool = True,
               unique: bool = True, keep: BinaryIO | None = None,
               needs: Sequence[Need] = ()) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, record)`` for each event of the file, streaming, counted in ``scan``. A
    torn last line is dropped (``scan.torn``). A damaged line raises ``HistoryFormatError`` naming
    file and line, or with ``skip`` is left out and counted (``Scan.add``): never read as data.
    ``keep`` receives every event's line as it is in the file (a copy without the damaged lines).
    ``values=False`` checks the envelope only, and ``unique=False`` lets ids repeat: the collection of
    a run's per-source files, which must keep every line it has, to be judged when checked.
    ``needs``: each event that lacks a needed field is recorded in ``scan.lacking`` (and yielded)."""
    scan = Scan(str(path)) if scan is None else scan
    ids = _Ids() if unique else None
    by_kind: dict[str, list[Need]] = {}
    for n in needs:
        by_kind.setdefault(n.kind, []).append(n)
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip(_JSON_SPACE):
                continue
            try:
                d = decode(raw)
            except Torn as e:
                if not raw.endswith(b"\n"):  # the last line, cut short by a crash mid-write
                    scan.torn = True
                    return
                damage = Damage(lineno, str(e))
            except ValueError as e:
                damage = Damage(lineno, str(e))
            else:
                try:
                    record = check_record(d, values=values)
                except ValueError as e:
                    damage = Damage(lineno, str(e))
                else:
                    first = None if ids is None else ids.first(record["src"], record["seq"], lineno)
                    if first is None:
                        scan.events += 1
                        kind_needs = by_kind.get(record["f"])
                        if kind_needs:
                            scan.lack(lineno, record, kind_needs)
                        if keep is not None:
                            keep.write(raw if raw.endswith(b"\n") else raw + b"\n")
                        yield lineno, record
                        continue
                    damage = Damage(lineno, f"duplicate event id {record['src']}/{record['seq']}, "
                                            f"first at line {first}")
            if not skip:
                raise HistoryFormatError(damage.where(path))
            scan.add(damage)


def scan_file(path: str | os.PathLike[str], *, values: bool = True, unique: bool = True) -> Scan:
    """One pass over a file: how many events, which lines are damaged, whether its tail is torn."""
    scan = Scan(str(path))
    for _ in scan_lines(path, scan, skip=True, values=values, unique=unique):
        pass
    return scan


def read_records(path: str | os.PathLike[str], *, values: bool = True, unique: bool = True) -> Iterator[dict[str, Any]]:
    """Yield each event of a JSONL history as a dict (``scan_lines``): a torn final line is skipped;
    any other bad line raises ``HistoryFormatError`` naming ``file:line``."""
    for _, record in scan_lines(path, values=values, unique=unique):
        yield record


def has_torn_tail(path: str | os.PathLike[str]) -> bool:
    """Whether the file ends with a torn line: one ``read_records`` skips. Reads only the tail."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        fh.seek(max(0, size - 65536))
        tail = fh.read()
    if b"\n" not in tail and size > len(tail):  # a last line longer than the window
        tail = Path(path).read_bytes()
    if not tail or tail.endswith(b"\n"):
        return False
    last = tail.rsplit(b"\n", 1)[-1]
    if not last.strip(_JSON_SPACE):
        return False
    try:
        decode(last)
    except Torn:
        return True
    except ValueError:
        return False
    return False
