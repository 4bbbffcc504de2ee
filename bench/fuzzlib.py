"""The fuzz bench's bookkeeping (bench/fuzz.py): a surface's ``Tally`` of outcomes and ``judge``,
which runs one input and files it as accepted, cleanly refused, a crash, a hang or a wrong
acceptance. Runners (``bench/fuzz_*.py``) import this, not bench/fuzz.py (that one runs as
``__main__``)."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

OUTCOMES = ("accepted", "refused", "crash", "hang", "wrong")
HANG_S = 5.0  # an in-process input that takes longer than this is counted as a hang


class WrongAcceptance(AssertionError):
    """Raised by a judge: the input is known invalid (or was misread) and was accepted."""


@dataclass
class Tally:
    """Outcome counts for one surface, and the first few failures to show."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def inputs(self) -> int:
        return sum(self.counts.values())

    @property
    def failures(self) -> int:
        return self.counts["crash"] + self.counts["hang"] + self.counts["wrong"]

    def add(self, outcome: str, example: str | None = None) -> None:
        self.counts[outcome] += 1
        if example is not None and outcome in ("crash", "hang", "wrong") and len(self.examples) < 5:
            self.examples.append(f"{outcome}: {example[:300]}")

    def judge(self, what: str, fn: Callable[[], str]) -> str:
        """Run one input: ``fn`` returns "accepted" or "refused", or raises WrongAcceptance; any
        other exception is a crash, and a run past HANG_S a hang. ``what`` names the input."""
        t0 = time.monotonic()
        try:
            outcome = fn()
            if outcome not in ("accepted", "refused"):
                raise AssertionError(f"judge returned {outcome!r}")
        except WrongAcceptance as e:
            self.add("wrong", f"{what}: {e}")
            return "wrong"
        except Exception as e:  # noqa: BLE001 - that is what a crash is
            self.add("crash", f"{what}: {type(e).__name__}: {e} @ {traceback.format_exc(limit=-2)!r}")
            return "crash"
        if time.monotonic() - t0 > HANG_S:
            self.add("hang", f"{what}: took {time.monotonic() - t0:.1f}s")
            return "hang"
        self.add(outcome)
        return outcome
