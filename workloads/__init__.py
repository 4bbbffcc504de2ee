"""Workloads: what clients do to the system under test while nemeses act on it.

``workloads.base`` holds the protocol (``Op``, ``Client``, ``Generator``, ``Workload``) and the
runner that records every operation as invoke → ok/fail/info in the history; each other module
is clients of one kind (``workloads.kafka``: a producer and an admin client of the broker
agents; ``workloads.queue``: the queue workload; ``workloads.register``: ZooKeeper znodes as
registers). A workload module declares how the command line builds it and its own options
(``DEFINITION``, ``workloads.catalog``); ``DEFINITIONS`` is the registry, one line per workload,
and ``WORKLOADS`` (each built with its defaults) is what `harness run --workload` offers.
"""

from __future__ import annotations

from workloads import queue, register
from workloads.base import NONE, Workload
from workloads.catalog import WorkloadDef

DEFINITIONS: dict[str, WorkloadDef] = {d.name: d for d in (
    WorkloadDef(NONE.name, lambda concurrency, rate: NONE),
    queue.DEFINITION,
    register.DEFINITION,
)}

WORKLOADS: dict[str, Workload] = {name: d.make() for name, d in DEFINITIONS.items()}
