"""Workloads: what clients do to the system under test while nemeses act on it.

``workloads.base`` holds the protocol (``Op``, ``Client``, ``Generator``, ``Workload``) and the
runner that records every operation as invoke → ok/fail/info in the history; each other module
is clients of one kind (``workloads.kafka``: a producer and an admin client of the broker
agents). ``WORKLOADS`` is what `harness run --workload` offers.
"""

from __future__ import annotations

from workloads.base import NONE, Workload

WORKLOADS: dict[str, Workload] = {NONE.name: NONE}
