"""Operations as the linearizability checker sees them (one invocation paired with its completion)."""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass
from typing import Any

OPEN = math.inf  # return time of an op whose outcome is unknown: open until the end of the history


class _Unknown:
    """The output of an op whose outcome is unknown (``:info``, timed out, never completed)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


_SHORT = reprlib.Repr()
_SHORT.maxtuple = _SHORT.maxlist = 8
_SHORT.maxstring = _SHORT.maxother = 60


def short(x: Any) -> str:
    """``repr`` cut to a readable length (a final read's output holds the whole partition)."""
    return _SHORT.repr(x)


@dataclass(slots=True)
class Op:
    """One operation. ``call``/``ret`` are positions on one clock; ``ret`` is OPEN when unknown.

    An open op may or may not have taken effect: the search may linearize it anywhere after its
    call, or leave it out. ``output`` is UNKNOWN for open ops.
    """

    index: int
    process: Any
    f: str
    input: Any
    output: Any
    call: float
    ret: float
    line: int = 0
    ret_line: int = 0

    @property
    def open(self) -> bool:
        return self.ret == OPEN

    def describe(self) -> str:
        out = "?" if self.output is UNKNOWN else short(self.output)
        where = f"line {self.line}" + (f"-{self.ret_line}" if self.ret_line else "")
        return f"process {self.process} {self.f} {short(self.input)} -> {out} ({where})"
