"""A test is data: what to start, what to do to it, what to check and what to expect.

``harness run`` builds one from its flags, ``harness hunt`` one per searched schedule, ``harness
repro`` one per JIRA scenario and variant; the run engine (``harness.engine``) runs any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workloads.base import NONE, Client, Workload

if TYPE_CHECKING:
    from nemesis.schedule import Schedule

VALID, ANOMALY = "valid", "anomaly"
ZKPROXY_MODES = ("off", "all")
AGENT_ENDS = ("stop", "kill")
# Kafka's ZooKeeper client socket (broker property ``zookeeper.clientCnxnSocket``)
ZK_SOCKETS = {"nio": "org.apache.zookeeper.ClientCnxnSocketNIO", "netty": "org.apache.zookeeper.ClientCnxnSocketNetty"}


@dataclass(frozen=True)
class KafkaBrokers:
    """Run real Apache Kafka brokers (ZooKeeper mode) in place of the Python agents.

    ``zk_socket``: the ZooKeeper client socket the brokers use; ``zk_hosts``: how many servers their
    ``zookeeper.connect`` names (the first N of the ensemble, each through its Toxiproxy link; None:
    all of them); ``properties``: more ``server.properties`` for every broker, as (key, value) pairs
    (a story's broker configuration, ``Scenario.kafka_properties``; a tuple: the spec is hashable)."""

    version: str
    zk_socket: str = "nio"
    zk_hosts: int | None = None
    properties: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.zk_socket not in ZK_SOCKETS:
            raise ValueError(f"zk_socket is one of {', '.join(ZK_SOCKETS)}, not {self.zk_socket!r}")
        if self.zk_hosts is not None and (isinstance(self.zk_hosts, bool) or not isinstance(self.zk_hosts, int)
                                          or self.zk_hosts < 1):
            raise ValueError(f"zk_hosts is a positive integer, not {self.zk_hosts!r}")
        for kv in self.properties:
            if len(kv) != 2 or not all(isinstance(x, str) and x and "\n" not in x for x in kv):
                raise ValueError(f"properties are (key, value) pairs of one-line strings, not {kv!r}")

    def describe(self) -> str:
        hosts = "all" if self.zk_hosts is None else str(self.zk_hosts)
        props = "".join(f", {k}={v}" for k, v in self.properties)
        return f"Kafka {self.version} ({self.zk_socket} ZooKeeper client, {hosts} host(s) in zookeeper.connect{props})"


@dataclass(frozen=True)
class Expectation:
    """``valid``: the named checkers (all when none are named) report valid. ``anomaly``: at least
    one of the named checkers reports invalid."""

    outcome: str = VALID
    checkers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.outcome not in (VALID, ANOMALY):
            raise ValueError(f"an expectation is {VALID!r} or {ANOMALY!r}, not {self.outcome!r}")
        if self.outcome == ANOMALY and not self.checkers:
            raise ValueError("an expected anomaly names the checkers that must report it")

    def describe(self) -> str:
        if self.outcome == ANOMALY:
            return f"the anomaly from {', '.join(self.checkers)}"
        return "a clean run" + (f" ({', '.join(self.checkers)})" if self.checkers else "")


@dataclass
class TestSpec:
    __test__ = False  # not a pytest test class

    name: str  # the store directory: store/<name>/<time>/
    toggles: dict[str, Any] = field(default_factory=dict)  # agent bug toggles (on top of the inventory's)
    brokers: list[int] | None = None  # brokers that run an agent; None: every broker of the inventory
    agent_extra: dict[str, Any] = field(default_factory=dict)  # AgentConfig.extra for every agent
    zk_overrides: dict[str, Any] = field(default_factory=dict)  # ZooKeeper settings for this test's ensemble
    # "all": every agent→ZooKeeper link goes through the ZooKeeper wire proxy (fault zk_rules).
    zkproxy: str = "off"
    # Brokers whose pipelining session (Kafka's Netty client emulation) dials a wire proxy started
    # for the run, while their kazoo session keeps its Toxiproxy links (KAFKA-14845).
    pipeline_zkproxy: tuple[int, ...] = ()
    # The wire proxy's largest frame body (bytes); None: PROXY_MAX_FRAME (jute.maxbuffer default +
    # 1024). Raise it with the servers' jute.maxbuffer.
    zkproxy_max_frame: int | None = None
    # Real Kafka brokers in place of the agents (toggles, agent_extra and pipeline_zkproxy then do
    # not apply: they configure the agent); None: the Python agents.
    kafka: KafkaBrokers | None = None
    # Real Kafka brokers only: their inter-broker (PLAINTEXT) listeners advertised at a Kafka wire
    # proxy started with them (its kafka_frame events in the history; faults hold_control...).
    kafkaproxy: bool = False
    # Real Kafka brokers: every checker → {"fed_from": ...} or {"valid": "unknown", "reason": ...}
    # (checkers.kafka_feeds), the run's results' ``feeds``; ``checkers`` are the fed ones.
    feeds: dict[str, dict[str, str]] = field(default_factory=dict)
    workload: Workload = NONE
    schedule: Schedule | None = None  # timed nemesis steps
    # A scripted story (a JIRA's), called with the run's ``harness.context.RunContext``: it acts only
    # through ``ctx.nemesis`` and ``ctx.invoke``.
    script: Callable[[Any], None] | None = None
    clients: dict[str, Client] = field(default_factory=dict)  # named clients the script invokes
    time_limit: float = 20.0  # seconds of schedule and workload
    recovery: bool = True  # a final heal, then T + margin + 1 s, before run_end
    agents_end: str = "stop"  # "stop" (SIGTERM: sessions close) or "kill" (SIGKILL, after run_end: faster)
    checkers: tuple[str, ...] | None = None  # None: every checker
    local_check: bool = False  # checkers with a plain-Python driver run without Spark
    expect: Expectation | None = None  # None: the verdict alone decides the exit code
    margin_ms: int = 3000  # registration_liveness margin on top of the session timeout
    seed: int | None = None
    info: dict[str, Any] = field(default_factory=dict)  # more run.json fields (scenario, JIRA, variant)

    def __post_init__(self) -> None:
        if self.zkproxy not in ZKPROXY_MODES:
            raise ValueError(f"zkproxy is one of {ZKPROXY_MODES}, not {self.zkproxy!r}")
        if self.zkproxy_max_frame is not None and (
                isinstance(self.zkproxy_max_frame, bool) or not isinstance(self.zkproxy_max_frame, int)
                or not 0 < self.zkproxy_max_frame < 2**31):
            raise ValueError(f"zkproxy_max_frame is an integer in [1, 2^31), not {self.zkproxy_max_frame!r}")
        if self.agents_end not in AGENT_ENDS:
            raise ValueError(f"agents_end is one of {AGENT_ENDS}, not {self.agents_end!r}")
        if self.kafkaproxy and self.kafka is None:
            raise ValueError("kafkaproxy sits on real Kafka brokers' inter-broker listeners: it needs kafka")
        if self.kafka is not None and self.pipeline_zkproxy:
            raise ValueError("pipeline_zkproxy drives the agent's Netty emulation; real Kafka brokers reach the "
                             "wire proxy with zkproxy='all'")

    def cluster_shape(self) -> tuple[Any, ...]:
        """Tests of the same shape can share a warm cluster."""
        return (tuple(sorted(self.zk_overrides.items())), self.zkproxy, self.kafka)
