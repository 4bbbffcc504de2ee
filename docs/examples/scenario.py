"""Worked example (docs/architecture.md, "Adding a scenario"): KAFKA-7235's missed bounce in three
steps. One module under scenarios/ that declares ``SCENARIO``: ``scenarios.scenarios()`` finds it,
and `harness repro --list`, `--help` and the tests take it from there (a new JIRA also gets its
line in ``scenarios/fixes.py``). tests/unit/test_worked_examples.py builds both variants' tests
and plays the story against a recording context.
"""

from __future__ import annotations

from harness.context import RunContext
from scenarios.base import Scenario

B = 2


class HeldBounce(Scenario):
    def play(self, ctx: RunContext) -> None:
        def registered(epoch_above: int) -> object:
            return ctx.wait_agent_event(B, lambda e: e.f == "register" and e.type == "ok"
                                        and e.value.get("epoch", 0) > epoch_above, 2 * ctx.T + 5, "B's registration")

        first = registered(0)
        ctx.nemesis("hold_controller", "start", spec="controller")
        ctx.step("1. the controller's event thread is held")
        ctx.nemesis("bounce", "start", [ctx.node(B)])
        registered(first.value["epoch"] if first else 0)
        ctx.step(f"2. broker {B} bounced and registered again under a new epoch")
        ctx.nemesis("hold_controller", "stop")
        ctx.step("3. released: without broker epochs the controller sees the same broker and misses the bounce")
        ctx.sleep(2.0)


SCENARIO = HeldBounce(
    id="EXAMPLE-held-bounce", title="a bounce behind a held controller is missed", jira="KAFKA-7235",
    story=__doc__ or "", checkers=["bounce_handling"], bug_toggles={"broker_epoch_check": "off"},
    fixed_toggles={"broker_epoch_check": "on"}, brokers=[1, 2, 3], needs_spark=True)
