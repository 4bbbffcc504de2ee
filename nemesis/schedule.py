"""Schedules: fault ops at times relative to the start of the run phase.

A schedule is plain data (``Schedule``: steps of ``at`` seconds + ``FaultOp``) so it can be written
to a file, replayed, generated at random or searched and shrunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nemesis.base import FaultOp


@dataclass(slots=True)
class Step:
    at: float  # seconds after the run phase starts
    op: FaultOp


@dataclass(slots=True)
class Schedule:
    name: str
    steps: list[Step] = field(default_factory=list)

    @property
    def end(self) -> float:
        return max((s.at for s in self.steps), default=0.0)

    def sorted_steps(self) -> list[Step]:
        return sorted(self.steps, key=lambda s: s.at)


def isolate_schedule(target: str, start_s: float, duration_s: float) -> Schedule:
    """The walking skeleton's fault: cut one broker from all its ZooKeeper proxies, then heal."""
    return Schedule(
        name=f"isolate-{target}",
        steps=[
            Step(start_s, FaultOp("isolate", "start", [target])),
            Step(start_s + duration_s, FaultOp("isolate", "stop", [target])),
        ],
    )
