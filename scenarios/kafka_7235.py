"""KAFKA-7235 / KIP-380 (fixed in Kafka 2.2.0): broker epochs. Three stories.

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

On released brokers (``--kafka``) there is no hook inside the broker. (a) holds the controller's
/brokers/ids notifications on the ZooKeeper wire (``FastBounce.play_on_kafka``). For (b) and (c) the Kafka
wire proxy (docs/kafkaproxy.md) sits on the inter-broker listeners, and ``replay_control`` captures
the request as it passes (the controller's StopReplica to B during B's clean shutdown, or B's own
ControlledShutdown) and, once the new incarnation follows again, replays it on a connection of the
proxy's own. 2.1.1, the last release before KIP-380, sends them without a broker epoch and acts on
them; 2.2.0 answers STALE_BROKER_EPOCH. The checkers read the answers from the proxy's frames
(``base.kafkawire``).

KIP-380 ("Detect outdated control requests and bounced brokers using broker generation"), the
controller's side in apache/kafka ``core/src/main/scala/kafka/controller/KafkaController.scala``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent import znodes as zn
from harness.context import RunContext
from scenarios.base import Scenario
from scenarios.timeline import hx
from workloads.base import Client
from workloads.kafka import AdminClient

TOPIC = "t7235"


class WireFrames:
    """The run's Kafka proxy frames as the proxy writes them (``events/kafkaproxy.jsonl``: every line
    flushed), read on from where the last look stopped: what the story waits for on real brokers,
    whose control plane writes no events of its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pos = 0
        self.frames: list[dict[str, Any]] = []  # each frame's value with its event's ``seq``

    def poll(self) -> list[dict[str, Any]]:
        """Every frame so far (its value with ``seq``), in the proxy's order."""
        if self.path.exists():
            with self.path.open("rb") as fh:
                fh.seek(self.pos)
                data = fh.read()
            end = data.rfind(b"\n")  # a torn last line is read on the next look
            if end >= 0:
                for line in data[:end].splitlines():
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if rec.get("f") == "kafka_frame" and isinstance(rec.get("value"), dict):
                        self.frames.append({**rec["value"], "seq": rec["seq"]})
                self.pos += end + 1
        return self.frames

    def find(self, pred: Callable[[dict[str, Any]], bool], after: int = 0) -> dict[str, Any] | None:
        """The first frame (its value, with ``seq``) past proxy event ``after`` that ``pred`` accepts."""
        return next((v for v in self.poll() if v["seq"] > after and pred(v)), None)


