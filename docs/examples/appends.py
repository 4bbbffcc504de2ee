"""Worked example (docs/architecture.md, "Adding a workload"): ``appends``, every process sending
unique values to one topic that the workload creates first (without the ``create_topic`` setup op,
every send would retry until its deadline against a topic that does not exist and end ``fail``).
One module (this workload, with its own options) plus one registry line (``appends.DEFINITION,`` in
``workloads.DEFINITIONS``). tests/unit/test_worked_examples.py registers it, builds it from
`harness run --workload appends --topic t` and draws its ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from workloads.base import Op, OpCounter, Workload
from workloads.catalog import Option, WorkloadDef
from workloads.queue import QueueClient


@dataclass
class Appends:
    """A generator: no I/O, no clock; called from every client thread at once, so its state (each
    process's op count, the throttle) is an ``OpCounter`` behind one lock. Process p's k-th op sends
    "p<p>-<k>"."""

    topic: str
    ops: OpCounter

    def next_op(self, process: int, elapsed: float) -> Op | None:
        k = self.ops.take(process, elapsed)
        if isinstance(k, Op):  # the throttle's sleep
            return k
        return Op("send", {"topic": self.topic, "partition": 0, "value": f"p{process}-{k}", "acks": "all"})


def appends(concurrency: int, rate: float | None, topic: str = "appends") -> Workload:
    return Workload("appends", QueueClient(), Appends(topic, OpCounter(concurrency, rate)), concurrency,
                    checkers=("queue_lost_write",),
                    setup=(Op("create_topic", {"topic": topic, "partitions": 1}),),  # the topic, before any send
                    final=(Op("final_read", {"topic": topic, "partition": 0}),))  # what queue_lost_write reads


DEFINITION = WorkloadDef("appends", appends, concurrency=4,
                         options=(Option("topic", "appends", "the appends workload's topic"),))
