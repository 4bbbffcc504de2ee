"""KAFKA-7235 / KIP-380, the data consequence: a stale LeaderAndIsr rewrites a fast-bounced broker's
high-watermark checkpoint, the broker truncates acknowledged records, and then it is elected leader.

KIP-380: "If the first LeaderAndIsrRequest that a broker processes is sent by the active controller
before its startup, the broker will overwrite the high watermark checkpoint file and may cause
incorrect truncation." Three brokers: the controller C, the leader L and B; topic t7235lw with
partitions 0 and 1, both replicated on [L, B] and led by L.

(1) The queue workload sends records to t7235lw-0 with acks=all (ISR [L, B]): B holds them all and
    stops with them in its checkpoint. (2) C builds a LeaderAndIsr for t7235lw-1 addressed to B's
    current incarnation (broker epoch E1); it is held in the network (``delay_request``).
(3) Fast bounce missed: C's event thread is held, B restarts (E1 → E2), C is released. With
    ``broker_epoch_check=off`` the id set is unchanged, so C sends B nothing: B holds no partition.
(4) The held LeaderAndIsr(E1) for t7235lw-1 reaches B: B applies it, its first request since the
    restart, and rewrites its log directory's ``replication-offset-checkpoint`` from the one
    partition it now holds: t7235lw-0's high watermark is gone from the file.
(5) B's link to L is cut (it cannot fetch again), and C shuts down: the new controller sends every
    live broker a LeaderAndIsr for all its partitions (Kafka's controller failover). B creates
    t7235lw-0, finds no checkpointed high watermark (so 0), becomes L's follower and truncates its
    log to 0: every acknowledged record is gone from B, which is still in the ISR.
(6) L is killed; once its session expires the controller elects B (the ISR's live member).
    A ``final_read`` from B holds none of the acknowledged sends: ``queue_lost_write`` names them,
    the partition states between ack and read and the brokers' epochs, and
    ``control_request_epochs`` the LeaderAndIsr B applied with E1 while its own epoch was E2.

With KIP-380 (``broker_epoch_check=on``) C sees the czxid increase as a bounce and sends B a
LeaderAndIsr with E2 for both partitions before anything else: B reads t7235lw-0's high watermark
from the file it wrote at shutdown, truncates nothing and fetches from L again; the held request
is rejected with STALE_BROKER_EPOCH (77). B is elected after L dies with every acknowledged record.
(Handling the bounce took B out of the ISR until it caught up: step 5 waits for it to be back.)

Where the agent follows Kafka and where it differs: ``agent/hwcheckpoint.py`` (the checkpoint file)
and docs/repro.md. The truncation to the high watermark on becoming a follower is Kafka's for
partitions without leader epochs (``AbstractFetcherThread.truncateToHighWatermark``: message format
before 0.11, or an inter-broker protocol before 0.11.0-IV2); with KIP-101's epoch-based truncation a
2.x broker on the current formats would keep these records.
"""

from __future__ import annotations

import json
from typing import Any

from agent import znodes as zn
from harness.engine import RunContext
from scenarios.kafka_7235 import BUG, FIXED, BounceBase
from workloads.base import Client
from workloads.kafka import AdminClient
from workloads.queue import QueueClient

TOPIC = "t7235lw"
RECORDS = 5


def _names(topic: str, value: Any) -> list[str]:
    return [p for p in (value or []) if p.startswith(f"{topic}-")]