class BounceBase(Scenario):
    """Three brokers, topic t7235-0 replicated on all (leader = the controller, B a follower)."""

    def clients(self) -> dict[str, Client]:
        return {"admin": AdminClient()}

    def controller(self, ctx: RunContext) -> int | None:
        return ctx.wait(lambda: self.controller_now(ctx), 15, "a controller")

    def controller_now(self, ctx: RunContext) -> int | None:
        """The controller /controller names now, or None (none elected yet, or between two)."""
        try:
            return zn.parse_controller_id(ctx.zk().get(zn.CONTROLLER)[0])
        except Exception:  # noqa: BLE001 - not elected yet
            return None

    def epoch(self, ctx: RunContext, b: int) -> int | None:
        stat = ctx.zk().exists(f"/brokers/ids/{b}")
        return stat.czxid if stat is not None else None

    def prepare(self, ctx: RunContext, topic: str = TOPIC) -> tuple[int, int, int]:
        """(controller, B, epoch E1 of B) once B follows ``topic``-0."""
        c = self.controller(ctx)
        b = min(x for x in self.brokers if x != c)
        other = [x for x in self.brokers if x not in (c, b)]
        ctx.invoke("admin", "create_topic", topic=topic, replicas={0: [c, b, *other]})
        e1 = self.epoch(ctx, b)
        ctx.step(f"1. controller is broker {c} ; created {topic}-0 replicas {[c, b, *other]} (leader {c}); "
                 f"B = broker {b} with epoch E1 = czxid {e1}")
        self.wait_follower(ctx, b, e1, topic=topic)
        return c, b, e1

    def wait_follower(self, ctx: RunContext, b: int, epoch: int | None, timeout: float = 10,
                      topic: str = TOPIC) -> Any:
        ev = ctx.wait_agent_event(
            b, lambda e: (e.f == "control_recv" and e.value.get("kind") == "LeaderAndIsr"
                          and e.value.get("outcome") == "applied" and e.value.get("broker_epoch") == epoch
                          and f"{topic}-0" in (e.value.get("partitions") or [])), timeout,
            f"broker {b} to follow {topic}-0 with epoch {epoch}")
        if ev is not None:
            ctx.step(f"   broker {b} applied LeaderAndIsr {ev.value.get('request_id')} (broker_epoch {epoch}): "
                     f"follower of {topic}-0")
        return ev

    def send_acked(self, ctx: RunContext, topic: str, count: int) -> list[int]:
        """``count`` acks=all sends to ``topic``-0 through the scenario's queue client: the offsets
        acknowledged (a failed send is a step of the story, not an error)."""
        acked = []
        for i in range(count):
            done = ctx.invoke("queue", "send", topic=topic, partition=0, value=f"v{i}", acks="all")
            if done.type == "ok":
                acked.append(done.value["offset"])
            else:
                ctx.step(f"   send v{i}: {done.type} {done.value.get('error')}")
        return acked

    def restart(self, ctx: RunContext, b: int, e1: int | None) -> int | None:
        """Clean stop (session closed, znode deleted) and start: a new incarnation with a new czxid."""
        ctx.nemesis("bounce", "start", [ctx.node(b)])
        e2 = ctx.wait(lambda: (e := self.epoch(ctx, b)) and e != e1 and e, 15, f"broker {b} to re-register")
        if e2:
            stat = ctx.zk().exists(f"/brokers/ids/{b}")
            ctx.step(f"   broker {b} re-registered: epoch E2 = czxid {e2} (> E1 = {e1}), session "
                     f"{hx(stat.ephemeralOwner if stat else None)}")
        return e2

    # --- the same steps on released brokers (no agent events, no agents' admin protocol): observed
    # through ZooKeeper and the Kafka proxy's frames ------------------------------------------------

    def isr(self, ctx: RunContext, topic: str = TOPIC) -> list[int] | None:
        try:
            return list(json.loads(ctx.zk().get(zn.partition_state_path(topic, 0))[0])["isr"])
        except Exception:  # noqa: BLE001 - not created yet, or being rewritten
            return None

    def prepare_on_kafka(self, ctx: RunContext, topic: str = TOPIC) -> tuple[int, int, int]:
        """``prepare`` on released brokers: the topic created as Kafka's ZooKeeper-mode admin does
        (``AdminZkClient.createTopicWithAssignment``: the config znode, then the assignment, which
        the controller's TopicChange watch turns into a partition), B in sync when it returns."""
        c = self.controller(ctx)
        if c is None:
            raise RuntimeError("no controller elected")
        b = min(x for x in self.brokers if x != c)
        replicas = [c, b, *(x for x in self.brokers if x not in (c, b))]
        zk = ctx.zk()
        zk.create(f"/config/topics/{topic}", json.dumps({"version": 1, "config": {}}).encode(), makepath=True)
        zk.create(f"{zn.BROKER_TOPICS}/{topic}",
                  json.dumps({"version": 1, "partitions": {"0": replicas}}).encode(), makepath=True)
        e1 = self.epoch(ctx, b)
        ctx.step(f"1. controller is broker {c}; created {topic}-0 replicas {replicas} in ZooKeeper (leader {c}); "
                 f"B = broker {b} with epoch E1 = czxid {e1}")
        isr = ctx.wait(lambda: (i := self.isr(ctx, topic)) and set(i) == set(replicas) and i, 30,
                       f"{topic}-0's ISR to hold every replica")
        ctx.step(f"   {topic}-0 ISR {isr}: broker {b} follows")
        return c, b, e1 or 0

    def wire(self, ctx: RunContext) -> WireFrames:
        """This run's Kafka proxy frames, read on incrementally (one reader per run)."""
        path = ctx.run_dir / "events" / "kafkaproxy.jsonl"
        wire = getattr(self, "_wire", None)
        if wire is None or wire.path != path:
            wire = self._wire = WireFrames(path)
        return wire

    def frames(self, ctx: RunContext) -> list[dict[str, Any]]:
        """The Kafka proxy's ``kafka_frame`` events so far: each value with its ``seq``."""
        return self.wire(ctx).poll()

    def wait_follower_kafka(self, ctx: RunContext, b: int, after_seq: int = 0, timeout: float = 60,
                            topic: str = TOPIC) -> dict[str, Any] | None:
        """B answered a LeaderAndIsr for ``topic``-0 without error (after frame ``after_seq``) and the
        leader has it in the ISR: it follows and fetches."""

        def answered() -> dict[str, Any] | None:
            return next((f for f in self.frames(ctx) if f["seq"] > after_seq and f.get("kind") == "response"
                         and f.get("api") == "LeaderAndIsr" and f.get("dst_broker") == b and not f.get("error")
                         and any(p.get("topic") == topic and p.get("partition") == 0
                                 for p in f.get("partitions") or [])), None)

        ev = ctx.wait(answered, timeout, f"broker {b} to answer a LeaderAndIsr for {topic}-0")
        if ev is None:
            return None
        in_isr = ctx.wait(lambda: b in (self.isr(ctx, topic) or []), timeout, f"broker {b} in the ISR of {topic}-0")
        ctx.step(f"   broker {b} answered LeaderAndIsr {ev.get('conn')}:{ev.get('correlation_id')} (v"
                 f"{ev.get('api_version')}, broker_epoch {ev.get('broker_epoch', 'none: before KIP-380')}) for "
                 f"{topic}-0" + (f"; ISR {self.isr(ctx, topic)}" if in_isr else ""))
        return ev

    def restart_kafka(self, ctx: RunContext, b: int, e1: int | None) -> int | None:
        """A clean stop (B's controlled shutdown, its session closed, its znode deleted) and a start."""
        ctx.nemesis("bounce", "start", [ctx.node(b)])
        e2 = ctx.wait(lambda: (e := self.epoch(ctx, b)) and e != e1 and e, 90, f"broker {b} to re-register")
        ctx.step(f"3. broker {b} stopped cleanly and started again: epoch E2 = czxid {e2} (> E1 = {e1})")
        return e2

    def hold_broker_watch(self, ctx: RunContext, comment: str) -> int | None:
        """Hold the watch notifications on /brokers/ids to the controller's session on the ZooKeeper
        proxy (``zk_rules``; its stop releases them): a real controller's event thread cannot be held
        from outside, what it acts on can. The session held, None when /controller had no owner."""
        owner = ctx.zk().exists(zn.CONTROLLER)
        session = owner.ephemeralOwner if owner is not None else None
        rule = {"id": "hold-broker-watch", "comment": comment,
                "match": {"dir": "s2c", "kind": "notification", "path_prefix": "/brokers/ids",
                          **({"session_id": session} if session else {})},
                "action": {"type": "hold"}}
        ctx.nemesis("zk_rules", "start", ctx.zookeepers, rules=[rule])
        return session

    def replay(self, ctx: RunContext, b: int, what: str) -> list[dict[str, Any]]:
        done = ctx.nemesis("replay_control", "stop", [ctx.node(b)])
        replies = list((done.detail.get("replayed") or []) if done else [])
        ctx.step(f"4. the proxy replays the captured {what}: "
                 + ", ".join(f"{r.get('api')} (frame {r.get('replay_of')}) answered {r.get('error') or 'NONE'}"
                             for r in replies))
        if not any("response_seq" in r for r in replies):  # a clean verdict would be about a story not told
            raise RuntimeError(f"the replayed {what.split(' ', 1)[0]} got no answer: the story did not happen")
        return replies

    def captured(self, ctx: RunContext, api: str) -> dict[str, Any]:
        cap = next((f for f in self.frames(ctx) if f.get("action") == "capture" and f.get("api") == api), None)
        if cap is None:  # the run must not pass as clean when the stale request never existed
            raise RuntimeError(f"no {api} was captured: the story did not happen")
        return cap


