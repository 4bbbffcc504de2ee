"""Worked example (docs/architecture.md, "Adding a fault"): a fault of a new kind, ``gc_pause``,
as a stop-the-world pause of the targets' processes. One module (this nemesis) plus one registry
row (``ROW``, a line of ``nemesis.registry.FAULTS``) and, for a new kind, one line in
``nemesis.nemeses.default_nemeses``. tests/unit/test_worked_examples.py registers it and runs it
through the schedule parser, the packages, the nemesis runner and the report.
"""

from __future__ import annotations

import time
from typing import Any

from nemesis.ops import FaultOp
from nemesis.registry import NUM, FaultSpec, faults_of

# the registry row: one line in nemesis/registry.py's FAULTS
ROW = FaultSpec("gc_pause", "gc", instant=True, params={"pause_ms": NUM}, role="broker",
                package=("one-broker", "controller"), help="SIGSTOP the targets for pause_ms, then SIGCONT")


class GcPauseNemesis:
    """A pause as long as a long GC's: SIGSTOP, ``pause_ms``, SIGCONT, as one instant op."""

    def __init__(self) -> None:
        self.cluster: Any = None

    @property
    def fs(self) -> frozenset[str]:  # the registry's rows of this kind
        return faults_of("gc")

    def setup(self, cluster: Any) -> None:
        self.cluster = cluster

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        components = self.cluster.components()
        for t in op.targets:
            components[t].pause()
        time.sleep(float(op.params.get("pause_ms", 2000)) / 1000)
        for t in op.targets:
            components[t].resume()
        return {"instant": True}

    def heal(self) -> dict[str, Any]:
        return {}  # an instant fault leaves nothing to undo

    def teardown(self) -> None:
        pass
