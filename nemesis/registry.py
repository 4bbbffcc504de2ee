"""The fault catalogue: one ``FaultSpec`` row per fault, holding every fact the harness knows of it.

Everything else derives from ``FAULTS``: the scripted-schedule parser validates against it, each
nemesis handles the faults of its ``kind`` (``faults_of``), the target resolver takes a fault's
``role`` and ``grudge``, the random packages and ``harness hunt`` draw what the rows allow (in
``hunt`` order), the report draws an ``instant`` fault as a line and any other as a band, ``harness
run`` refuses an ``external_only`` fault on the embedded inventory, and ``harness teardown`` runs
each ``crash_heal`` on the nodes after a crash. A new fault is its handler in its nemesis and one
row here (plus its name in ``history.kinds.FAULTS``: the event contract is shipped to the brokers
and imports nothing of the nemesis, so a test holds the two equal and names what is missing).

Pure data: this module imports nothing of the nemeses (``nemesis.nemeses`` builds them), so that
every module of the package can read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nemesis.nft import HEAL_COMMAND


@dataclass(frozen=True)
class FaultSpec:
    name: str
    kind: str  # the nemesis that handles it (its ``fs`` is ``faults_of(kind)``): link, firewall, process, zkproxy,
    # kafkaproxy, agent
    instant: bool = False  # a single op (no stop phase): the report draws a line, not a band
    params: dict[str, type | tuple[type, ...]] = field(default_factory=dict)
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)
    help: str = ""
    role: str = "any"  # the pool an unsuffixed count spec (one, minority…) draws from: any | broker | zk
    grudge: bool = False  # targets may be a whole-cluster grudge spec (halves, bridge, majorities-ring)
    package: tuple[str, ...] = ()  # the target specs random packages draw from; () = never packaged
    package_default: bool = False  # in `harness run --faults`'s default package
    hunt: int | None = None  # place in `harness hunt`'s default faults (the shrink prefers lower); None: not default
    hunt_zk: bool = False  # the hunt also draws ZooKeeper nodes (and controller, zk-leader) as targets
    external_only: bool = False  # needs nodes that are their own hosts: refused on the embedded inventory
    crash_heal: str = ""  # shell command `harness teardown` runs on every node after a crash (what outlives the run)


NUM = (int, float)
# The Kafka proxy's faults: a held control request is released by itself after at most this long, below
# the ZooKeeper-mode controller's socket timeout (controller.socket.timeout.ms, 30 s), past which it
# reconnects and resends (docs/kafkaproxy.md); and an AlterPartition's default delay.
HOLD_CAP_MS = 25000
ALTER_DELAY_MS = 2000
KAFKA_CONTROL_APIS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")
CONTROL_KINDS = ("StopReplica", "LeaderAndIsr", "UpdateMetadata")  # what a controller's delay_request may build
REPLAY_APIS = (*KAFKA_CONTROL_APIS, "ControlledShutdown")  # what replay_control may capture and replay
_LINK_KIND = {"kind": ("agent-zk", "agent-agent")}
_GRUDGE = {"grudge": ("isolate", "halves", "bridge", "majorities-ring"), "direction": ("both", "one-way")}

FAULTS: dict[str, FaultSpec] = {f.name: f for f in (
    FaultSpec("isolate", "link", params={"stream": str}, choices={"stream": ("both", "upstream", "downstream")},
              help="cut a broker from every ZooKeeper server", package=("one-broker", "controller"), hunt=0),
    FaultSpec("cut", "link", params={"links": list, "stream": str},
              choices={"stream": ("both", "upstream", "downstream")},
              help="cut the named links (b2->zk1, b1->b3); an isolate's stop leaves them cut (a partial heal)"),
    FaultSpec("partition", "link", params={"grudge": str, "direction": str}, choices=_GRUDGE,
              help="a grudge over the link graph", grudge=True,
              package=("one", "one-broker", "zk-leader", "halves", "majorities-ring", "bridge"), package_default=True,
              hunt=2, hunt_zk=True),
    FaultSpec("net_partition", "firewall", params={"grudge": str, "direction": str}, choices=_GRUDGE,
              help="a grudge enforced with nftables on the nodes themselves (ZooKeeper quorum links); "
                   "external inventories only", grudge=True,
              package=("zk-leader", "one-zk", "halves", "majorities-ring"), external_only=True,
              crash_heal=HEAL_COMMAND),
    FaultSpec("latency", "link", params={"latency_ms": NUM, "jitter_ms": NUM, "kind": str}, choices=_LINK_KIND,
              help="delay every byte on links touching the targets", package=("one-broker", "minority-zk")),
    FaultSpec("bandwidth", "link", params={"rate_kb": NUM, "kind": str}, choices=_LINK_KIND,
              help="limit links touching the targets to rate_kb KB/s", package=("one-broker",)),
    FaultSpec("reset_peer", "link", params={"timeout_ms": NUM, "kind": str}, choices=_LINK_KIND,
              help="TCP RST on connections through links touching the targets", package=("one-broker", "one-zk")),
    FaultSpec("slow_close", "link", params={"delay_ms": NUM, "kind": str}, choices=_LINK_KIND,
              help="delay closing connections", package=("one-broker",)),
    FaultSpec("kill", "process", help="SIGKILL; stop restarts",
              package=("one-zk", "minority-zk", "zk-leader", "one-broker", "controller"), package_default=True,
              hunt=3, hunt_zk=True),
    FaultSpec("pause", "process", help="SIGSTOP; stop sends SIGCONT",
              package=("one-zk", "zk-leader", "one-broker", "controller"), package_default=True, hunt=1, hunt_zk=True),
    FaultSpec("shutdown", "process", help="SIGTERM (clean); stop restarts",
              package=("one-broker", "controller", "one-zk"), hunt_zk=True),
    FaultSpec("bounce", "process", instant=True, help="SIGTERM and start again",
              package=("one-broker", "controller"), hunt_zk=True),
    FaultSpec("fast_bounce", "process", instant=True, help="SIGKILL and start again",
              package=("one-broker", "controller", "zk-leader"), hunt_zk=True),
    FaultSpec("wipe", "process", instant=True, role="broker",
              help="SIGKILL, delete the data (a broker's replica logs by default; a ZooKeeper server's "
                   "snapshots when targeted), start", package=("one-broker",), hunt_zk=True),
    FaultSpec("hold_controller", "agent", role="broker",
              help="the target controller's event thread holds its events; stop releases"),
    FaultSpec("hold_alter_partition", "agent", role="broker",
              help="the target partition leader holds its AlterPartition requests; stop releases them"),
    FaultSpec("delay_request", "agent", role="broker", params={"kind": str, "to": str, "topic": str, "partition": int},
              choices={"kind": CONTROL_KINDS},
              help="the target controller builds a control request for broker `to` and holds it; stop delivers it"),
    FaultSpec("zk_rules", "zkproxy", params={"rules": list},
              help="install ZooKeeper wire-proxy rules (docs/zkproxy.md) for connections to the target "
                   "ZooKeeper nodes; needs `harness run --zkproxy`"),
    # the Kafka wire proxy's (real brokers only: `harness run --brokers kafka:VERSION` puts it in the
    # inter-broker path for them); hunt runs agents, so none is a hunt default
    FaultSpec("hold_control", "kafkaproxy", role="broker", params={"hold_ms": NUM},
              help="hold the controller's LeaderAndIsr/UpdateMetadata/StopReplica to the target brokers; stop "
                   f"releases them (each by itself after hold_ms, at most {HOLD_CAP_MS} ms: below the "
                   "controller's 30 s socket timeout)", package=("one-broker",)),
    FaultSpec("drop_control", "kafkaproxy", role="broker",
              help="drop the controller's LeaderAndIsr/UpdateMetadata/StopReplica to the target brokers (the "
                   "controller resends after its 30 s socket timeout); stop removes the rule",
              package=("one-broker",)),
    FaultSpec("replay_control", "kafkaproxy", role="broker",
              params={"api": str, "topic": str, "partition": int, "shutdown_answer_delay_ms": NUM},
              choices={"api": REPLAY_APIS},
              help="capture (and forward) the first request of `api` (default StopReplica) the controller sends "
                   "to the target brokers, or (ControlledShutdown) the targets send; stop replays it on a new "
                   "connection to the broker it went to: a late duplicate. shutdown_answer_delay_ms also delays "
                   "the targets' ControlledShutdown answers (the controller's requests for the shutdown reach "
                   "them before they stop)"),
    FaultSpec("delay_alter_partition", "kafkaproxy", role="broker", params={"delay_ms": NUM},
              help="delay the target brokers' AlterPartition/AlterIsr to the controller by delay_ms (default "
                   f"{ALTER_DELAY_MS} ms); stop removes the rule", package=("one-broker",)),
    FaultSpec("kafka_rules", "kafkaproxy", params={"rules": list, "rule_ids": list},
              help="install Kafka wire-proxy rules (docs/kafkaproxy.md) as given (they carry their own match; "
                   "targets are not used); stop removes them (those in rule_ids only, when given) and releases "
                   "what they hold"),
)}
COMMON_PARAMS: dict[str, type | tuple[type, ...]] = {"seed": int}


def faults_of(kind: str) -> frozenset[str]:
    """The faults one nemesis handles (its ``fs``)."""
    return frozenset(f for f, spec in FAULTS.items() if spec.kind == kind)


def kafka_only() -> frozenset[str]:
    """The faults only real Kafka brokers take (the Kafka proxy's): refused on the agents."""
    return faults_of("kafkaproxy")


def instant_faults() -> frozenset[str]:
    return frozenset(f for f, spec in FAULTS.items() if spec.instant)


def grudge_faults() -> frozenset[str]:
    return frozenset(f for f, spec in FAULTS.items() if spec.grudge)


def roles() -> dict[str, str]:
    """Fault → the pool its unsuffixed count specs draw from, for the faults that do not draw from all."""
    return {f: spec.role for f, spec in FAULTS.items() if spec.role != "any"}


def package_targets() -> dict[str, tuple[str, ...]]:
    """Fault → the target specs random packages draw from, for every packageable fault, in catalogue order."""
    return {f: spec.package for f, spec in FAULTS.items() if spec.package}


def package_defaults() -> tuple[str, ...]:
    return tuple(f for f, spec in FAULTS.items() if spec.package_default)


def hunt_defaults() -> tuple[str, ...]:
    """`harness hunt`'s default faults, in the order its shrink prefers."""
    return tuple(sorted((f for f, spec in FAULTS.items() if spec.hunt is not None), key=lambda f: FAULTS[f].hunt or 0))


def external_only() -> frozenset[str]:
    return frozenset(f for f, spec in FAULTS.items() if spec.external_only)


def crash_heals() -> tuple[str, ...]:
    """The distinct commands `harness teardown` runs on every node of an external inventory after a crash."""
    return tuple(dict.fromkeys(spec.crash_heal for spec in FAULTS.values() if spec.crash_heal))
