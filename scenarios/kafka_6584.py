"""KAFKA-6584 / ZOOKEEPER-2985: session expiry concurrent with a ZooKeeper leader failover.

The story of the JIRA (and ZOOKEEPER-2985): B registered under S1 on a 3-node ensemble; partition B from ZooKeeper
longer than T. The followers are paused first (SIGSTOP), so when the leader's tracker expires S1
its closeSession proposal cannot commit (the scenario's ensemble runs with a long ``syncLimit`` so
the leader keeps leading meanwhile). B reconnects — to the leader only — and learns
SESSIONEXPIRED. The leader is then killed with the closeSession uncommitted, the followers resume
and elect a new leader, whose tracker re-tracks every persisted session with a fresh timeout: S1
and /brokers/ids/B are revived for about T. B opens S2 and its registration multi gets NODEEXISTS
owned by S1. Before 2.2 (``registration=pre_2_2``) that is a permanent failure (O ≠ C) and B stays
unregistered once S1 re-expires: ``registration_liveness`` fires. Since 2.2 (KAFKA-7165,
``registration=3x``) O == R ≠ C, so B deletes the node and re-creates it.
"""

from __future__ import annotations

import shlex
import time
from typing import Any

from harness.context import RunContext
from scenarios.base import Scenario
from scenarios.timeline import hx

TARGET = 2


def met_revived(events: list[Any], after_seq: int, s1: int) -> bool:
    """An agent's registration after event ``after_seq`` met ``/brokers/ids/B`` owned by S1: refused
    NODEEXISTS with owner S1 (before 2.2) or deleting it first (KAFKA-7165, since 2.2)."""
    return any(e.seq > after_seq and (e.value or {}).get("owner") == s1
               and ((e.f == "register" and e.type == "fail") or e.f == "register_delete") for e in events)