class FastBounce(BounceBase):
    def play(self, ctx: RunContext) -> None:
        c, b, e1 = self.prepare(ctx)
        ctx.nemesis("hold_controller", "start", [ctx.node(c)])
        ctx.step(f"2. hold controller {c}'s event thread (BrokerChange events queue up)")
        e2 = self.restart(ctx, b, e1)
        ctx.step(f"3. restarted broker {b} while the controller was held: /brokers/ids/{b} czxid {e1} → {e2}, "
                 "same id set")
        ctx.nemesis("hold_controller", "stop", [ctx.node(c)])
        t_release = time.time()
        ctx.step(f"4. release controller {c}: it processes the queued BrokerChange events")
        ev = self.wait_follower(ctx, b, e2 or -1, timeout=4)
        if ev is None:
            ctx.step(f"   broker {b} got no LeaderAndIsr with E2 = {e2}: its replica of {TOPIC}-0 stays offline")
        ctx.sleep(t_release + 3.2 - time.time())  # bounce_handling's grace: 3 s to send LeaderAndIsr

    def play_on_kafka(self, ctx: RunContext) -> None:
        """A real controller's event thread cannot be held from outside, but what it acts on can: the
        ZooKeeper proxy holds the watch notifications on /brokers/ids to the controller's session
        while B stops cleanly (controlled shutdown, session closed, znode deleted) and starts again
        (a new znode, a new czxid). Released, they make the controller read /brokers/ids once, with
        B back: the same id set. Kafka 2.1 compares ids only and does nothing (B's replica stays
        offline, B out of the ISR); 2.2 on (KIP-380) compares czxids, sees B bounced and sends it a
        full UpdateMetadata and a LeaderAndIsr with E2."""
        c, b, e1 = self.prepare_on_kafka(ctx)
        session = self.hold_broker_watch(ctx, "KAFKA-7235 fast bounce: the controller learns late")
        ctx.step(f"2. hold the watch notifications on /brokers/ids to controller {c}'s session {hx(session)} "
                 "(ZooKeeper wire proxy)")
        e2 = self.restart(ctx, b, e1)
        ctx.step(f"3. restarted broker {b} (clean stop, then start) while the controller was not told: "
                 f"/brokers/ids/{b} czxid {e1} → {e2}, same id set")
        released = ctx.nemesis("zk_rules", "stop", ctx.zookeepers)
        t_release = time.time()
        n = (released.detail.get("released") if released is not None else None)
        ctx.step(f"4. release the held notifications ({n}): controller {c} reads /brokers/ids once, broker {b} in it")
        isr = ctx.wait(lambda: (i := self.isr(ctx)) and b in i and i, 10, f"broker {b} back in {TOPIC}-0's ISR")
        ctx.step(f"   {TOPIC}-0 ISR {isr}: broker {b} follows again" if isr else
                 f"   broker {b} is not back in {TOPIC}-0's ISR ({self.isr(ctx)}): no LeaderAndIsr reached "
                 "its new incarnation, its replica stays offline")
        ctx.sleep(t_release + 3.2 - time.time())


