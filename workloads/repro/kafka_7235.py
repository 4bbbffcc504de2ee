"""KAFKA-7235 / KIP-380 (fixed in 2.2.0): broker epochs. Three schedules (kafka-semantics.md §8).

(a) Fast bounce missed: hold the controller's event thread, restart B so /brokers/ids/B is
    re-created (czxid E1 → E2), release. The id set is unchanged, so a pre-KIP-380 controller
    (``broker_epoch_check=off``) runs no onBrokerFailure/onBrokerStartup and B's replicas stay
    offline; ``bounce_handling`` fires. With KIP-380 the czxid increase is a bounce: B gets a full
    UpdateMetadata and a LeaderAndIsr with E2.
(b) Stale StopReplica applied: B's controlled shutdown removes it from the ISR; a StopReplica
    carrying E1 is held back; B restarts (E2) and becomes a follower again; the held StopReplica
    is delivered. Without KIP-380 the new B stops its follower for good (``control_request_epochs``
    fires: applied broker_epoch E1 < own E2); with it, STALE_BROKER_EPOCH (77).
(c) Stale ControlledShutdown acted on: B restarts (E2); a retried ControlledShutdown(E1) from the
    old incarnation reaches the controller. Without KIP-380 the controller moves leaders off / stops
    replicas of the live B (``controlled_shutdown_epochs`` fires); with it, STALE_BROKER_EPOCH.
"""

from __future__ import annotations

import time
from typing import Any

from workloads.repro.framework import RunContext, Scenario
from workloads.repro.timeline import hx

TOPIC = "t7235"


class BounceBase(Scenario):
    """Three brokers, topic t7235-0 replicated on all (leader = the controller, B a follower)."""

    def admin(self, ctx: RunContext, b: int) -> Any:
        from agent.client import AgentAdmin

        node = ctx.session.inv.broker(b)
        return AgentAdmin(f"{node.address}:{ctx.cluster.agent_ports[b]}", timeout=10)

    def prepare(self, ctx: RunContext) -> tuple[int, int, int]:
        """(controller, B, epoch E1 of B) once B follows t7235-0."""
        from agent import znodes as zn

        zk = ctx.zk()

        def controller() -> int | None:
            try:
                data, _ = zk.get(zn.CONTROLLER)
                return zn.parse_controller_id(data)
            except Exception:  # noqa: BLE001 - not elected yet
                return None

        c = ctx.wait(controller, 15, "a controller")
        b = min(x for x in self.brokers if x != c)
        other = [x for x in self.brokers if x not in (c, b)]
        zn.create_topic(zk, TOPIC, {0: [c, b, *other]})
        e1 = zk.exists(f"/brokers/ids/{b}").czxid
        ctx.step(f"1. controller is broker {c} ; created {TOPIC}-0 replicas {[c, b, *other]} (leader {c}); "
                 f"B = broker {b} with epoch E1 = czxid {e1}")
        self.wait_follower(ctx, b, e1)
        return c, b, e1

    def wait_follower(self, ctx: RunContext, b: int, epoch: int, timeout: float = 10, topic: str = TOPIC) -> Any:
        ev = ctx.wait_agent_event(
            b, lambda e: (e.f == "control_recv" and e.value.get("kind") == "LeaderAndIsr"
                          and e.value.get("outcome") == "applied" and e.value.get("broker_epoch") == epoch
                          and f"{topic}-0" in (e.value.get("partitions") or [])), timeout,
            f"broker {b} to follow {topic}-0 with epoch {epoch}")
        if ev is not None:
            ctx.step(f"   broker {b} applied LeaderAndIsr {ev.value.get('request_id')} (broker_epoch {epoch}): "
                     f"follower of {topic}-0")
        return ev

    def restart(self, ctx: RunContext, b: int, e1: int) -> int | None:
        """Clean stop (session closed, znode deleted) and start: a new incarnation with a new czxid."""
        agent = ctx.cluster.agent(b)
        agent.stop(grace=5.0)
        agent.start()
        zk = ctx.zk()

        def new_epoch() -> int | None:
            stat = zk.exists(f"/brokers/ids/{b}")
            return stat.czxid if stat is not None and stat.czxid != e1 else None

        e2 = ctx.wait(new_epoch, 15, f"broker {b} to re-register")
        if e2:
            stat = zk.exists(f"/brokers/ids/{b}")
            ctx.step(f"   broker {b} re-registered: epoch E2 = czxid {e2} (> E1 = {e1}), session "
                     f"{hx(stat.ephemeralOwner if stat else None)}")
        return e2