class Kafka6584(Scenario):
    def play(self, ctx: RunContext) -> None:  # noqa: PLR0915 - one JIRA schedule, step by step
        zk, ens = ctx.zk(), ctx.cluster.ensemble
        node = ctx.node(TARGET)
        path = f"/brokers/ids/{TARGET}"
        reg = ctx.wait_agent_event(TARGET, lambda e: e.f == "register" and e.type == "ok", 20, "registration",
                                   needed=True)
        if reg is None:
            return
        # the session that owns the znode, from ZooKeeper itself: a real broker before 2.2 logs none
        stat = zk.exists(path)
        s1 = stat.ephemeralOwner if stat else reg.value.get("session_id") or 0
        ens.wait_ready(30)  # one leader, the rest followers: a warm ensemble may still be settling
        leader = ens.leader()
        if leader is None:
            raise RuntimeError("no ZooKeeper leader")
        followers = [n for n in ens.nodes if n is not leader]
        lname, fnames = leader.member.name, [f.member.name for f in followers]
        ctx.step(f"1. broker {TARGET} registered under S1={hx(s1)}, epoch = czxid {stat.czxid if stat else '?'}; "
                 f"ZooKeeper leader {lname}, followers {fnames}")
        ctx.nemesis("isolate", "start", [node])
        ctx.step(f"2. partition broker {TARGET} from ZooKeeper for longer than T = {ctx.T * 1000:.0f} ms")
        ctx.sleep(0.3)
        ctx.nemesis("pause", "start", fnames)
        ctx.step(f"   pause the followers {fnames} (SIGSTOP): the leader's closeSession for S1 cannot commit")
        needle = f"Expiring session {s1:#x}"

        def expired() -> bool:
            res = leader.remote.run(f"grep -c {shlex.quote(needle)} {shlex.quote(leader.member.logfile)}", timeout=5)
            return res.stdout.strip() not in ("", "0")

        if not ctx.wait(expired, 2 * ctx.T + 5, "the leader to expire S1", poll=0.05, needed=True):
            return
        ctx.step(f"   leader {lname} logged '{needle}, timeout … exceeded': S1 is closing, closeSession uncommitted")
        to_followers = [f"{node}->{f}" for f in fnames]
        # A partial heal: the links to the followers stay cut, the one to the leader heals.
        ctx.nemesis("cut", "start", [node], links=to_followers)
        ctx.nemesis("isolate", "stop", [node])
        ctx.step(f"3. broker {TARGET} may reach the leader only: it reconnects with S1 and gets SESSIONEXPIRED")
        # an agent says "lost"; a real broker's ZooKeeper client logs the expiry ("expired")
        lost = ctx.wait_agent_event(TARGET, lambda e: e.f == "session" and e.value.get("state") in ("lost", "expired")
                                    and e.value.get("session_id", s1) == s1, 8, "SESSIONEXPIRED at the broker",
                                    needed=True)
        if lost is None:
            return
        ctx.nemesis("kill", "start", [lname])
        ctx.nemesis("pause", "stop", fnames)
        ctx.nemesis("cut", "stop", [node], links=to_followers)
        ctx.step(f"4. kill the ZooKeeper leader {lname} before the closeSession commits; resume {fnames}; heal links")

        def new_leader() -> str | None:
            for f in followers:
                try:
                    if f.mode() == "leader":
                        return f.member.name
                except OSError:
                    pass
            return None

        nl = ctx.wait(new_leader, 15, "a new ZooKeeper leader", poll=0.1, needed=True)
        stat = zk.exists(path)
        ctx.step(f"   new leader {nl}: its tracker re-tracks S1 with a fresh timeout; {path} "
                 + (f"revived, owner {hx(stat.ephemeralOwner)}" if stat else "is gone"))
        outcome = ctx.wait_agent_event(TARGET, lambda e: e.f == "register" and e.type in ("ok", "fail")
                                       and e.seq > reg.seq, 10, "the re-registration outcome", needed=True)
        if outcome is not None and ctx.spec.kafka is None and not met_revived(ctx.agent_events(TARGET), reg.seq, s1):
            # the race went the other way: the new leader's tracker expired S1 again before the
            # broker's new session re-registered (about T after the election), so nothing was revived
            ctx.gap(f"broker {TARGET} re-registered after S1's revival ended: its registration met no znode "
                    f"owned by S1={hx(s1)}")
        ctx.step("5. broker opens S2 and sends the registration multi (NODEEXISTS, owner S1: see the broker's lines)")
        ctx.nemesis("kill", "stop", [lname])
        ctx.step(f"   restarted {lname}: it rejoins as a follower (its uncommitted closeSession is truncated)")
        ctx.sleep(ctx.liveness_deadline() - time.time())
        final = zk.exists(path)
        ctx.step(f"   now: {path} " + (f"czxid {final.czxid}, owner {hx(final.ephemeralOwner)}" if final else
                                       "does not exist"))
        ens.wait_ready(30)


SCENARIO = Kafka6584(
    id="KAFKA-6584",
    title="session expiry during a ZooKeeper leader failover revives the old session; pre-2.2 never re-registers",
    jira="KAFKA-6584",
    story=__doc__ or "",
    checkers=["registration_liveness"],
    bug_toggles={"registration": "pre_2_2"},
    fixed_toggles={"registration": "3x"},
    brokers=[1, 2],
    margin_ms=3000,
    zk_overrides={"sync_limit": 100},  # 20 s at tick 200 ms: the leader keeps leading with followers paused
    # Real brokers: the same faults; S1 read from the znode's owner, the expiry from the broker's log,
    # and (before 2.2, whose log gives a registration no epoch) the registrations' sessions and czxids
    # from the ZooKeeper wire proxy every real-broker repro runs (base.kafkalog.with_wire_registrations)
    not_on_kafka=None,
    kafka_fixed_in="2.2.0",  # KAFKA-7165: delete and re-create an ephemeral the broker's own last session owns
)
