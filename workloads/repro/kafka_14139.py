"""KAFKA-14139: a replica restarted with an empty disk joins the ISR through a delayed AlterPartition.

kafka-semantics.md §5/§8 (KIP-903's motivating sequence), A leads t14139-0 with ISR [A]:
(1) B catches up; (2) A's AlterPartition adding B is delayed (held at A); (3) B hard-fails and is
fenced (its session expires); (4) B restarts with an empty disk (and cannot fetch: its link to A is
cut); (5) the controller sees the new registration; (6) the old AlterPartition arrives: the ZK
controller checks only liveness (``isr_epoch_check=off``), so the empty B enters the ISR —
``isr_expansion`` fires (the expansion rests on a fetch by B's previous incarnation). Then A fails
and the controller elects B: acknowledged (acks=all) records are gone. With KIP-903
(``isr_epoch_check=kip903``) the stale entry is rejected with INELIGIBLE_REPLICA (107) and the
partition goes offline instead of losing data.
"""

from __future__ import annotations

import json
from typing import Any

from history import EventWriter
from workloads.repro.framework import RunContext
from workloads.repro.kafka_7235 import BounceBase
from workloads.repro.timeline import hx

TOPIC = "t14139"
RECORDS = 5


class Kafka14139(BounceBase):
    def _state(self, ctx: RunContext) -> dict[str, Any] | None:
        from agent import znodes as zn

        try:
            data, _ = ctx.zk().get(zn.partition_state_path(TOPIC, 0))
        except Exception:  # noqa: BLE001 - not created yet
            return None
        return json.loads(data)

    def _gone(self, ctx: RunContext, b: int, timeout: float) -> bool:
        zk = ctx.zk()
        return bool(ctx.wait(lambda: zk.exists(f"/brokers/ids/{b}") is None, timeout, f"broker {b}'s znode to go"))

    def play(self, ctx: RunContext) -> None:  # noqa: PLR0915 - one JIRA schedule, step by step
        from agent import znodes as zn
        from agent.client import KafkaClient

        cluster, zk = ctx.cluster, ctx.zk()
        c = ctx.wait(lambda: zn.parse_controller_id(zk.get(zn.CONTROLLER)[0]) if zk.exists(zn.CONTROLLER) else None,
                     15, "a controller")
        a, b = sorted(x for x in self.brokers if x != c)[:2]
        zn.create_topic(zk, TOPIC, {0: [a, b]})
        ctx.step(f"0. controller is broker {c}; created {TOPIC}-0 with replicas [A={a}, B={b}]")
        self.wait_follower(ctx, b, zk.exists(f"/brokers/ids/{b}").czxid, topic=TOPIC)
        agent_b = cluster.agent(b)
        agent_b.stop(grace=5.0)
        ctx.wait(lambda: (self._state(ctx) or {}).get("isr") == [a], 10, f"ISR [{a}]")
        ctx.step(f"   B stopped: the controller shrinks the ISR to {self._state(ctx)}")
        addr = f"{ctx.session.inv.broker(a).address}:{cluster.agent_ports[a]}"
        client_ev = EventWriter(ctx.events_dir / "client-1.jsonl", "client:1", ctx.run_id)
        ctx.cleanups.append(client_ev.close)
        kc = KafkaClient({a: addr}, timeout=3.0, events=client_ev, process=1)
        acked = []
        for i in range(RECORDS):
            try:
                acked.append(kc.append(TOPIC, 0, f"v{i}", acks="all", deadline_s=5))
            except Exception as e:  # noqa: BLE001 - recorded as fail/info by the client
                ctx.step(f"   append v{i} failed: {e}")
        ctx.step(f"   produced {len(acked)} records with acks=all to leader A={a}: offsets {acked} (committed, ISR [A])")
        self.admin(ctx, a).call("hold_alter_partition")
        agent_b.start()
        e1 = ctx.wait(lambda: (zk.exists(f"/brokers/ids/{b}") or None) and zk.exists(f"/brokers/ids/{b}").czxid,
                      10, "B to register")
        ctx.step(f"1. B restarts (epoch E1 = czxid {e1}) and catches up from A")
        held = ctx.wait_agent_event(a, lambda e: e.f == "alter_partition" and e.value.get("held"), 10,
                                    "A's AlterPartition adding B")
        if held is None:
            return
        ctx.step(f"2. A's AlterPartition {held.value['request_id']} (ISR {held.value['new_isr_with_epochs']}, based on "
                 f"fetch {held.value.get('based_on_fetch')}) is delayed")
        cut = [f"{ctx.node(b)}->{ctx.node(a)}"]
        cluster.links.cut(cut)
        ctx.nemesis.events.emit("partition", type="info", process="nemesis", stage="complete", phase="start",
                                targets=[ctx.node(b)], links=cut)
        agent_b.kill()
        ctx.step("3. B hard-fails (SIGKILL); its link to A is cut so a new B cannot fetch")
        self._gone(ctx, b, 2 * ctx.T + 5)
        ctx.step(f"   B's session expired: /brokers/ids/{b} is gone, the controller fences B")
        agent_b.wipe_data()
        agent_b.start()
        stat = ctx.wait(lambda: zk.exists(f"/brokers/ids/{b}"), 10, "B to re-register")
        e2 = stat.czxid if stat else None
        ctx.step(f"4./5. B restarts with an EMPTY disk: epoch E2 = czxid {e2}, session "
                 f"{hx(stat.ephemeralOwner if stat else None)}; the controller sees the new registration")
        ctx.sleep(0.5)
        replies = self.admin(ctx, a).call("release_alter_partition").get("replies", [])
        for r in replies:
            ctx.step(f"6. the delayed AlterPartition {r.get('request_id')} reaches the controller: error "
                     f"{r.get('error_code')}, ISR {r.get('isr')}")
        ctx.step(f"   partition state now {self._state(ctx)}")
        agent_a = cluster.agent(a)
        agent_a.kill()
        ctx.step("7. A fails (SIGKILL)")
        self._gone(ctx, a, 2 * ctx.T + 5)
        st = ctx.wait(lambda: (s := self._state(ctx)) and s.get("leader") != a and s, 5, "a new leader")
        ctx.step(f"   A's session expired; partition state {st}"
                 + (f": empty B leads, the {len(acked)} acknowledged records are lost"
                    if st and st.get("leader") == b else
                    ": no eligible replica, the partition is offline (unavailable, but nothing acknowledged is lost)"
                    if st and st.get("leader") == -1 else ""))
        cluster.links.heal()
        ctx.nemesis.events.emit("partition", type="info", process="nemesis", stage="complete", phase="stop",
                                targets=[ctx.node(b)], links=cut)


SCENARIO = Kafka14139(
    id="KAFKA-14139",
    title="empty-disk replica joins the ISR via a delayed AlterPartition; committed data lost on failover",
    jira="KAFKA-14139",
    story=__doc__ or "",
    checkers=["isr_expansion"],
    bug_toggles={"isr_epoch_check": "off"},
    fixed_toggles={"isr_epoch_check": "kip903"},
    brokers=[1, 2, 3],
    extra={"replica_lag_time_max_ms": 30000},  # Kafka's default replica.lag.time.max.ms
    needs_spark=True,  # isr_expansion runs on Spark: warm the JVM while the cluster starts
)
