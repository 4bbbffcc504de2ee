"""Workloads: what clients do to the system under test while nemeses act on it.

``workloads.base`` holds the protocol (``Op``, ``Client``, ``Generator``, ``Workload``) and the
runner that records every operation as invoke → ok/fail/info in the history; each other module
is clients of one kind (``workloads.kafka``: a producer and an admin client of the broker
agents; ``workloads.queue``: the queue workload; ``workloads.register``: ZooKeeper znodes as
registers). ``WORKLOADS`` is what `harness run --workload` offers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from workloads import queue, register
from workloads.base import NONE, Workload

WORKLOADS: dict[str, Workload] = {NONE.name: NONE, "queue": queue.queue_workload(),
                                  "register": register.register_workload()}

# Workloads the command line can shape: (concurrency or None for the workload's default, rate,
# {option: value} of the workload flags: acks, reads) -> Workload.
BUILDERS: dict[str, Callable[[int | None, float | None, Mapping[str, str]], Workload]] = {
    "queue": lambda concurrency, rate, o: queue.queue_workload(concurrency or queue.DEFAULT_CONCURRENCY, rate,
                                                               o.get("acks", "all")),
    "register": lambda concurrency, rate, o: register.register_workload(
        concurrency or register.DEFAULT_CONCURRENCY, rate, o.get("reads", "sync")),
}
