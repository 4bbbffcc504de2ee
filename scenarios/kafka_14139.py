"""KAFKA-14139: a replica restarted with an empty disk joins the ISR through a delayed AlterPartition.

KIP-903 ("Replicas with stale broker epoch should not be allowed to join the ISR") tells this
sequence; A leads t14139-0 with ISR [A]:
(1) B catches up; (2) A's AlterPartition adding B is delayed (held at A); (3) B hard-fails and is
fenced (its session expires); (4) B restarts with an empty disk (and cannot fetch: its link to A is
cut); (5) the controller sees the new registration; (6) the old AlterPartition arrives: the ZK
controller checks only liveness (``isr_epoch_check=off``), so the empty B enters the ISR —
``isr_expansion`` fires (the expansion rests on a fetch by B's previous incarnation). Then A fails
and the controller elects B: acknowledged (acks=all) records are gone. With KIP-903
(``isr_epoch_check=kip903``) the stale entry is rejected with INELIGIBLE_REPLICA (107) and the
partition goes offline instead of losing data.

The consequence, as a client sees it: the records are the queue workload's ``send`` ops; A is
restarted, and a ``final_read`` takes the partition from whichever broker leads it. With the bug
the empty B leads and ``queue_lost_write`` names every acknowledged send, the partition states
(leader@epoch) between the ack and the read, and the brokers' epochs; with KIP-903 A leads again
and the final read holds every acknowledged record.

On released brokers (``--kafka VERSION``, 2.7+; ``play_on_kafka``) the story is the same, told on the
wire: the ZooKeeper-mode controller has no KIP-903 in any release, so every release reproduces it.
Three brokers sit behind the Kafka proxy; B leaves the ISR by a controlled shutdown, the records are
acknowledged by A alone, and a proxy rule holds A's AlterPartition (AlterIsr before 3.2) when B's
restart catches up. B is SIGKILLed; once its session expired it restarts with an empty log dir, and
another rule drops its fetches to A. The held request is released after the controller sent the new
B its LeaderAndIsr (before, it would refuse B as not live: KIP-841), at most 25 s after A sent it
(A's channel to the controller times a request out at 30 s and would resend it). The controller
commits ISR [A, B]; A is killed, B elected. ``isr_expansion`` reads the wire (``base.kafkawire``:
the fetch the expansion rests on carries B's previous epoch in Fetch v15+) and the observer's
partition states; ``queue_lost_write`` the final read through confluent-kafka.
"""

from __future__ import annotations

import json
from typing import Any

from agent import znodes as zn
from harness.context import RunContext
from nemesis.registry import HOLD_CAP_MS
from scenarios.kafka_7235 import BounceBase
from scenarios.timeline import hx
from workloads.base import Client
from workloads.kafka import AdminClient
from workloads.kafka_admin import KafkaAdminClient
from workloads.kafka_queue import KafkaQueueClient
from workloads.queue import QueueClient

TOPIC = "t14139"
RECORDS = 5
HOLD_RULE = "14139-hold-alter-partition"
CUT_RULE = "14139-cut-fetch"
# a released broker's start (a JVM, its log dirs, its registration) on this project's loaded 2-core
# machine: a minute at worst in the runs so far; the registration is what the story waits for
KAFKA_START_S = 120.0


def hold_alter_partition_rule(leader: int, hold_ms: float) -> dict[str, Any]:
    """The Kafka proxy rule that keeps ``leader``'s AlterPartition (AlterIsr before 3.2) requests to the
    controller until released (``kafka_rules`` stop), each by itself after ``hold_ms`` at most:
    below the 30 s request timeout of the leader's channel to the controller, past which it would
    resend on a new connection and the held copy be discarded."""
    return {"id": HOLD_RULE, "match": {"api": "AlterPartition", "kind": "request", "src_broker": leader},
            "action": {"type": "hold", "hold_ms": min(hold_ms, HOLD_CAP_MS)}, "comment": "KAFKA-14139: delayed ISR expansion"}


def cut_fetch_rule(follower: int, leader: int) -> dict[str, Any]:
    """The rule that drops ``follower``'s replica fetches (and epoch lookups) to ``leader``: broker to
    broker traffic passes no Toxiproxy link on real brokers, only the Kafka proxy."""
    return {"id": CUT_RULE, "match": {"api": ["Fetch", "OffsetForLeaderEpoch"], "kind": "request",
                                      "src_broker": follower, "dst_broker": leader},
            "action": "drop", "comment": "KAFKA-14139: the restarted replica cannot fetch"}