class LostWrite(BounceBase):
    def clients(self) -> dict[str, Client]:
        return {"admin": AdminClient(), "queue": QueueClient(timeout=3.0, deadline_s=5.0, final_deadline_s=30.0)}

    def play(self, ctx: RunContext) -> None:  # noqa: PLR0915 - one story, step by step
        p0, p1 = f"{TOPIC}-0", f"{TOPIC}-1"
        c = self.controller(ctx)
        if c is None:
            return
        ld, b = sorted(x for x in self.brokers if x != c)[:2]
        nc, nl, nb = ctx.node(c), ctx.node(ld), ctx.node(b)
        ctx.invoke("admin", "create_topic", topic=TOPIC, replicas={0: [ld, b], 1: [ld, b]})
        e1 = self.epoch(ctx, b)
        ctx.step(f"0. controller is broker {c}; created {p0} and {p1} with replicas [L={ld}, B={b}] (leader L); "
                 f"B's epoch E1 = czxid {e1}")
        if self.wait_follower(ctx, b, e1, topic=TOPIC) is None:
            return
        acked = self.send_acked(ctx, TOPIC, RECORDS)
        ctx.step(f"1. sent {len(acked)} records to {p0} with acks=all: offsets {acked} acknowledged by "
                 f"ISR [L={ld}, B={b}]")

        held = ctx.nemesis("delay_request", "start", [nc], kind="LeaderAndIsr", to=nb, topic=TOPIC, partition=1)
        req = (held.detail.get("held_requests") or {}).get(nc, {}) if held else {}
        ctx.step(f"2. controller {c} built a LeaderAndIsr {req.get('request_id')} for {p1} to B with broker_epoch "
                 f"{req.get('broker_epoch')}; it is held back (delayed in the network)")

        ctx.nemesis("hold_controller", "start", [nc])
        e2 = self.restart(ctx, b, e1)
        end = next((e for e in reversed(ctx.agent_events(b)) if e.f == "log_end"
                    and e.value.get("topic") == TOPIC and e.value.get("partition") == 0), None)
        ctx.step(f"3. controller {c} held, broker {b} bounced: epoch {e1} → {e2}; it stopped with {p0} at "
                 f"hw {end.value.get('hw') if end else '?'}, leo {end.value.get('leo') if end else '?'} "
                 "(written to its checkpoint at shutdown)")
        ctx.nemesis("hold_controller", "stop", [nc])
        # the first BrokerChange C processes after its release (its events' seq order; C is not restarted)
        rel = ctx.wait_agent_event(c, lambda e: e.f == "controller_release", 5, f"controller {c}'s release")
        seen = ctx.wait_agent_event(
            c, lambda e: rel is not None and e.f == "broker_change" and e.value.get("reason") == "watch"
            and e.seq > rel.seq, 10, f"controller {c} to process B's re-registration")
        bounced = bool(seen and b in (seen.value.get("bounced") or []))
        ctx.step(f"   controller {c} released: BrokerChange processed, bounced {seen.value.get('bounced') if seen else '?'}"
                 + ("" if bounced else ": the bounce is missed, B is sent nothing"))
        if bounced:
            self.wait_follower(ctx, b, e2 or -1, timeout=10, topic=TOPIC)

        sent = ctx.nemesis("delay_request", "stop", [nc])
        replies = (sent.detail.get("delivered") or {}).get(nc, []) if sent else []
        ctx.step(f"4. the held LeaderAndIsr {req.get('request_id')} (broker_epoch {req.get('broker_epoch')}) reaches "
                 f"B (own epoch {e2}): error {[r.get('error_code') for r in replies]}")
        applied = any(r.get("error_code") == 0 for r in replies)
        cp = ctx.wait_agent_event(b, lambda e: e.f == "hw_checkpoint" and p0 in (e.value.get("dropped") or []),
                                  5, f"B's checkpoint to drop {p0}") if applied else None
        if not applied:
            ctx.step(f"   B applied nothing: its checkpoint still holds {p0}")
        if cp is not None:
            ctx.step(f"   B rewrote its replication-offset-checkpoint from what it holds: {cp.value.get('partitions')}; "
                     f"dropped {cp.value.get('dropped')} (hw before {cp.value.get('dropped_hw')})")

        # A bounce C noticed took B out of the ISR until it catches up again: wait for B to be back,
        # or L's death would leave the partition offline instead of telling whether B lost anything.
        st = ctx.wait(lambda: (s := self._state(ctx, 0)) and b in (s.get("isr") or []) and s, 20,
                      f"B in the ISR of {p0}")
        ctx.step(f"   {p0} state {st}: B in the ISR")
        ctx.nemesis("cut", "start", [nb], links=[f"{nb}->{nl}"])
        ctx.nemesis("shutdown", "start", [nc])
        ctx.step(f"5. B's link to L cut (no more fetches); controller {c} shuts down")
        got = ctx.wait_agent_event(
            b, lambda e: e.f == "control_recv" and e.value.get("kind") == "LeaderAndIsr"
            and e.value.get("from") not in (None, c) and e.value.get("outcome") == "applied"
            and p0 in _names(TOPIC, e.value.get("partitions")), 2 * ctx.T + 10,
            f"B to get the new controller's LeaderAndIsr for {p0}")
        if got is None:
            return
        evs = ctx.agent_events(b)
        opened = next((e for e in reversed(evs) if e.f == "log_open" and e.value.get("topic") == TOPIC
                       and e.value.get("partition") == 0), None)
        trunc = next((e for e in reversed(evs) if e.f == "truncate" and e.value.get("topic") == TOPIC
                      and e.value.get("partition") == 0 and opened is not None and e.t_wall >= opened.t_wall), None)
        ctx.step(f"   new controller {got.value.get('from')} sends B LeaderAndIsr {got.value.get('request_id')} "
                 f"(partition errors {got.value.get('partition_errors')})"
                 + (f"; B's replica of {p0} was opened ({opened.id}) with checkpointed="
                    f"{opened.value.get('checkpointed')}, hw {opened.value.get('hw')}, leo {opened.value.get('leo')}"
                    if opened else "")
                 + (f"; follower of L: truncated to {trunc.value.get('to_offset')}, dropping "
                    f"{trunc.value.get('dropped')} records" if trunc else "; nothing truncated"))

        ctx.nemesis("kill", "start", [nl])
        ctx.step(f"6. L={ld} fails (SIGKILL)")
        st = ctx.wait(lambda: (s := self._state(ctx, 0)) and s.get("leader") not in (ld, None) and s,
                      3 * ctx.T + 10, f"a new leader of {p0}")
        ctx.step(f"   partition state of {p0}: {st}"
                 + (": B leads" if st and st.get("leader") == b else ""))
        done = ctx.invoke("queue", "final_read", topic=TOPIC, partition=0)
        ctx.step(f"7. final read of {p0} ({done.type}) from leader {done.value.get('leader')}: offsets "
                 f"{done.value.get('offsets')} of {len(acked)} acknowledged {acked}")
        ctx.nemesis("cut", "stop", [nb], links=[f"{nb}->{nl}"])

    def _state(self, ctx: RunContext, partition: int) -> dict[str, Any] | None:
        try:
            data, _ = ctx.zk().get(zn.partition_state_path(TOPIC, partition))
        except Exception:  # noqa: BLE001 - not created yet
            return None
        return json.loads(data)