class FastBounce(BounceBase):
    def play(self, ctx: RunContext) -> None:
        c, b, e1 = self.prepare(ctx)
        self.admin(ctx, c).hold()
        ctx.step(f"2. hold controller {c}'s event thread (BrokerChange events queue up)")
        e2 = self.restart(ctx, b, e1)
        ctx.step(f"3. restarted broker {b} while the controller was held: /brokers/ids/{b} czxid {e1} → {e2}, "
                 "same id set")
        self.admin(ctx, c).release()
        t_release = time.time()
        ctx.step(f"4. release controller {c}: it processes the queued BrokerChange events")
        ev = self.wait_follower(ctx, b, e2 or -1, timeout=4)
        if ev is None:
            ctx.step(f"   broker {b} got no LeaderAndIsr with E2 = {e2}: its replica of {TOPIC}-0 stays offline")
        ctx.sleep(t_release + 3.2 - time.time())  # bounce_handling's grace: 3 s to send LeaderAndIsr


class StaleStopReplica(BounceBase):
    def play(self, ctx: RunContext) -> None:
        c, b, e1 = self.prepare(ctx)
        reply = self.admin(ctx, b).call("controlled_shutdown")
        ctx.step(f"2. broker {b} sends ControlledShutdown(E1 = {e1}): error {reply.get('error_code')}; the controller "
                 f"removes it from the ISR and sends StopReplica")
        body = self.admin(ctx, c).call("debug_build", kind="StopReplica", target=b, topic=TOPIC, partition=0)
        req = body.get("request") or {}
        rid = body.get("request_id")
        ctx.step(f"   a StopReplica {rid} for {TOPIC}-0 with broker_epoch {req.get('broker_epoch')} is held back "
                 "(delayed in the network)")
        e2 = self.restart(ctx, b, e1)
        ctx.step(f"3. broker {b} restarted: E2 = {e2}")
        self.wait_follower(ctx, b, e2 or -1, timeout=10)
        reply = self.admin(ctx, c).call("debug_send", request_id=rid, target=b)
        ctx.step(f"4. the held StopReplica {rid} (broker_epoch {req.get('broker_epoch')}) is delivered to broker {b}: "
                 f"error {reply.get('error_code')}")
        ctx.sleep(1.0)


class StaleControlledShutdown(BounceBase):
    def play(self, ctx: RunContext) -> None:
        c, b, e1 = self.prepare(ctx)
        ctx.step(f"2. broker {b} (E1 = {e1}) starts a ControlledShutdown whose reply is lost; it will be retried")
        e2 = self.restart(ctx, b, e1)
        ctx.step(f"3. broker {b} restarted: E2 = {e2}")
        self.wait_follower(ctx, b, e2 or -1, timeout=10)
        reply = self.admin(ctx, b).call("controlled_shutdown", broker_epoch=e1)
        ctx.step(f"4. the retried ControlledShutdown(E1 = {e1}) reaches controller {c}: error "
                 f"{reply.get('error_code')}, remaining leaders {reply.get('remaining_partitions')}")
        ctx.sleep(1.0)


BUG = {"broker_epoch_check": "off"}
FIXED = {"broker_epoch_check": "on"}
THREE = [1, 2, 3]

SCENARIOS = [
    FastBounce(
        id="KAFKA-7235-fast-bounce", title="KIP-380 (a): a fast bounce is missed, the broker's replicas stay offline",
        jira="KAFKA-7235", story=__doc__ or "", checkers=["bounce_handling"], bug_toggles=BUG,
        fixed_toggles=FIXED, brokers=THREE, needs_spark=True),
    StaleStopReplica(
        id="KAFKA-7235-stale-stopreplica",
        title="KIP-380 (b): a StopReplica from before a bounce stops the new incarnation's follower",
        jira="KAFKA-7235", story=__doc__ or "", checkers=["control_request_epochs"], bug_toggles=BUG,
        fixed_toggles=FIXED, brokers=THREE, needs_spark=True),
    StaleControlledShutdown(
        id="KAFKA-7235-stale-shutdown",
        title="KIP-380 (c): a retried ControlledShutdown from the old incarnation moves the live broker's replicas",
        jira="KAFKA-7235", story=__doc__ or "", checkers=["controlled_shutdown_epochs"], bug_toggles=BUG,
        fixed_toggles=FIXED, brokers=THREE, needs_spark=True),
]