class StaleStopReplica(BounceBase):
    def play(self, ctx: RunContext) -> None:
        c, b, e1 = self.prepare(ctx)
        done = ctx.invoke("admin", "controlled_shutdown", broker=b)
        ctx.step(f"2. broker {b} sends ControlledShutdown(E1 = {e1}): error {done.value.get('error_code')}; the "
                 "controller removes it from the ISR and sends StopReplica")
        held = ctx.nemesis("delay_request", "start", [ctx.node(c)], kind="StopReplica", to=ctx.node(b),
                           topic=TOPIC, partition=0)
        req = (held.detail.get("held_requests") or {}).get(ctx.node(c), {}) if held else {}
        ctx.step(f"   a StopReplica {req.get('request_id')} for {TOPIC}-0 with broker_epoch {req.get('broker_epoch')} "
                 "is held back (delayed in the network)")
        e2 = self.restart(ctx, b, e1)
        ctx.step(f"3. broker {b} restarted: E2 = {e2}")
        self.wait_follower(ctx, b, e2 or -1, timeout=10)
        sent = ctx.nemesis("delay_request", "stop", [ctx.node(c)])
        replies = (sent.detail.get("delivered") or {}).get(ctx.node(c), []) if sent else []
        ctx.step(f"4. the held StopReplica {req.get('request_id')} (broker_epoch {req.get('broker_epoch')}) is "
                 f"delivered to broker {b}: error {[r.get('error_code') for r in replies]}")
        ctx.sleep(1.0)

    def play_on_kafka(self, ctx: RunContext) -> None:
        c, b, e1 = self.prepare_on_kafka(ctx)
        self.wait_follower_kafka(ctx, b)
        # B's shutdown answer waits 1.5 s: the controller answers before its request thread has delivered the
        # StopReplicas it queued, and a B with its answer stops serving (2.1.1 once never got this one)
        ctx.nemesis("replay_control", "start", [ctx.node(b)], api="StopReplica", topic=TOPIC, partition=0,
                    shutdown_answer_delay_ms=1500)
        ctx.step(f"2. capture the controller's next StopReplica for {TOPIC}-0 to broker {b} (forwarded, a copy "
                 f"kept: delayed in the network); broker {b}'s ControlledShutdown answer is delayed 1.5 s")
        e2 = self.restart_kafka(ctx, b, e1)
        cap = self.captured(ctx, "StopReplica")
        ctx.step(f"   during broker {b}'s controlled shutdown the controller sent StopReplica v{cap.get('api_version')} "
                 f"(frame {cap['seq']}, broker_epoch {cap.get('broker_epoch', 'none: before KIP-380')}): captured")
        self.wait_follower_kafka(ctx, b, cap["seq"])
        self.replay(ctx, b, f"StopReplica (built for E1 = {e1}) to the new incarnation E2 = {e2}")
        # what B does next, on the wire: a follower fetches from its leader every replica.fetch.wait.max.ms
        # (500 ms) even with nothing to fetch; the StopReplica applied removes its fetcher. (The ISR is no
        # witness: the 2.1 leader of an idle partition kept the stopped follower in it for 25 s.)
        ctx.sleep(1.0)  # a fetch in flight at the replay may still be answered
        since = max((f["seq"] for f in self.frames(ctx)), default=0)
        ctx.sleep(4.0)
        # any Fetch of B's to the leader: an incremental fetch (KIP-227) names no unchanged partition, and
        # t7235-0 is the only partition B follows
        fetches = [f for f in self.frames(ctx) if f["seq"] > since and f.get("api") == "Fetch"
                   and f.get("kind") == "request" and f.get("src_broker") == b and f.get("dst_broker") == c]
        ctx.step(f"   broker {b} sent {len(fetches)} Fetch requests to the leader {c} in the 4 s from 1 s after the "
                 "replay" + ("" if fetches else f": it stopped following {TOPIC}-0 (its replica fetcher was removed)"))