SCENARIO = LostWrite(
    id="KAFKA-7235-lost-write",
    title="KIP-380 (d): a stale LeaderAndIsr rewrites a bounced broker's HW checkpoint; it truncates "
          "acknowledged records and is elected leader",
    jira="KAFKA-7235",
    story=__doc__ or "",
    checkers=["control_request_epochs", "queue_lost_write"],
    bug_toggles=BUG,
    fixed_toggles=FIXED,
    brokers=[1, 2, 3],
    extra={"replica_lag_time_max_ms": 30000},  # Kafka's default: L keeps B in the ISR while it is away
    needs_spark=True,
    # Every step has a wire form now (the fast bounce's held notifications, replay_control's captured
    # LeaderAndIsr, kafka_rules' dropped fetches), but the loss needs a follower that truncates to its
    # high watermark on becoming one, which a 2.x broker does only below inter.broker.protocol.version
    # 0.11.0-IV2 (KIP-101); under it 2.2.0 still sees the bounce by czxid but sends no broker epoch
    # (LeaderAndIsr v2 needs 2.2-IV0)
    not_on_kafka=("not built for released brokers: the data loss needs a follower that truncates to its high watermark, "
                  "which a 2.x broker does only with inter.broker.protocol.version below 0.11.0-IV2 (on the default "
                  "formats KIP-101's leader-epoch truncation keeps these records); under that protocol 2.1.1 should "
                  "lose them and 2.2.0, which sees the bounce by czxid but sends no broker epoch, should not. The "
                  "steps have wire forms (the fast bounce's held notifications, replay_control, kafka_rules); the "
                  "story with that broker configuration is not written"),
)
