"""A run's phases (setup, play, recover, collect, check): timing them, naming the one a run is in,
and letting SIGTERM unwind a run like Ctrl-C. Used by the run engine and campaigns."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Lap:
    """Times the run's phases into ``phases`` (``lap("setup")`` ends the setup phase)."""

    def __init__(self, phases: dict[str, float]) -> None:
        self.phases = phases
        self._mark = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.phases[name] = round(now - self._mark, 2)
        self._mark = now


PHASES = ("setup", "play", "recover", "collect", "check")


def current_phase(done: dict[str, float]) -> str:
    """The phase a run is in, from the phases it has finished."""
    return next((p for p in PHASES if p not in done), "check")


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so every ``finally`` tears down what it started."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
