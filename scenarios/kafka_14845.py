"""KAFKA-14845: a lost createSession reply leaves an orphan session owning /brokers/ids/B.

The JIRA's reproduction: B registered under S1; partition B from ZooKeeper until S1 expires; on
re-registration Kafka's ZooKeeper client (Netty) sends ConnectRequest and the registration multi
back to back (agent toggle ``pipeline_on_connect``, through the ZooKeeper wire proxy); the proxy
drops the ConnectResponse and black-holes the connection (rule ``drop_then_blackhole s2c``), so
the multi runs under a session S2 the broker never learns. The broker's kazoo session S3 then
gets NODEEXISTS with owner S2 ∉ {C=S3, R=S1}: Kafka 3.x gives up (``registration=3x``, the
CheckedEphemeral logic of ``core/src/main/scala/kafka/zk/KafkaZkClient.scala``) and B stays
unregistered after S2 expires — the ``registration_liveness`` checker fires. Fixed: the retries
proposed in apache/kafka PR #13558 (``registration=retry14845``) outlast S2.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.context import RunContext
from history import read_events
from nemesis.zkproxy_faults import lost_connect_rule
from scenarios.base import Scenario
from scenarios.timeline import hx

TARGET = 2

ORPHAN_RULE = lost_connect_rule("kafka-14845-orphan", "lose the reply that creates a new session and everything "
                                 "after it on this connection")


def dropped_sessions(events: Path) -> list[int]:
    """The sessions whose creating ConnectResponse the ZooKeeper wire proxy dropped by ``ORPHAN_RULE``,
    as its event file says so far (a line still being written is skipped)."""
    return [e.value["session_id"] for e in (read_events(events) if events.exists() else [])
            if e.f == "frame" and e.value.get("rule_id") == ORPHAN_RULE["id"]
            and e.value.get("kind") == "connect_resp" and e.value.get("session_id")]


class Kafka14845(Scenario):
    def play(self, ctx: RunContext) -> None:
        node = ctx.node(TARGET)
        zk = ctx.zk()
        path = f"/brokers/ids/{TARGET}"
        kafka = ctx.spec.kafka is not None
        reg = ctx.wait_agent_event(TARGET, lambda e: e.f == "register" and e.type == "ok", 10, "registration",
                                   needed=True)
        s1 = reg.value["session_id"] if reg else None
        ctx.step(f"1. broker {TARGET} registered under S1={hx(s1)}, epoch = czxid "
                 f"{reg.value['czxid'] if reg else '?'} (R = S1), T = {ctx.T * 1000:.0f} ms")
        # Only broker TARGET's pipelining (Netty-emulation) session dials the wire proxy; its kazoo
        # session goes through the Toxiproxy links the partition cuts.
        ctx.nemesis("zk_rules", "start", ctx.zookeepers, rules=[ORPHAN_RULE])
        ctx.step("   wire proxy armed: drop the next ConnectResponse that creates a session, then black-hole "
                 "that connection")
        ctx.nemesis("isolate", "start", [node])
        ctx.step(f"2. partition broker {TARGET} from ZooKeeper (all its ZK links cut) until S1 expires")

        def s1_gone() -> bool:
            stat = zk.exists(path)
            return stat is None or stat.ephemeralOwner != s1

        ctx.wait(s1_gone, 2 * ctx.T + 5, "S1 to expire", needed=True)
        ctx.step(f"   S1={hx(s1)} expired: ZooKeeper deleted {path}")
        # Only the partition ends: the armed proxy rule must still see the re-registration.
        ctx.nemesis("isolate", "stop", [node])
        if kafka:
            ctx.step("3. heal: the broker's ZooKeeper client learns S1 expired and opens a new session; the reply "
                     "creating S2 is lost, the registration multi goes after it only on a Netty socket")
        else:
            ctx.step("3. heal: kazoo learns SESSIONEXPIRED, opens S3; the agent pipelines ConnectRequest + multi "
                     "(S2's reply is lost)")

        def orphan() -> Any:
            stat = zk.exists(path)
            return stat if stat is not None and stat.ephemeralOwner != s1 else None

        stat = ctx.wait(orphan, 6 if not kafka else 2 * ctx.T + 6, "the re-registration", needed=True)
        s2 = stat.ephemeralOwner if stat is not None else None
        if stat is not None:
            ctx.step(f"   {path} re-created: czxid {stat.czxid}, owner {hx(s2)}" + (
                " (whether the broker learnt this session, its log says)" if kafka
                else " — a session the broker never learnt"))
            lost = dropped_sessions(ctx.run_dir / "events" / "zkproxy.jsonl")
            if s2 not in lost:
                # the race went the other way: the reply was lost before the registration was sent
                # (a real broker queues it only once its session expiry is handled), so no session it
                # never learnt owns the znode; or nothing was lost at all
                ctx.gap(f"the registration was not pipelined behind a lost ConnectResponse: {path} is owned by "
                        f"{hx(s2)}, the proxy dropped the replies creating "
                        f"{', '.join(hx(s) for s in lost) or 'no session'}")
        deadline = ctx.liveness_deadline()
        ctx.step(f"4. watch {path} until T + margin ({ctx.T * 1000:.0f} + {self.margin_ms} ms) after the heal "
                 "(the registration_liveness deadline)")
        last = (stat.czxid, stat.ephemeralOwner) if stat is not None else None
        while time.time() < deadline:
            cur = zk.exists(path)
            key = (cur.czxid, cur.ephemeralOwner) if cur is not None else None
            if key != last:
                if cur is None:
                    ctx.step(f"   {path} deleted: owner {hx(last[1] if last else None)} expired")
                else:
                    ctx.step(f"   {path} now czxid {cur.czxid}, owner {hx(cur.ephemeralOwner)}"
                             + (" (the broker's own session)" if cur.ephemeralOwner != s2 else ""))
                last = key
            time.sleep(0.1)
        final = zk.exists(path)
        ctx.step(f"   at the deadline: {path} " + (f"czxid {final.czxid}, owner {hx(final.ephemeralOwner)}" if final
                                                  else "does not exist — the broker is up but unregistered"))

SCENARIO = Kafka14845(
    id="KAFKA-14845",
    title="lost createSession reply: orphan session owns /brokers/ids/B, broker never re-registers",
    jira="KAFKA-14845",
    story=__doc__ or "",
    checkers=["registration_liveness"],
    bug_toggles={"registration": "3x", "pipeline_on_connect": True},
    fixed_toggles={"registration": "retry14845", "pipeline_on_connect": True},
    brokers=[1, 2],
    margin_ms=4000,  # covers PR #13558's retry budget: 4 backoffs of (T + 1 s)/5 = 3.2 s at T = 3 s
    pipeline_zkproxy=(TARGET,),
    not_on_kafka=None,  # a released broker's own ZooKeeper client, through the wire proxy
    agent_zk_socket="netty",  # pipeline_on_connect is the Netty client's behaviour
    # the JIRA's setup: the Netty client (zookeeper.clientCnxnSocket=...ClientCnxnSocketNetty) given
    # several servers, so that a reconnect after the lost reply goes to another one
    kafka_as_reported={"zk_socket": "netty", "zk_hosts": 3},
    kafka_clean_flag=("--zk-socket nio", "Kafka's default NIO client sends the registration only after the "
                      "session's ConnectResponse, so a lost reply cannot leave a session that owns it"),
)