class StaleControlledShutdown(BounceBase):
    def play(self, ctx: RunContext) -> None:
        c, b, e1 = self.prepare(ctx)
        ctx.step(f"2. broker {b} (E1 = {e1}) starts a ControlledShutdown whose reply is lost; it will be retried")
        e2 = self.restart(ctx, b, e1)
        ctx.step(f"3. broker {b} restarted: E2 = {e2}")
        self.wait_follower(ctx, b, e2 or -1, timeout=10)
        done = ctx.invoke("admin", "controlled_shutdown", broker=b, broker_epoch=e1)
        ctx.step(f"4. the retried ControlledShutdown(E1 = {e1}) reaches controller {c}: error "
                 f"{done.value.get('error_code')}, remaining leaders {done.value.get('remaining_partitions')}")
        ctx.sleep(1.0)

    def play_on_kafka(self, ctx: RunContext) -> None:
        c, b, e1 = self.prepare_on_kafka(ctx)
        self.wait_follower_kafka(ctx, b)
        ctx.nemesis("replay_control", "start", [ctx.node(b)], api="ControlledShutdown")
        ctx.step(f"2. capture broker {b}'s next ControlledShutdown to controller {c} (forwarded, a copy kept: "
                 "the retry of a request whose answer was slow)")
        e2 = self.restart_kafka(ctx, b, e1)
        cap = self.captured(ctx, "ControlledShutdown")
        ctx.step(f"   broker {b} sent ControlledShutdown v{cap.get('api_version')} (frame {cap['seq']}, broker_epoch "
                 f"{cap.get('broker_epoch', 'none: before KIP-380')}): captured")
        last = max((f["seq"] for f in self.frames(ctx)), default=0)
        self.wait_follower_kafka(ctx, b, last)
        self.replay(ctx, b, f"ControlledShutdown of broker {b} (E1 = {e1}) to controller {c}; B now has E2 = {e2}")
        ctx.sleep(2.0)  # the controller's requests because of it (StopReplica to the live B, the ISR shrink)
        # (a pre-2.2 controller also sends an empty StopReplica for the partitions to delete: not counted)
        stops = [f for f in self.frames(ctx) if f.get("api") == "StopReplica" and f.get("kind") == "request"
                 and f.get("dst_broker") == b and f.get("seq", 0) > last
                 and any(p.get("topic") == TOPIC for p in f.get("partitions") or [])]
        ctx.step(f"   the controller sent {len(stops)} StopReplica for {TOPIC}-0 to the live broker {b} since; ISR of "
                 f"{TOPIC}-0 now {self.isr(ctx)}")


