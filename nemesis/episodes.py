"""Episodes: packaged faults that are a short, fixed-shape sequence of existing faults on one randomly
drawn broker, for bugs no single fault reaches (issue 11: a bug toggle the nightly campaign did not
catch is a fault it lacked).

Each episode is the essential fault of a JIRA story (``scenarios/``), without its waits on cluster
state: the story's steps at offsets sized from the session timeout T, so the schedule stays plain
data (``nemesis.packages.package_schedule`` draws their start times and brokers; the final heal
undoes whatever an episode left). Because the offsets are guesses, not observations, an episode can
miss its window (the controller is the drawn broker, a bounce is slower than the offset): it is
then just another harmless fault, and a campaign catches the bug on another draw.

* ``held_bounce`` (KAFKA-7235 a): hold the controller's event thread, bounce broker B, release it
  once B has re-registered:
  a controller that ignores broker epochs misses the bounce (``bounce_handling``).
* ``stale_control`` (KAFKA-7235 b, KAFKA-7186): the controller builds a control request (StopReplica,
  LeaderAndIsr or UpdateMetadata of the queue topic) for B and holds it; B bounces; the request is
  delivered to the new incarnation (``control_request_epochs``, ``max_broker_epoch``).
* ``slow_register`` (KAFKA-9839): B's ZooKeeper links get latency, then B is killed and restarted: the
  controller sees B's new registration and sends it requests carrying the new epoch before B has
  read its own registration's reply (``broker_epoch_check=strict`` rejects them).
* ``lost_connect`` (KAFKA-14845): arm the wire proxy to drop the next ConnectResponse and black-hole
  that connection, then cut B from ZooKeeper for 2T + 1 s: its pipelined re-registration runs under
  a session it never learns (``registration_liveness``). Needs the brokers' pipelining sessions on
  a wire proxy (``NEEDS``: the run starts one when a package has this episode).
* ``empty_rejoin`` (KAFKA-14139): B is shut down (the ISRs shrink), the other brokers hold their
  AlterPartition requests, B restarts and catches up (the held requests add it), B is killed with
  its links to the other brokers cut, its session expires, it restarts with wiped logs, then the
  held requests are released (``isr_expansion``).
* ``revived_session`` (KAFKA-6584, ZOOKEEPER-2985): B is cut from ZooKeeper and the leader's
  followers are paused, so when the leader expires B's session its closeSession cannot commit; B's
  links to the followers stay cut while the one to the leader heals (B learns SESSIONEXPIRED); the
  leader is killed and the followers resumed: the new leader re-tracks the old session, its znode
  is back for about T, and B's new session's registration gets NODEEXISTS owned by it (``registration=
  pre_2_2`` gives up: ``registration_liveness``). Needs an ensemble whose leader keeps leading with
  its followers paused (``sync_s``: a long ``syncLimit``, set by the run, ``harness run --zk``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nemesis.base import FaultOp
from nemesis.registry import CONTROL_KINDS
from nemesis.zkproxy_faults import lost_connect_rule

# The queue workload's topic (workloads/queue.py): the partitions the held control requests name.
QUEUE_TOPIC, QUEUE_PARTITIONS = "queue", 3

ORPHAN_RULE = lost_connect_rule("lost-connect", "lose the next createSession reply on a pipelined connection, "
                                 "then black-hole it")


@dataclass(frozen=True)
class Cluster:
    """What an episode is sized and aimed with: the brokers' node names and T in seconds."""

    brokers: tuple[str, ...]
    T: float = 3.0


Timed = list[tuple[float, FaultOp]]  # (seconds after the episode starts, op)


def held_bounce(rng: random.Random, c: Cluster) -> Timed:
    b = rng.choice(c.brokers)
    return [(0.0, FaultOp("hold_controller", "start", [], {"spec": "controller", "seed": rng.randrange(2**16)})),
            (0.3, FaultOp("bounce", "start", [b])),
            # released once B has re-registered: released earlier, the controller would see B gone, then
            # back (a failure and a startup, no bounce to miss). Steps run one after the other, so a
            # bounce slower than the offset (measured ~6 s on a loaded machine) only delays the release.
            (0.3 + 2 * c.T, FaultOp("hold_controller", "stop", [], {}))]


