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

On released brokers (``--kafka VERSION``, ``play_on_kafka``) every broker runs with
``inter.broker.protocol.version`` and ``log.message.format.version`` 0.10.2 (``KAFKA_PROPERTIES``,
through ``Scenario.kafka_properties``): the one configuration under which a 2.x follower truncates to
its high watermark (``ReplicaFetcherThread.isOffsetForLeaderEpochSupported`` is false, so
``AbstractFetcherThread.maybeTruncate`` calls ``truncateToHighWatermark``). Where it follows Kafka:
all of it is the release's own code. B's checkpoint thread starts with its first LeaderAndIsr
(``ReplicaManager.becomeLeaderOrFollower``: ``hwThreadInitialized``) and writes the partitions B holds
(``checkpointHighWatermarks``); a partition the file lacks starts at high watermark 0
(``Partition.getOrCreateReplica``: "No checkpointed highwatermark is found"); 2.2.0's controller
compares czxids whatever the protocol. Where the story differs from the agents':

- the stale request is not held (a held LeaderAndIsr stalls the controller's request thread): the
  Kafka proxy captures the controller's LeaderAndIsr for t7235lw-1 alone, made by adding that
  partition in ZooKeeper as ``AdminZkClient.addPartitions`` does, as it passes to B's first
  incarnation (which applies it), and replays it to the new one (``replay_control``);
- the controller's event thread is not held: the ZooKeeper proxy holds its /brokers/ids
  notifications (the fast bounce's rule), and B is SIGKILLed, its session left to expire, and
  started again. A clean stop would be a controlled shutdown, which the controller handles over the
  Kafka wire: B would leave the ISR, and a controller that missed the bounce never gives it t7235lw-0
  back, so L's death would leave the partition offline instead of losing anything;
- B's link to L is its fetches dropped on the Kafka proxy (``kafka_rules``, KAFKA-14139's rule);
- the checkpoint is written every second (Kafka: 5 s), and L keeps a silent follower in the ISR for
  120 s (``replica.lag.time.max.ms``; Kafka and the agents: 30 s), longer than the story with a JVM's
  restart in it;
- the records go through confluent-kafka without idempotence (the idempotent producer needs message
  format v2); what B does is read from the wire (its fetch offset after the new controller's
  LeaderAndIsr), its checkpoint file and its log;
- only ``queue_lost_write`` judges it: below 2.2-IV0 no control request carries a broker epoch, and a
  2.2 broker takes one that carries none (``KafkaApis.isBrokerEpochStale``: UNKNOWN is never stale).
  On 2.2.0 the replayed LeaderAndIsr v0 is refused for its leader epoch only (STALE_CONTROLLER_EPOCH
  for t7235lw-1: B already holds it at that epoch from the bounce's LeaderAndIsr). KIP-380 protects
  the data there by seeing the bounce: B gets both partitions before the replay, and its checkpoint
  keeps t7235lw-0's high watermark.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from agent import znodes as zn
from base.wait import wait_until
from harness.context import RunContext
from scenarios.kafka_7235 import BUG, FIXED, BounceBase
from scenarios.kafka_14139 import CUT_RULE, KAFKA_START_S, cut_fetch_rule
from scenarios.timeline import hx
from workloads.base import Client
from workloads.kafka import AdminClient
from workloads.kafka_admin import KafkaAdminClient
from workloads.kafka_queue import KafkaQueueClient
from workloads.queue import QueueClient

TOPIC = "t7235lw"
RECORDS = 5
CHECKPOINT_MS = 1000  # replica.high.watermark.checkpoint.interval.ms on the released brokers (Kafka: 5000)
# The released brokers' configuration (Scenario.kafka_properties): below 0.11.0-IV2 a follower has no
# OffsetsForLeaderEpoch (KIP-101) and truncates to its high watermark on becoming one
# (AbstractFetcherThread.truncateToHighWatermark); the message format may not exceed the protocol
# (KafkaConfig refuses it). The checkpoint is written every second instead of every 5 s, so the story
# waits less; L keeps B in the ISR for 2 minutes without a fetch (Kafka: 30 s), longer than the story.
KAFKA_PROPERTIES = {"inter.broker.protocol.version": "0.10.2", "log.message.format.version": "0.10.2",
                    "replica.high.watermark.checkpoint.interval.ms": str(CHECKPOINT_MS),
                    "replica.lag.time.max.ms": "120000"}


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

    def kafka_clients(self) -> dict[str, Client]:
        # idempotence off: the idempotent producer needs message format v2, which 0.10.2 is not
        return {"admin": KafkaAdminClient(), "queue": KafkaQueueClient(idempotence=False, request_timeout_s=3.0,
                                                                        deadline_s=5.0, final_deadline_s=30.0)}

    def _checkpoint(self, ctx: RunContext, b: int) -> dict[str, int] | None:
        """Broker ``b``'s ``replication-offset-checkpoint`` as Kafka wrote it (``topic partition hw`` lines
        after a version and a count): the partition name → its checkpointed high watermark, None unread."""
        broker = ctx.cluster.agent(b)
        got = broker.remote.run(f"cat {shlex.quote(broker.data_dir + '/replication-offset-checkpoint')}")
        if got.exit_code != 0:
            return None
        rows = [line.split() for line in got.stdout.splitlines()[2:]]
        return {f"{r[0]}-{r[1]}": int(r[2]) for r in rows if len(r) == 3 and r[1].isdigit() and r[2].isdigit()}

    def _log_lines(self, ctx: RunContext, b: int, *needles: str) -> list[str]:
        """Broker ``b``'s log lines (this incarnation's) holding any of ``needles``."""
        broker = ctx.cluster.agent(b)
        pattern = " ".join(f"-e {shlex.quote(n)}" for n in needles)
        got = broker.remote.run(f"grep -hF {pattern} {shlex.quote(broker.logfile)}")
        return [line.strip() for line in got.stdout.splitlines()]

    def play_on_kafka(self, ctx: RunContext) -> None:  # noqa: PLR0915 - one story, step by step
        """The story on released brokers configured below inter-broker protocol 0.11.0-IV2
        (``KAFKA_PROPERTIES``). The agents' hooks become wire faults: the partition-1 LeaderAndIsr is
        captured on the Kafka proxy and replayed after the bounce (``replay_control``); the fast bounce
        is missed because the ZooKeeper proxy holds the controller's /brokers/ids notifications while B
        is SIGKILLed, expires and starts again (FastBounce's rule); B's fetches to L are dropped on the
        Kafka proxy (``kafka_rules``, KAFKA-14139's rule). What the agents say of themselves is read
        from ZooKeeper, the proxy's frames, B's checkpoint file and B's log."""
        p0, p1 = f"{TOPIC}-0", f"{TOPIC}-1"
        wire = self.wire(ctx)
        c = self.controller(ctx)
        if c is None:
            return
        ld, b = sorted(x for x in self.brokers if x != c)[:2]
        nl, nb = ctx.node(ld), ctx.node(b)
        made = ctx.invoke("admin", "create_topic", topic=TOPIC, replicas={0: [ld, b]})
        e1 = self.epoch(ctx, b)
        ctx.step(f"0. controller is broker {c}; created {p0} with replicas [L={ld}, B={b}] (leader L): {made.type}; "
                 f"B's epoch E1 = czxid {e1}; every broker on inter.broker.protocol.version 0.10.2 (no leader epochs)")
        if made.type != "ok" or not ctx.wait(lambda: (self._state(ctx, 0) or {}).get("isr") == [ld, b], 60,
                                             f"ISR [{ld}, {b}] of {p0}"):
            return
        acked = self.send_acked(ctx, TOPIC, RECORDS)
        cp = ctx.wait(lambda: (m := self._checkpoint(ctx, b)) and m.get(p0) == len(acked) and m, 20,
                      f"B's checkpoint to hold {p0} at hw {len(acked)}")
        ctx.step(f"1. sent {len(acked)} records to {p0} with acks=all: offsets {acked} acknowledged by ISR "
                 f"[L={ld}, B={b}]; B's replication-offset-checkpoint: {cp}")

        # 2. a LeaderAndIsr for partition 1 only, to B's incarnation E1: the controller's for a new partition
        ctx.nemesis("replay_control", "start", [nb], api="LeaderAndIsr", topic=TOPIC, partition=1)
        zk = ctx.zk()
        data, _ = zk.get(f"{zn.BROKER_TOPICS}/{TOPIC}")
        topic = json.loads(data)
        topic["partitions"]["1"] = [ld, b]  # what AdminZkClient.addPartitions writes (kafka-topics --alter)
        zk.set(f"{zn.BROKER_TOPICS}/{TOPIC}", json.dumps(topic).encode())
        got = ctx.wait(lambda: wire.find(lambda v: v.get("action") == "capture" and v.get("api") == "LeaderAndIsr"),
                       30, f"the controller's LeaderAndIsr for {p1} to B")
        if not got:
            raise RuntimeError(f"no LeaderAndIsr for {p1} was captured: the story did not happen")
        ctx.step(f"2. added {p1} on [L={ld}, B={b}]: the controller's LeaderAndIsr v{got.get('api_version')} for {p1} "
                 f"alone to B (frame {got['seq']}, broker_epoch {got.get('broker_epoch', 'none')}) is captured "
                 "(forwarded, a copy kept: delayed in the network)")

        # 3. the fast bounce the controller misses: FastBounce's hold of its /brokers/ids notifications
        session = self.hold_broker_watch(ctx, "KAFKA-7235 lost write: the controller misses B's bounce")
        # SIGKILL, not a clean stop: a controlled shutdown would take B out of the ISR for good (nobody
        # sends the missed incarnation a LeaderAndIsr for p0), and the loss needs B in the ISR
        ctx.nemesis("kill", "start", [nb])
        gone = ctx.wait(lambda: zk.exists(f"/brokers/ids/{b}") is None, 2 * ctx.T + 5, f"broker {b}'s znode to go")
        mark = max((f["seq"] for f in wire.poll()), default=0)
        ctx.nemesis("kill", "stop", [nb])
        e2 = ctx.wait(lambda: (e := self.epoch(ctx, b)) and e != e1 and e, KAFKA_START_S, f"broker {b} to re-register")
        stat = zk.exists(f"/brokers/ids/{b}")
        ctx.step(f"3. controller {c}'s /brokers/ids notifications held (session {hx(session)}); B SIGKILLed, its "
                 f"session expired{'' if gone else ' (not seen)'}, B started again: epoch E1 = {e1} → E2 = {e2}, "
                 f"session {hx(stat.ephemeralOwner if stat else None)}")
        released = ctx.nemesis("zk_rules", "stop", ctx.zookeepers)
        n = released.detail.get("released") if released is not None else None
        ctx.step(f"   notifications released ({n}): controller {c} reads /brokers/ids once, B in it")
        if self.wait_follower_kafka(ctx, b, mark, timeout=10, topic=TOPIC) is None:
            ctx.step(f"   the bounce is missed: B got no LeaderAndIsr for {p0}; it holds no partition in memory")
        ctx.wait(lambda: b in ((self._state(ctx, 0) or {}).get("isr") or []), 30, f"B in the ISR of {p0}")

        # 4. the captured request is B's first since its restart: the checkpoint thread starts
        replies = self.replay(ctx, b, f"LeaderAndIsr for {p1} (built for E1 = {e1}) to the new incarnation E2 = {e2}")
        errors = sorted({x for r in replies for x in r.get("errors") or []})
        # no broker epoch to judge (v0); a B that holds p1 already (the bounce seen) refuses its leader epoch
        ctx.step(f"   B's answer for {p1}: " + (f"{', '.join(errors)}: B holds {p1} at that leader epoch already, "
                                                 "the request is ignored" if errors else
                                                 "NONE: applied, B's first LeaderAndIsr since its restart"))
        ctx.sleep(2.5 * CHECKPOINT_MS / 1000)  # the thread writes at once, then every interval
        ctx.step(f"   B's replication-offset-checkpoint now: {self._checkpoint(ctx, b)}"
                 f" ({p0} {'kept' if p0 in (self._checkpoint(ctx, b) or {}) else 'dropped'})")

        # 5. B cannot fetch again; the controller moves: the new one sends every live broker its partitions
        ctx.nemesis("kafka_rules", "start", rules=[cut_fetch_rule(b, ld)])
        mark = max((f["seq"] for f in wire.poll()), default=0)
        ctx.nemesis("shutdown", "start", [ctx.node(c)])
        nc = ctx.wait(lambda: (x := self.controller_now(ctx)) not in (None, c) and x, 30, "a new controller")
        ctx.step(f"5. B's fetches to L dropped (Kafka proxy); controller {c} shut down; broker {nc} is the new "
                 "controller")
        lai = ctx.wait(lambda: wire.find(lambda v: v.get("api") == "LeaderAndIsr" and v.get("kind") == "response"
                                         and v.get("dst_broker") == b and any(
                                             p.get("topic") == TOPIC and p.get("partition") == 0
                                             for p in v.get("partitions") or []), mark), 30,
                       f"B to answer the new controller's LeaderAndIsr for {p0}")
        # B's fetch of p0 from then on says where its log ends: a follower added anew (2.1.1: B had no p0)
        # truncates first and fetches at once; a follower kept (same leader) has its fetch, dropped, in flight
        fetch = self._fetch_of(ctx, b, ld, lai["seq"] if lai else mark, wait=5.0) or self._fetch_of(ctx, b, ld, 0)
        offset = next((p.get("fetch_offset") for p in (fetch or {}).get("partitions") or []
                       if p.get("topic") == TOPIC and p.get("partition") == 0), None)
        said = self._log_lines(ctx, b, f"highwatermark is found for partition {p0}",
                               f"Truncating partition {p0}", f"Truncating {p0}")
        which = "next" if fetch and lai and fetch["seq"] > lai["seq"] else "last"
        ctx.step(f"   B answered LeaderAndIsr for {p0} ({(lai or {}).get('error') or 'NONE'}); its {which} "
                 f"fetch of {p0} from L asks from offset {offset}; ISR {(self._state(ctx, 0) or {}).get('isr')}"
                 + "".join(f"\n     B's log: {line}" for line in said[-2:]))

        # 6. L dies; B, the ISR's live member, is elected
        ctx.nemesis("kill", "start", [nl])
        ctx.step(f"6. L={ld} fails (SIGKILL)")
        st = ctx.wait(lambda: (s := self._state(ctx, 0)) and s.get("leader") not in (ld, None) and s,
                      3 * ctx.T + 30, f"a new leader of {p0}")
        ctx.step(f"   partition state of {p0}: {st}" + (": B leads" if st and st.get("leader") == b else ""))
        done = ctx.invoke("queue", "final_read", topic=TOPIC, partition=0)
        ctx.step(f"7. final read of {p0} ({done.type}) from its leader: offsets {done.value.get('offsets')} of "
                 f"{len(acked)} acknowledged {acked}")
        ctx.nemesis("kafka_rules", "stop", rule_ids=[CUT_RULE])

    def _fetch_of(self, ctx: RunContext, b: int, leader: int, after: int, wait: float = 0.0) -> dict[str, Any] | None:
        """B's fetch request for partition 0 to ``leader``: the first past frame ``after`` (waiting up to
        ``wait`` s), or with ``after`` 0 the last one the proxy saw."""
        def fetch(v: dict[str, Any]) -> bool:
            return (v.get("api") == "Fetch" and v.get("kind") == "request" and v.get("src_broker") == b
                    and v.get("dst_broker") == leader
                    and any(p.get("topic") == TOPIC and p.get("partition") == 0 for p in v.get("partitions") or []))

        if after:
            return wait_until(lambda: self.wire(ctx).find(fetch, after), wait, 0.1) or None
        return next((v for v in reversed(self.frames(ctx)) if fetch(v)), None)

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
    # Released brokers: configured below inter-broker protocol 0.11.0-IV2, where a new follower truncates
    # to its high watermark (KAFKA_PROPERTIES); the partition-1 LeaderAndIsr captured and replayed on the
    # Kafka proxy, the bounce missed by holding the controller's notifications on the ZooKeeper proxy,
    # B's fetches dropped on the Kafka proxy. 2.2.0 (KIP-380) sees the bounce by czxid.
    not_on_kafka=None,
    kafka_proxy=True,
    kafka_fixed_in="2.2.0",
    kafka_properties=KAFKA_PROPERTIES,
    # below 2.2-IV0 no control request carries a broker epoch, and a 2.2 broker applies one without it
    # (KafkaApis.isBrokerEpochStale: UNKNOWN is never stale): control_request_epochs would rightly flag
    # the replayed request on 2.2.0 too, which then loses nothing. The data loss is the story's verdict.
    kafka_checkers=["queue_lost_write"],
)
