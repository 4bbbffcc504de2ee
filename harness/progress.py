"""The live progress line of a run: elapsed time, active faults, client ops/s and ok/fail/info.

On a terminal it is one line that rich's status spinner rewrites in place. When stdout is not a
terminal (CI, a pipe, a log file) rich's status prints nothing at all, so the same line is printed
as plain text, at most once every ``every`` seconds, to show progress without flooding the log.

``progress_line`` and ``OpsRate`` are pure (the caller passes the time in); ``LiveLine`` is the
only part that writes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

PLAIN_EVERY_S = 5.0  # a non-terminal gets one progress line this often
RATE_WINDOW_S = 5.0  # ops/s is measured over this trailing window, so a stall shows within seconds


@dataclass
class OpsRate:
    """Completions per second over a trailing window: fed ``(t, total completions)`` samples.

    An average since the start would hide a stall (a partition that blocks every client) behind
    the ops done before it; the trailing window shows it drop to 0."""

    window_s: float = RATE_WINDOW_S
    samples: deque[tuple[float, int]] = field(default_factory=deque)

    def add(self, t: float, total: int) -> float:
        """Record a sample and return the current rate."""
        self.samples.append((t, total))
        while len(self.samples) > 2 and t - self.samples[1][0] >= self.window_s:
            self.samples.popleft()
        t0, n0 = self.samples[0]
        return (total - n0) / (t - t0) if t > t0 else 0.0


def progress_line(elapsed: float, limit: float, active: list[str], counts: dict[str, int] | None,
                  ops_per_s: float | None) -> str:
    """``run 12.3/20s · active faults: isolate n1 · 310 ops/s · ok 3021 fail 12 info 3``; the
    client part only once the workload has completed an operation."""
    line = f"run {elapsed:5.1f}/{limit:.0f}s · active faults: {', '.join(active) or 'none'}"
    if counts and sum(counts.values()):
        line += (f" · {ops_per_s or 0.0:.0f} ops/s · ok {counts.get('ok', 0)} fail {counts.get('fail', 0)}"
                 f" info {counts.get('info', 0)}")
    return line


class LiveLine:
    """One progress line: rewritten in place on a terminal, printed every ``every`` seconds otherwise."""

    def __init__(self, console: Console, clock: Callable[[], float], every: float = PLAIN_EVERY_S) -> None:
        self.console = console
        self.clock = clock
        self.every = every
        self._status: Any = None
        self._last_plain: float | None = None

    @contextmanager
    def running(self, first: str) -> Iterator[LiveLine]:
        if self.console.is_terminal:
            with self.console.status(first) as status:
                self._status = status
                try:
                    yield self
                finally:
                    self._status = None
        else:
            yield self

    def update(self, line: str) -> None:
        if self._status is not None:
            self._status.update(line)
            return
        now = self.clock()
        if self._last_plain is None or now - self._last_plain >= self.every:
            self._last_plain = now
            # markup off: fault names and node specs may contain brackets; one log line, never wrapped
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)