BUG = {"broker_epoch_check": "off"}
FIXED = {"broker_epoch_check": "on"}
THREE = [1, 2, 3]
# the agents' stories (and the lost write, kafka_7235_lost_write, which shares BUG and FIXED) hold a
# control request inside the agent (delay_request); a real broker has no such hook: (a) holds the
# controller's watch on the ZooKeeper wire, (b) and (c) capture and replay on the Kafka proxy's
# (replay_control, ON_KAFKA), and the lost write does both
ON_KAFKA: dict[str, Any] = {"not_on_kafka": None, "kafka_proxy": True, "kafka_fixed_in": "2.2.0"}

SCENARIOS = [
    FastBounce(
        id="KAFKA-7235-fast-bounce", title="KIP-380 (a): a fast bounce is missed, the broker's replicas stay offline",
        jira="KAFKA-7235", story=__doc__ or "", checkers=["bounce_handling"], bug_toggles=BUG,
        fixed_toggles=FIXED, brokers=THREE, needs_spark=True,
        # released brokers: the controller's ZooKeeper watch is held on the wire, its requests seen on
        # the Kafka proxy; 2.2.0 is the first release with KIP-380
        not_on_kafka=None, kafka_proxy=True, kafka_fixed_in="2.2.0"),
    StaleStopReplica(
        id="KAFKA-7235-stale-stopreplica",
        title="KIP-380 (b): a StopReplica from before a bounce stops the new incarnation's follower",
        jira="KAFKA-7235", story=__doc__ or "", checkers=["control_request_epochs"], bug_toggles=BUG,
        fixed_toggles=FIXED, brokers=THREE, needs_spark=True, **ON_KAFKA),
    StaleControlledShutdown(
        id="KAFKA-7235-stale-shutdown",
        title="KIP-380 (c): a retried ControlledShutdown from the old incarnation moves the live broker's replicas",
        jira="KAFKA-7235", story=__doc__ or "", checkers=["controlled_shutdown_epochs"], bug_toggles=BUG,
        fixed_toggles=FIXED, brokers=THREE, needs_spark=True, **ON_KAFKA),
]
