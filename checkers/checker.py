"""The checker protocol for project histories, Jepsen-sized: a name, what it reads, check → result.

* ``Checker.name``: the key of its result and the ``checker`` of every anomaly it reports.
* ``Checker.reads``: ``{event kind: (value fields...)}``, every kind and field in the event
  contract (``history.kinds``). The loader gives a checker rows of those kinds only, with the
  envelope columns (``ENVELOPE``) and one ``v_<field>`` column per field read: what a checker
  does not declare, it does not get.
* ``Checker.check(events)`` → ``{history path: Result}`` (``checkers.result``): never valid when
  it could not decide (that is ``"unknown"``, with the reason in ``stats``).
* ``Checker.local``: it can also check plain rows (``events.rows``), without Spark.
* ``needs`` (optional, ``needs_of``): the fields it cannot decide without (``history.Need``). An
  event lacking one is never read as data: the checker's verdict on that history is ``unknown``,
  citing the event (``checkers.project``), whatever its plan made of the gap.
* ``lane`` (optional, ``lane_of``; default the checker's class): checkers of one lane run one after
  the other, in report order; on run-sized input on Spark the lanes run at once, on threads
  (``checkers.project``). Checkers that share a pass (``Events.shared``) name one lane, so none
  waits on another's pass.

``Events`` is one check call's input: the histories' rows of the kinds the selected checkers read,
either as a Spark DataFrame (``frame``) or as dicts with the same keys (``rows``). Checkers of one
family share a pass over them (the Spark plans collected as one job, the per-broker sweep):
``Events.shared`` runs that pass once per call, so each ``check`` stays self-contained.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from checkers.result import Result
from history.kinds import KINDS, TYPES, WRITTEN, Need

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Reads = Mapping[str, tuple[str, ...]]  # event kind -> value fields read

# What every row has, whatever a checker reads: ``hist`` is the history path as given, ``id`` the
# ``<src>/<seq>`` anomalies cite, ``idx`` the merged-history position (``index``; null if absent),
# ``node`` the broker id of an ``agent:<N>`` source (else null).
ENVELOPE = ("hist", "src", "seq", "id", "idx", "t_wall", "type", "f", "process", "node")


def needs_of(checker: Checker) -> tuple[Need, ...]:
    """What a checker cannot decide without: each field it reads that every writer writes
    (``history.kinds.WRITTEN``), and its own ``needs`` (fields only some writers write)."""
    derived = (n.within(checker.reads[n.kind]) for n in WRITTEN if n.kind in checker.reads)
    return tuple(dict.fromkeys([*(n for n in derived if n is not None), *getattr(checker, "needs", ())]))


def lane_of(checker: Checker) -> str:
    """The lane a checker runs in: its ``lane``, else its class's name."""
    return getattr(checker, "lane", None) or type(checker).__name__


@runtime_checkable
class Checker(Protocol):
    name: str
    reads: Reads
    local: bool

    def check(self, events: Events) -> dict[str, Result]: ...


@dataclass
class Events:
    paths: tuple[str, ...]
    selected: tuple[Checker, ...]
    frame: DataFrame | None = None  # on Spark
    rows: list[dict[str, Any]] | None = None  # locally
    small: bool = True  # run-sized: the frame is one in-memory partition (``checkers.plans``)
    _memo: dict[Any, Future[Any]] = field(default_factory=dict, repr=False)
    _memo_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def once(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` the first time ``key`` is asked for; its value (or what it raised) every
        time. Lanes on threads (``lane_of``) asking at once: one computes, the others wait for it."""
        with self._memo_lock:
            done = self._memo.get(key)
            mine = done is None
            if mine:
                done = self._memo[key] = Future()
        assert done is not None
        if mine:
            try:
                done.set_result(compute())
            except BaseException as e:
                done.set_exception(e)
        return done.result()

    def shared(self, me: Checker, family: type, compute: Callable[[tuple[Any, ...]], Any]) -> Any:
        """``compute(group)`` once for the selected checkers of ``me``'s family (instances of
        ``family``, ``me`` included even when not selected): the pass they share."""
        group = tuple(c for c in self.selected if isinstance(c, family))
        group += () if any(c.name == me.name for c in group) else (me,)
        return self.once((family.__name__, *(c.name for c in group)), lambda: compute(group))

    def rows_of(self, reads: Reads) -> list[dict[str, Any]]:
        """The local rows of the kinds ``reads`` names."""
        assert self.rows is not None, "no local rows: this call runs on Spark"
        kinds = set(reads)
        return [r for r in self.rows if r["f"] in kinds]


def union(reads: Iterable[Reads]) -> dict[str, tuple[str, ...]]:
    """The kinds and fields several checkers read together (fields sorted, no repeats)."""
    out: dict[str, set[str]] = {}
    for r in reads:
        for kind, fields in r.items():
            out.setdefault(kind, set()).update(fields)
    return {k: tuple(sorted(v)) for k, v in sorted(out.items())}


def field_types(reads: Reads) -> dict[str, str]:
    """``{field: Spark type}`` of every value field read. A field read from two kinds that declare
    it with different types cannot be one column: that is an error in the checker, said here."""
    out: dict[str, tuple[str, str]] = {}
    for kind, fields in reads.items():
        k = KINDS[kind]
        for f in fields:
            t = TYPES[k.fields[f]]
            if f in out and out[f][1] != t:
                raise ValueError(f"field {f!r} is {out[f][1]} in {out[f][0]} but {t} in {kind}: read one of them")
            out.setdefault(f, (kind, t))
    return {f: t for f, (_, t) in sorted(out.items())}


def columns(reads: Reads) -> tuple[str, ...]:
    """The columns a checker with these reads sees."""
    return (*ENVELOPE, *(f"v_{f}" for f in field_types(reads)))
