"""Bounds on every number a user hands the harness, in a flag or a file: finite, and small enough
that planning a run or a campaign stays finite and quick (a schedule of at most
``MAX_SCHEDULE_STEPS`` steps, a campaign of at most ``MAX_PLAN_RUNS`` runs).

One place for them so that `harness run --interval`, a campaign's ``interval`` and a schedule's
``at`` refuse the same values the same way: ``finite_float``/``bounded_int`` are the argparse
types of every numeric flag (a bad value is argparse's one-line error, exit 254), ``number_error``
judges a value read from TOML. The limits are documented in the README (exit codes).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any

MAX_SECONDS = 86_400.0  # a run's time limit, a fault window, a timeout: at most a day
MAX_BUDGET_S = 30 * 86_400.0  # a campaign's wall-clock budget, a check server's idle timeout
MIN_INTERVAL_S = 0.1  # a packaged fault's mean interval: shorter ones cannot be injected anyway
MAX_MS = 3_600_000  # a margin, a skew, a fault parameter in milliseconds: an hour
MAX_SCHEDULE_STEPS = 10_000  # steps of one schedule (a file's, or a package's expected count)
MAX_PLAN_RUNS = 10_000  # runs of one campaign's plan
MAX_SEED = 2**63 - 1
MAX_INT32 = 2**31 - 1  # what ZooKeeper's and the agents' Java-style ints hold
MAX_NODES = 64  # nodes of one inventory: the link graph grows with its square
MAX_CONNECT_S = 600.0  # an SSH connect timeout
MAX_CONCURRENCY = 1000
MAX_RATE = 1_000_000.0


def shown(v: Any, limit: int = 40) -> str:
    """``repr(v)`` cut to ``limit`` characters: an error stays one readable line whatever was given."""
    try:
        r = repr(v)
    except ValueError:  # an int past Python's digit limit for str()
        return "an integer of thousands of digits"
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _what(lo: float, hi: float, integer: bool, lo_open: bool, unit: str) -> str:
    kind = "an integer" if integer else "a number"
    return f"{kind}{' of ' + unit if unit else ''} in {'(' if lo_open else '['}{_plain(lo)}, {_plain(hi)}]"


def _plain(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def number_error(v: Any, lo: float, hi: float, *, integer: bool = False, lo_open: bool = False,
                 unit: str = "") -> str | None:
    """Why ``v`` (a value read from a file) is not a finite number in [lo, hi] (``(lo, hi]`` with
    ``lo_open``; an integer with ``integer``), or None."""
    what = _what(lo, hi, integer, lo_open, unit)
    if isinstance(v, bool) or not isinstance(v, int if integer else int | float):
        return f"expected {what}, got {type(v).__name__} {shown(v)}"
    if (isinstance(v, float) and not math.isfinite(v)) or v < lo or v > hi or (lo_open and v == lo):
        return f"expected {what}, got {shown(v)}"
    return None


@dataclass(frozen=True)
class finite_float:  # noqa: N801 - used as an argparse type, named like ``float``
    """argparse type: a finite float in [lo, hi] (``(lo, hi]`` with ``lo_open``); nan, inf and
    anything outside are the flag's one-line error."""

    lo: float
    hi: float
    lo_open: bool = False
    unit: str = "seconds"

    def __call__(self, text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not self.accepts(v):
            what = _what(self.lo, self.hi, False, self.lo_open, self.unit)
            raise argparse.ArgumentTypeError(f"expected {what}, got {shown(text)}")
        return v

    def accepts(self, v: Any) -> bool:
        return number_error(v, self.lo, self.hi, lo_open=self.lo_open) is None


@dataclass(frozen=True)
class bounded_int:  # noqa: N801 - used as an argparse type, named like ``int``
    """argparse type: an integer in [lo, hi]; anything else is the flag's one-line error."""

    lo: int
    hi: int
    unit: str = ""

    def __call__(self, text: str) -> int:
        v: Any = None
        t = text.strip()
        if len(t) <= 40:  # longer is out of every bound: never convert thousands of digits
            try:
                v = int(t)
            except ValueError:
                v = None
        if v is None or not self.accepts(v):
            what = _what(self.lo, self.hi, True, False, self.unit)
            raise argparse.ArgumentTypeError(f"expected {what}, got {shown(text)}")
        return int(v)

    def accepts(self, v: Any) -> bool:
        return number_error(v, self.lo, self.hi, integer=True) is None


def names_list(text: str) -> str:
    """argparse type of a comma list of names (``--faults partition,kill``): every name non-empty,
    so ``--faults ,`` is refused instead of meaning the default; returned normalized."""
    names = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in names):
        raise argparse.ArgumentTypeError(f"expected a comma list of names (e.g. partition,kill), got {shown(text)}")
    return ",".join(names)