class Kafka14139(BounceBase):
    def clients(self) -> dict[str, Client]:
        return {"admin": AdminClient(), "queue": QueueClient(timeout=3.0, deadline_s=5.0, final_deadline_s=30.0)}

    def _state(self, ctx: RunContext) -> dict[str, Any] | None:
        try:
            data, _ = ctx.zk().get(zn.partition_state_path(TOPIC, 0))
        except Exception:  # noqa: BLE001 - not created yet
            return None
        return json.loads(data)

    def kafka_clients(self) -> dict[str, Client]:
        # idempotence off: one attempt per send, so an acknowledged record is one the leader appended once
        return {"admin": KafkaAdminClient(), "queue": KafkaQueueClient(idempotence=False, request_timeout_s=3.0,
                                                                        deadline_s=5.0, final_deadline_s=30.0)}

    def _fail_leader(self, ctx: RunContext, a: int, b: int, acked: int, elect_s: float) -> None:
        """Step 7: A is SIGKILLed; once its session expires, who leads the partition now."""
        ctx.nemesis("kill", "start", [ctx.node(a)])
        ctx.step("7. A fails (SIGKILL)")
        self._gone(ctx, a, 2 * ctx.T + 5)
        st = ctx.wait(lambda: (s := self._state(ctx)) and s.get("leader") != a and s, elect_s, "a new leader")
        ctx.step(f"   A's session expired; partition state {st}"
                 + (f": empty B leads, the {acked} acknowledged records are lost"
                    if st and st.get("leader") == b else
                    ": no eligible replica, the partition is offline (unavailable, but nothing acknowledged is lost)"
                    if st and st.get("leader") == -1 else ""))

    def _gone(self, ctx: RunContext, b: int, timeout: float) -> bool:
        zk = ctx.zk()
        return bool(ctx.wait(lambda: zk.exists(f"/brokers/ids/{b}") is None, timeout, f"broker {b}'s znode to go"))

    def play(self, ctx: RunContext) -> None:  # noqa: PLR0915 - one JIRA schedule, step by step
        c = self.controller(ctx)
        a, b = sorted(x for x in self.brokers if x != c)[:2]
        na, nb = ctx.node(a), ctx.node(b)
        ctx.invoke("admin", "create_topic", topic=TOPIC, replicas={0: [a, b]})
        ctx.step(f"0. controller is broker {c}; created {TOPIC}-0 with replicas [A={a}, B={b}]")
        self.wait_follower(ctx, b, self.epoch(ctx, b), topic=TOPIC)
        ctx.nemesis("shutdown", "start", [nb])
        ctx.wait(lambda: (self._state(ctx) or {}).get("isr") == [a], 10, f"ISR [{a}]")
        ctx.step(f"   B stopped: the controller shrinks the ISR to {self._state(ctx)}")
        acked = self.send_acked(ctx, TOPIC, RECORDS)
        ctx.step(f"   produced {len(acked)} records with acks=all to leader A={a}: offsets {acked} (committed, ISR [A])")
        ctx.nemesis("hold_alter_partition", "start", [na])
        ctx.nemesis("shutdown", "stop", [nb])
        e1 = ctx.wait(lambda: self.epoch(ctx, b), 10, "B to register")
        ctx.step(f"1. B restarts (epoch E1 = czxid {e1}) and catches up from A")
        held = ctx.wait_agent_event(a, lambda e: e.f == "alter_partition" and e.value.get("held"), 10,
                                    "A's AlterPartition adding B")
        if held is None:
            return
        ctx.step(f"2. A's AlterPartition {held.value['request_id']} (ISR {held.value['new_isr_with_epochs']}, based on "
                 f"fetch {held.value.get('based_on_fetch')}) is delayed")
        ctx.nemesis("cut", "start", [nb], links=[f"{nb}->{na}"])
        ctx.nemesis("kill", "start", [nb])
        ctx.step("3. B hard-fails (SIGKILL); its link to A is cut so a new B cannot fetch")
        self._gone(ctx, b, 2 * ctx.T + 5)
        ctx.step(f"   B's session expired: /brokers/ids/{b} is gone, the controller fences B")
        ctx.nemesis("wipe", "start", [nb])
        stat = ctx.wait(lambda: ctx.zk().exists(f"/brokers/ids/{b}"), 10, "B to re-register")
        e2 = stat.czxid if stat else None
        ctx.step(f"4./5. B restarts with an EMPTY disk: epoch E2 = czxid {e2}, session "
                 f"{hx(stat.ephemeralOwner if stat else None)}; the controller sees the new registration")
        ctx.sleep(0.5)
        released = ctx.nemesis("hold_alter_partition", "stop", [na])
        reply = (released.detail.get("released") or {}).get(na, {}) if released else {}
        for r in reply.get("replies", []):
            ctx.step(f"6. the delayed AlterPartition {r.get('request_id')} reaches the controller: error "
                     f"{r.get('error_code')}, ISR {r.get('isr')}")
        ctx.step(f"   partition state now {self._state(ctx)}")
        self._fail_leader(ctx, a, b, len(acked), 5)
        ctx.nemesis("cut", "stop", [nb], links=[f"{nb}->{na}"])
        ctx.nemesis("kill", "stop", [na])
        ctx.wait(lambda: self.epoch(ctx, a), 2 * ctx.T + 5, "A to register again")
        done = ctx.invoke("queue", "final_read", topic=TOPIC, partition=0)
        ctx.step(f"8. A restarts; final read of {TOPIC}-0 ({done.type}) from leader {done.value.get('leader')}: "
                 f"offsets {done.value.get('offsets')} of {len(acked)} acknowledged")


    def play_on_kafka(self, ctx: RunContext) -> None:  # noqa: PLR0915 - one JIRA schedule, step by step
        """The story on released brokers: the agents' hooks become Kafka proxy rules (``kafka_rules``):
        A's AlterPartition is held on the wire, and the restarted B's fetches to A are dropped there
        (broker to broker traffic has no Toxiproxy link). What the agents say of themselves is read
        from ZooKeeper (partition state, registrations) and from the proxy's frames."""
        wire = self.wire(ctx)
        c = self.controller(ctx)
        a, b = sorted(x for x in self.brokers if x != c)[:2]
        na, nb = ctx.node(a), ctx.node(b)
        made = ctx.invoke("admin", "create_topic", topic=TOPIC, replicas={0: [a, b]})
        ctx.step(f"0. controller is broker {c}; created {TOPIC}-0 with replicas [A={a}, B={b}]: {made.type} "
                 f"{made.value.get('replicas') or made.value.get('error')}")
        if made.type != "ok" or not ctx.wait(lambda: (self._state(ctx) or {}).get("isr") == [a, b], 60, f"ISR [{a}, {b}]"):
            return
        ctx.nemesis("shutdown", "start", [nb])
        if not ctx.wait(lambda: (self._state(ctx) or {}).get("isr") == [a], 60, f"ISR [{a}]"):
            return
        ctx.step(f"   B stopped (controlled shutdown): the controller shrinks the ISR to {self._state(ctx)}")
        acked = self.send_acked(ctx, TOPIC, RECORDS)
        ctx.step(f"   produced {len(acked)} records with acks=all to leader A={a}: offsets {acked} (committed, ISR [A])")
        mark = max((f["seq"] for f in wire.poll()), default=0)
        ctx.nemesis("kafka_rules", "start", rules=[hold_alter_partition_rule(a, HOLD_CAP_MS)])
        ctx.nemesis("shutdown", "stop", [nb])
        e1 = ctx.wait(lambda: self.epoch(ctx, b), KAFKA_START_S, "B to register")
        ctx.step(f"1. B restarts (epoch E1 = czxid {e1}) and catches up from A")
        held = ctx.wait(lambda: wire.find(lambda v: v.get("api") == "AlterPartition" and v.get("kind") == "request"
                                          and v.get("action") == "hold", mark), 60, "A's AlterPartition adding B")
        if not held:
            return
        isr = next((p.get("isr") for p in held.get("partitions") or []), None)
        ctx.step(f"2. A's AlterPartition {held.get('conn')}:{held.get('correlation_id')} (v{held.get('api_version')}, "
                 f"new ISR {isr}, broker_epoch {held.get('broker_epoch')}) is held on the wire (at most "
                 f"{HOLD_CAP_MS / 1000:.0f} s)")
        ctx.nemesis("kafka_rules", "start", rules=[cut_fetch_rule(b, a)])
        ctx.nemesis("kill", "start", [nb])
        ctx.step("3. B hard-fails (SIGKILL); its fetches to A are dropped from now on, so a new B cannot fetch")
        if not self._gone(ctx, b, 2 * ctx.T + 5):
            return
        ctx.step(f"   B's session expired: /brokers/ids/{b} is gone, the controller fences B")
        mark = max((f["seq"] for f in wire.poll()), default=0)
        ctx.nemesis("wipe", "start", [nb])
        stat = ctx.wait(lambda: ctx.zk().exists(f"/brokers/ids/{b}"), KAFKA_START_S, "B to re-register")
        e2 = stat.czxid if stat else None
        ctx.step(f"4. B restarts with an EMPTY log dir: epoch E2 = czxid {e2}, session "
                 f"{hx(stat.ephemeralOwner if stat else None)}")
        # the controller has processed the registration once it sends B a LeaderAndIsr with E2
        # (onBrokerStartup); before that it would refuse the expansion (B not live, KIP-841)
        lai = ctx.wait(lambda: wire.find(lambda v: v.get("api") == "LeaderAndIsr" and v.get("kind") == "request"
                                         and v.get("dst_broker") == b and v.get("broker_epoch") == e2, mark),
                       15, "the controller's LeaderAndIsr to the new B")
        if lai:
            ctx.step(f"5. the controller saw the new registration: LeaderAndIsr to B with broker_epoch {e2}; B's "
                     "fetches to A are dropped, its log stays empty")
        mark = max((f["seq"] for f in wire.poll()), default=0)
        released = ctx.nemesis("kafka_rules", "stop", rule_ids=[HOLD_RULE])
        n = (released.detail or {}).get("released") if released else None
        if n == 0:  # B's restart outlasted the hold: the request went on its own, before B was live again
            ctx.step(f"   the hold had let A's AlterPartition go by itself ({HOLD_CAP_MS / 1000:.0f} s) before B was "
                     "live again: the controller has judged it without the new B (a slower restart than the story "
                     "needs; its answer is in the history)")
        reply = ctx.wait(lambda: wire.find(lambda v: v.get("api") == "AlterPartition" and v.get("kind") == "response",
                                           mark), 10, "the controller's answer to the AlterPartition")
        if reply:
            answered = [{k: p.get(k) for k in ("partition", "error", "leader", "leader_epoch", "isr", "partition_epoch")
                         if p.get(k) is not None} for p in reply.get("partitions") or []]  # the topic is an id here
            ctx.step(f"6. the held AlterPartition ({n} released) reaches the controller: error "
                     f"{reply.get('error') or 'NONE'}, {TOPIC}: {answered}")
        ctx.step(f"   partition state now {self._state(ctx)}")
        self._fail_leader(ctx, a, b, len(acked), 15)
        ctx.nemesis("kill", "stop", [na])
        ctx.wait(lambda: self.epoch(ctx, a), KAFKA_START_S, "A to register again")
        ctx.nemesis("kafka_rules", "stop")
        done = ctx.invoke("queue", "final_read", topic=TOPIC, partition=0)
        ctx.step(f"8. A restarts; final read of {TOPIC}-0 ({done.type}): offsets {done.value.get('offsets')} of "
                 f"{len(acked)} acknowledged (partition state {self._state(ctx)})")


SCENARIO = Kafka14139(
    id="KAFKA-14139",
    title="empty-disk replica joins the ISR via a delayed AlterPartition; committed data lost on failover",
    jira="KAFKA-14139",
    story=__doc__ or "",
    checkers=["isr_expansion", "queue_lost_write"],
    bug_toggles={"isr_epoch_check": "off"},
    fixed_toggles={"isr_epoch_check": "kip903"},
    brokers=[1, 2, 3],
    extra={"replica_lag_time_max_ms": 30000},  # Kafka's default replica.lag.time.max.ms
    needs_spark=True,  # isr_expansion runs on Spark: warm the JVM while the cluster starts
    # Real brokers: the ZooKeeper-mode controller has no KIP-903 in any release (KIP-903 is KRaft's), so
    # the story reproduces on every release with AlterPartition (AlterIsr from 2.7); the hold and the cut
    # are Kafka proxy rules (kafka_rules), the records go through confluent-kafka
    not_on_kafka=None,
    kafka_proxy=True,
    kafka_fixed_in=None,
    kafka_since=("2.7.0", "before it a leader writes its ISR changes to ZooKeeper itself (AlterIsr is KIP-497's, "
                          "2.7): there is no request to hold"),
)
