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
"""

from __future__ import annotations

import json
from typing import Any

from agent import znodes as zn
from harness.engine import RunContext
from scenarios.kafka_7235 import BounceBase
from scenarios.timeline import hx
from workloads.base import Client
from workloads.kafka import AdminClient
from workloads.queue import QueueClient

TOPIC = "t14139"
RECORDS = 5


class Kafka14139(BounceBase):
    def clients(self) -> dict[str, Client]:
        return {"admin": AdminClient(), "queue": QueueClient(timeout=3.0, deadline_s=5.0, final_deadline_s=30.0)}

    def _state(self, ctx: RunContext) -> dict[str, Any] | None:
        try:
            data, _ = ctx.zk().get(zn.partition_state_path(TOPIC, 0))
        except Exception:  # noqa: BLE001 - not created yet
            return None
        return json.loads(data)

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
        ctx.nemesis("kill", "start", [na])
        ctx.step("7. A fails (SIGKILL)")
        self._gone(ctx, a, 2 * ctx.T + 5)
        st = ctx.wait(lambda: (s := self._state(ctx)) and s.get("leader") != a and s, 5, "a new leader")
        ctx.step(f"   A's session expired; partition state {st}"
                 + (f": empty B leads, the {len(acked)} acknowledged records are lost"
                    if st and st.get("leader") == b else
                    ": no eligible replica, the partition is offline (unavailable, but nothing acknowledged is lost)"
                    if st and st.get("leader") == -1 else ""))
        ctx.nemesis("cut", "stop", [nb], links=[f"{nb}->{na}"])
        ctx.nemesis("kill", "stop", [na])
        ctx.wait(lambda: self.epoch(ctx, a), 2 * ctx.T + 5, "A to register again")
        done = ctx.invoke("queue", "final_read", topic=TOPIC, partition=0)
        ctx.step(f"8. A restarts; final read of {TOPIC}-0 ({done.type}) from leader {done.value.get('leader')}: "
                 f"offsets {done.value.get('offsets')} of {len(acked)} acknowledged")


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
    not_on_kafka="the story holds an AlterPartition inside the agent and writes through the agent's queue "
                 "protocol; its real-broker variant (the Kafka proxy's delay_alter_partition) is not built yet",
)
