"""A run's phases (setup, play, recover, collect, check): timing them, naming the one a run is in,
when the check's Spark session starts, and letting SIGTERM unwind a run like Ctrl-C. Used by the
run engine and campaigns."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.spec import TestSpec

# Starting the Spark JVM and warming it up (~18 s, CPU-bound) while the cluster comes up slows the
# setup on a small machine: `make run`'s setup took 8.1-8.8 s that way and 5.0-5.1 s with Spark
# started as the play began, whose 20 s still covered it (check 12.4-12.9 s -> 11.3-12.0 s).
SPARK_START_S = 15.0


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


def play_covers_spark_start(spec: TestSpec) -> bool:
    """Whether the check's Spark session can start when the play begins, rather than before the
    cluster comes up: a timed play (no script) at least ``SPARK_START_S`` long covers its start."""
    return spec.script is None and spec.time_limit >= SPARK_START_S


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
