"""Random fault packages (Jepsen's ``nemesis/combined.clj``): faults × interval × targets, seeded.

Each enabled fault is a flip-flop of start/stop ops staggered by a uniform random wait in
[0, 2 × interval) (``gen/stagger``); instant faults (bounce, wipe) fire once per wait. The
packages are merged on one timeline, and every fault still active at ``time_limit`` gets its
final stop there (the package's final generator). ``harness.run`` then heals everything and waits
for recovery (T + margin + 1 s) before the history is collected.

Episodes (``nemesis/episodes.py``: held_bounce, stale_control, slow_register, lost_connect,
empty_rejoin) are packaged like instant faults: each draw plays the episode's fixed-shape steps on a
randomly drawn broker, the next draw waits for it to end, and one that would not end by
``time_limit`` is not started (the first is moved earlier to fit when it can).

Which faults may be packaged, on which target specs, and the default package are rows of
``nemesis.registry.FAULTS`` (``package``, ``package_default``).

Targets stay specs (``params['spec']`` with a per-op ``seed``), resolved when the op runs, so the
schedule is plain data: ``dump_schedule`` writes it and ``harness run --schedule`` replays it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from base.bounds import MAX_SCHEDULE_STEPS, MAX_SECONDS
from nemesis.base import FaultOp
from nemesis.episodes import EPISODES, Cluster, duration
from nemesis.registry import FAULTS, package_defaults, package_targets
from nemesis.schedule import Schedule, Step

DEFAULT_FAULTS = package_defaults()
# what a campaign or `harness run --faults` may name: single faults with package targets, and episodes
PACKAGEABLE: tuple[str, ...] = (*package_targets(), *EPISODES)


def expected_steps(faults: Sequence[str], interval: float, time_limit: float) -> float:
    """About how many steps ``package_schedule`` draws: each fault's waits are uniform in
    [0, 2 × interval), so one step per interval per fault."""
    return len(faults) * time_limit / interval


def package_schedule(faults: Sequence[str] = DEFAULT_FAULTS, interval: float = 5.0, time_limit: float = 30.0,
                     seed: int = 0, targets: dict[str, Sequence[str]] | None = None,
                     warmup: float = 1.0, cluster: Cluster | None = None) -> Schedule:
    """A seeded random schedule: the same arguments always give the same schedule. ``cluster``
    (broker names, T) aims and sizes episodes; they need one."""
    unknown = [f for f in faults if f not in FAULTS and f not in EPISODES]
    if unknown:
        raise ValueError(f"unknown faults {unknown} (known: {', '.join((*FAULTS, *EPISODES))})")
    if not (0 < interval <= MAX_SECONDS and 0 < time_limit <= MAX_SECONDS):  # also refuses nan
        raise ValueError(f"interval and time_limit must be in (0, {MAX_SECONDS:g}] seconds")
    if (n := expected_steps(faults, interval, time_limit)) > MAX_SCHEDULE_STEPS:
        raise ValueError(f"{len(faults)} fault(s) every {interval:g}s for {time_limit:g}s is about {n:.0f} steps, "
                         f"over the limit of {MAX_SCHEDULE_STEPS}: a longer interval or a shorter time limit")
    rng = random.Random(seed)
    steps: list[Step] = []
    for f in faults:
        if f in EPISODES:
            if cluster is None or not cluster.brokers:
                raise ValueError(f"episode {f} needs the cluster's brokers")
            steps += _episodes(f, rng, interval, time_limit, cluster)
            continue
        choices = list((targets or {}).get(f) or FAULTS[f].package)
        if not choices:
            raise ValueError(f"fault {f} has no package targets (its FaultSpec's package) and none were given")
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


def _episodes(name: str, rng: random.Random, interval: float, time_limit: float, cluster: Cluster) -> list[Step]:
    ep, length = EPISODES[name], duration(name, cluster)
    t = ep.earliest + rng.uniform(0, 2 * interval)
    if t + length > time_limit:  # the first draw is moved earlier when the run is long enough for one
        t = max(ep.earliest, time_limit - length)
    out: list[Step] = []
    while t + length <= time_limit:
        out += [Step(round(t + dt, 3), op) for dt, op in ep.build(rng, cluster)]
        t += length + rng.uniform(0, 2 * interval)
    return out
