"""Random fault packages (Jepsen's ``nemesis/combined.clj``): faults × interval × targets, seeded.

Each enabled fault is a flip-flop of start/stop ops staggered by a uniform random wait in
[0, 2 × interval) (``gen/stagger``); instant faults (bounce, wipe) fire once per wait. The
packages are merged on one timeline, and every fault still active at ``time_limit`` gets its
final stop there (the package's final generator). ``harness.run`` then heals everything and waits
for recovery (T + margin + 1 s) before the history is collected.

Targets stay specs (``params['spec']`` with a per-op ``seed``), resolved when the op runs, so the
schedule is plain data: ``dump_schedule`` writes it and ``harness run --schedule`` replays it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from nemesis.base import FaultOp
from nemesis.registry import FAULTS
from nemesis.schedule import Schedule, Step

DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {
    "isolate": ("one-broker", "controller"),
    "partition": ("one", "one-broker", "zk-leader", "halves", "majorities-ring", "bridge"),
    "net_partition": ("zk-leader", "one-zk", "halves", "majorities-ring"),
    "latency": ("one-broker", "minority-zk"),
    "bandwidth": ("one-broker",),
    "reset_peer": ("one-broker", "one-zk"),
    "slow_close": ("one-broker",),
    "kill": ("one-zk", "minority-zk", "zk-leader", "one-broker", "controller"),
    "pause": ("one-zk", "zk-leader", "one-broker", "controller"),
    "shutdown": ("one-broker", "controller", "one-zk"),
    "bounce": ("one-broker", "controller"),
    "fast_bounce": ("one-broker", "controller", "zk-leader"),
    "wipe": ("one-broker",),
}
DEFAULT_FAULTS = ("partition", "kill", "pause")


def package_schedule(faults: Sequence[str] = DEFAULT_FAULTS, interval: float = 5.0, time_limit: float = 30.0,
                     seed: int = 0, targets: dict[str, Sequence[str]] | None = None,
                     warmup: float = 1.0) -> Schedule:
    """A seeded random schedule: the same arguments always give the same schedule."""
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        raise ValueError(f"unknown faults {unknown} (known: {', '.join(FAULTS)})")
    if interval <= 0 or time_limit <= 0:
        raise ValueError("interval and time_limit must be > 0")
    rng = random.Random(seed)
    steps: list[Step] = []
    for f in faults:
        choices = list((targets or {}).get(f) or DEFAULT_TARGETS[f])
        instant = FAULTS[f].instant
        t = warmup + rng.uniform(0, 2 * interval)
        active = False
        while t < time_limit:
            if instant or not active:
                params = {"spec": rng.choice(choices), "seed": rng.randrange(2**16)}
                steps.append(Step(round(t, 3), FaultOp(f, "start", [], params)))
                active = not instant
            else:
                steps.append(Step(round(t, 3), FaultOp(f, "stop", [], {})))
                active = False
            t += rng.uniform(0, 2 * interval)
        if active:
            steps.append(Step(round(time_limit, 3), FaultOp(f, "stop", [], {})))
    steps.sort(key=lambda s: (s.at, s.op.f))
    return Schedule(name=f"package-{'+'.join(faults)}-s{seed}", steps=steps)
