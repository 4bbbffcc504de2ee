"""What a test's script sees (``TestSpec.script``, a JIRA scenario's ``play``): the run's nemesis and
named clients to act through, ZooKeeper and the agents' events to observe, and the story's own
record: its steps, and the gaps where a race it needs went the other way (``gap``)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from base.wait import wait_until
from harness.spec import TestSpec
from history import EventWriter
from nemesis.base import FaultOp, NemesisRunner
from workloads.base import Op, OpRecorder


class RunContext:
    """What a test's script sees: it acts only through the nemesis runner (``nemesis``, ``heal``)
    and named clients (``invoke``), and observes (``zk``, ``agent_events``, ``wait``)."""

    def __init__(self, engine: Any, spec: TestSpec, cluster: Any, runner: NemesisRunner,
                 writers: dict[str, EventWriter], run_id: str, run_dir: Path, brokers: list[int]) -> None:
        self.engine = engine  # harness.engine.Engine, which builds this (typed Any: no import cycle)
        self.spec = spec
        self.cluster = cluster
        self.runner = runner
        self.writers = writers
        self.run_id = run_id
        self.run_dir = run_dir
        self.brokers = brokers
        self.T = engine.T
        self.t0 = time.monotonic()
        self.rng = random.Random(spec.seed)
        self._recorder = OpRecorder(writers["client"])
        self._clients: dict[str, Any] = {}
        self.last_heal = time.time()  # when the last fault stopped: the liveness deadline counts from it

    # -- acting ----------------------------------------------------------------------------------
    def nemesis(self, f: str, phase: str = "start", targets: list[str] | None = None, **params: Any) -> Any:
        """One nemesis op; returns its completion (falsy when it failed, recorded as info; its
        ``detail`` holds what the nemesis reported)."""
        done = self.runner.invoke(FaultOp(f, phase, list(targets or []), params))
        if done and phase == "stop":
            self.last_heal = time.time()
        return done

    def heal(self, reason: str) -> float:
        """Undo every fault."""
        self.runner.heal(reason)
        self.last_heal = time.time()
        return self.last_heal

    def liveness_deadline(self) -> float:
        """When registration liveness is judged: T + margin after the last fault ended (+0.3 s so
        the history covers it)."""
        return self.last_heal + self.T + self.spec.margin_ms / 1000.0 + 0.3

    def invoke(self, client: str, f: str, **value: Any) -> Op:
        """One op of a named client of the test, recorded as invoke then ok/fail/info."""
        if client not in self._clients:
            self._clients[client] = self.spec.clients[client].open(self, client)
        return self._recorder.invoke(self._clients[client], Op(f, value, process=client))

    def close_clients(self) -> None:
        for c in self._clients.values():
            c.close()
        self._clients.clear()

    # -- observing -------------------------------------------------------------------------------
    def step(self, what: str, **fields: Any) -> None:
        """A step of the story: recorded in the history (the timeline shows it) and printed live."""
        self.writers["harness"].emit("repro_step", what=what, **fields)
        self.engine.say(f"  [yellow]{time.monotonic() - self.t0:6.1f}s[/] {what}")

    def node(self, broker_id: int) -> str:
        return self.engine.inv.broker(broker_id).name

    @property
    def zookeepers(self) -> list[str]:
        return [z.name for z in self.engine.inv.zookeepers]

    def agent_address(self, broker_id: int) -> str:
        return f"{self.engine.inv.broker(broker_id).address}:{self.cluster.agent_ports[broker_id]}"

    def kafka_bootstrap(self) -> str:
        """Real Kafka brokers' addresses for a Kafka client (through the clients' links)."""
        return self.cluster.kafka_bootstrap()

    def zk(self) -> Any:
        return self.engine.zk()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))

    def wait(self, pred: Callable[[], Any], timeout: float, what: str, poll: float = 0.1,
             needed: bool = False) -> Any:
        """``pred``'s first truthy value within ``timeout``; falsy when it gave up, which is a step of
        the story, or with ``needed`` a gap in it (``gap``)."""
        value = wait_until(pred, timeout, poll)
        if not value:
            self._gave_up(what, timeout, needed)
        return value

    def gap(self, why: str) -> None:
        """The story cannot be told as written: something it needs did not happen (a fault that did
        not bite, a race the other way). Recorded in the history and the results; the checkers still
        judge the history, but a clean verdict from such a run is no evidence (``RunOutcome.matched``)."""
        self.engine.story_gaps.append(why)
        self.writers["harness"].emit("repro_step", what=f"story not told: {why}", gap=True)
        self.engine.say(f"  [yellow]{time.monotonic() - self.t0:6.1f}s story not told:[/] {why}")

    def _gave_up(self, what: str, timeout: float, needed: bool) -> None:
        if needed:
            self.gap(f"gave up waiting for {what} after {timeout:.1f}s")
        else:
            self.step(f"gave up waiting for {what} after {timeout:.1f}s")

    def agent_events(self, broker_id: int) -> list[Any]:
        return self.cluster.agent(broker_id).events()

    def wait_agent_event(self, broker_id: int, pred: Callable[[Any], bool], timeout: float, what: str,
                         needed: bool = False) -> Any:
        ev = self.cluster.agent(broker_id).wait_for(pred, timeout, poll=0.1)
        if ev is None:
            self._gave_up(what, timeout, needed)
        return ev