def stale_control(rng: random.Random, c: Cluster) -> Timed:
    b = rng.choice(c.brokers)
    params = {"spec": "controller", "seed": rng.randrange(2**16), "kind": rng.choice(CONTROL_KINDS), "to": b,
              "topic": QUEUE_TOPIC, "partition": rng.randrange(QUEUE_PARTITIONS)}
    return [(0.0, FaultOp("delay_request", "start", [], params)),
            (0.3, FaultOp("bounce", "start", [b])),
            # delivered after B's new incarnation registered and followed again
            (0.3 + 3 * c.T, FaultOp("delay_request", "stop", [], {}))]


def slow_register(rng: random.Random, c: Cluster) -> Timed:
    b = rng.choice(c.brokers)
    # T/12 each way: the restarted B's connect round trip (T/6) stays inside kazoo's connect timeout
    # (T / number of servers; at T/6 each way B measured no connect until the latency was removed);
    # the controller (undelayed) still acts on B's new znode before B reads the reply (the race shows
    # unforced at startup: a request 20 ms before the registration's reply)
    latency = round(c.T * 1000 / 12)
    return [(0.0, FaultOp("latency", "start", [b], {"latency_ms": latency, "jitter_ms": 0, "kind": "agent-zk"})),
            # SIGKILL, not SIGTERM: a clean stop's ControlledShutdown over the slowed links took 10 s
            # on a loaded machine, and the latency was gone before B registered again. After a
            # SIGKILL B registers once its old session has expired (~T), inside the window.
            (0.2, FaultOp("fast_bounce", "start", [b])),
            (0.2 + 3 * c.T, FaultOp("latency", "stop", [b], {}))]


def lost_connect(rng: random.Random, c: Cluster) -> Timed:
    b = rng.choice(c.brokers)
    cut = 2 * c.T + 1.0  # B's session expires (T) and ZooKeeper deletes its znode
    return [(0.0, FaultOp("zk_rules", "start", [], {"spec": "all-zk", "rules": [dict(ORPHAN_RULE)]})),
            (0.1, FaultOp("isolate", "start", [b])),
            (0.1 + cut, FaultOp("isolate", "stop", [b], {})),
            # the rule stays armed while B re-registers (its pipelined attempt waits T/H for replies)
            (0.1 + cut + c.T, FaultOp("zk_rules", "stop", [], {}))]


def empty_rejoin(rng: random.Random, c: Cluster) -> Timed:
    b = rng.choice(c.brokers)
    others = [x for x in c.brokers if x != b]
    links = [f"{b}->{o}" for o in others]
    # Steps run one after the other, so a slow step delays the next ones and eats the gaps after it:
    # the gaps are sized for a loaded machine (a clean shutdown measured 2.5 s, a restart 1.1 s).
    t_up = 3.0  # B restarts after its controlled shutdown has ended and the ISRs have shrunk
    t_kill = t_up + 5.0  # B has had its LeaderAndIsr and fetched up to the leaders' log ends
    t_wipe = t_kill + 2 * c.T + 1.0  # B's session expired: the controller fenced it
    return [(0.0, FaultOp("shutdown", "start", [b])),
            (t_up - 0.5, FaultOp("hold_alter_partition", "start", list(others))),
            (t_up, FaultOp("shutdown", "stop", [b])),
            (t_kill, FaultOp("cut", "start", [b], {"links": links})),
            (t_kill + 0.1, FaultOp("kill", "start", [b])),
            (t_wipe, FaultOp("wipe", "start", [b])),
            (t_wipe + 0.1, FaultOp("kill", "stop", [b])),  # already started by the wipe: ends the kill's window
            (t_wipe + 1.5, FaultOp("hold_alter_partition", "stop", list(others))),
            (t_wipe + 1.6, FaultOp("cut", "stop", [b], {"links": links}))]


def _revive_times(T: float) -> tuple[float, float, float]:
    """revived_session's heal, kill and restart offsets."""
    # B's session expires T (+ a tick) after its last ping reached a server, at most T + 0.2 s after
    # the cut; 1 s more for a loaded machine
    t_heal = 0.3 + T + 1.0
    # B reconnects (its attempts on the cut follower links time out first: up to ~T) and is told
    # SESSIONEXPIRED by the leader, then tries to open a session the leader cannot commit
    t_kill = t_heal + 2 * T
    # the followers elect a new leader (B's new session and registration follow at once, while the
    # revived session still lives, ~T); the old leader restarts as a follower afterwards
    return t_heal, t_kill, t_kill + 2 * T


