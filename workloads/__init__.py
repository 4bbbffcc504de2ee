"""Workloads: what clients do to the system under test while nemeses act on it.

``workloads.base`` holds the protocol (``Op``, ``Client``, ``Generator``, ``Workload``) and the
runner that records every operation as invoke → ok/fail/info in the history; each other module
is clients of one kind (``workloads.kafka``: a producer and an admin client of the broker
agents; ``workloads.queue``: the queue workload). ``WORKLOADS`` is what `harness run --workload` offers.
"""

from __future__ import annotations

from collections.abc import Callable

from workloads.base import NONE, Workload
from workloads.queue import queue_workload

WORKLOADS: dict[str, Workload] = {NONE.name: NONE, "queue": queue_workload()}

# Workloads the command line can shape: (concurrency, rate, acks) -> Workload.
BUILDERS: dict[str, Callable[[int, float | None, str], Workload]] = {
    "queue": lambda concurrency, rate, acks: queue_workload(concurrency, rate, acks),
}