def revived_session(rng: random.Random, c: Cluster) -> Timed:
    b = rng.choice(c.brokers)
    t_heal, t_kill, t_restart = _revive_times(c.T)
    to_followers = [f"{b}->zk-followers"]  # resolved when the op runs (nemesis.targets.resolve_links)
    return [(0.0, FaultOp("isolate", "start", [b])),
            (0.3, FaultOp("pause", "start", [], {"spec": "zk-followers"})),
            # a partial heal: B reaches the leader only (the leader's closeSession is still uncommitted)
            (t_heal, FaultOp("cut", "start", [b], {"links": to_followers})),
            (t_heal + 0.05, FaultOp("isolate", "stop", [b], {})),
            (t_kill, FaultOp("kill", "start", [], {"spec": "zk-leader"})),
            # no targets: resume what this episode paused, heal the links it cut, restart what it killed
            (t_kill + 0.05, FaultOp("pause", "stop", [], {})),
            (t_kill + 0.1, FaultOp("cut", "stop", [b], {})),
            (t_restart, FaultOp("kill", "stop", [], {}))]


def revived_session_sync_s(c: Cluster) -> float:
    """How long the leader must keep leading with its followers paused (syncLimit × tickTime above it)."""
    t_heal, t_kill, _ = _revive_times(c.T)
    return t_kill - 0.3 + 2.0  # the pause, and slack for a kill op that runs late on a loaded machine


@dataclass(frozen=True)
class Episode:
    build: Callable[[random.Random, Cluster], Timed]
    earliest: float  # seconds into the run: the queue topic exists and its followers caught up
    needs: frozenset[str] = frozenset()  # "pipeline_zkproxy": every broker's pipelining session on a wire proxy
    help: str = ""
    # seconds the ZooKeeper leader must keep leading with no follower answering (syncLimit × tickTime
    # must be longer, else the episode is harmless); None: any ensemble
    sync_s: Callable[[Cluster], float] | None = None
    # every step is a link, process or wire-proxy fault, none an agent hook: it runs on real Kafka
    # brokers too (``harness run --brokers kafka:VERSION``; "pipeline_zkproxy" there means every
    # broker's ZooKeeper connections on a wire proxy)
    on_kafka: bool = False


EPISODES: dict[str, Episode] = {
    "held_bounce": Episode(held_bounce, 3.0, help="hold the controller, bounce a broker, release (KAFKA-7235)"),
    "stale_control": Episode(stale_control, 3.0,
                             help="hold a control request for a broker, bounce it, deliver (KAFKA-7235, KAFKA-7186)"),
    "slow_register": Episode(slow_register, 3.0,
                             help="slow a broker's ZooKeeper replies, bounce it (KAFKA-9839)"),
    "lost_connect": Episode(lost_connect, 2.0, frozenset({"pipeline_zkproxy"}), on_kafka=True,
                            help="lose a pipelined re-registration's ConnectResponse after an expiry (KAFKA-14845)"),
    "empty_rejoin": Episode(empty_rejoin, 2.0,
                            help="held AlterPartition + a broker killed and restarted with wiped logs (KAFKA-14139)"),
    "revived_session": Episode(revived_session, 3.0, sync_s=revived_session_sync_s, on_kafka=True,
                               help="a broker's session expires at a leader whose followers are paused, the leader "
                                    "dies, the new one revives the session (KAFKA-6584; needs a long sync_limit)"),
}


def duration(name: str, c: Cluster) -> float:
    """The episode's length: its last step's offset (the same for every draw)."""
    return max(t for t, _ in EPISODES[name].build(random.Random(0), c))


def sync_error(faults: Sequence[str], c: Cluster, tick_ms: int, sync_limit: int) -> str | None:
    """Why an ensemble of this ``tickTime``/``syncLimit`` would make these episodes harmless, or None."""
    for f in faults:
        ep = EPISODES.get(f)
        if ep is not None and ep.sync_s is not None and sync_limit * tick_ms / 1000 < (need := ep.sync_s(c)):
            ticks = int(need * 1000 // tick_ms) + 1
            return (f"{f} needs the ZooKeeper leader to keep leading {need:.1f}s with its followers paused, and "
                    f"syncLimit × tickTime is {sync_limit} × {tick_ms} ms: set sync_limit = {ticks} or more")
    return None


def agent_only(faults: Sequence[str]) -> list[str]:
    """The episodes among ``faults`` that act through the agents' request hooks (not on real Kafka)."""
    return [f for f in faults if f in EPISODES and not EPISODES[f].on_kafka]


def needs(faults: Sequence[str]) -> frozenset[str]:
    """What the run must provide for these packaged faults (e.g. ``pipeline_zkproxy``)."""
    return frozenset().union(*(EPISODES[f].needs for f in faults if f in EPISODES))
