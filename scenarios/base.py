"""A JIRA scenario: the agent toggles that bring a bug back and those that fix it, the story told
as a script, and the checkers that must fire — turned into a ``TestSpec`` for the run engine.

The script (``play``) acts only through the run context: nemesis operations (``ctx.nemesis``,
``ctx.heal``) and client operations (``ctx.invoke``); it observes ZooKeeper and the agents' events
to know when the next step of the story is due. The verdict always comes from the checkers over
the recorded history; a scenario never decides it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from harness.context import RunContext
from harness.spec import ANOMALY, VALID, Expectation, KafkaBrokers, TestSpec
from workloads.base import Client


@dataclass
class Scenario:
    id: str
    title: str
    jira: str
    story: str  # what the script does and what goes wrong
    checkers: list[str]  # the checkers that must report the anomaly (and report valid when fixed)
    bug_toggles: dict[str, Any]
    fixed_toggles: dict[str, Any]
    brokers: list[int] = field(default_factory=lambda: [1, 2])
    extra: dict[str, Any] = field(default_factory=dict)
    margin_ms: int = 3000  # registration_liveness margin on top of T
    needs_spark: bool = False  # some checker has no plain-Python driver: start Spark with the cluster
    zk_overrides: dict[str, Any] = field(default_factory=dict)  # ZooKeeper settings for this scenario's ensemble
    pipeline_zkproxy: tuple[int, ...] = ()  # brokers whose pipelining session dials a per-run wire proxy
    # Why the story cannot be told with real Kafka brokers (``--kafka``); None: it can, every broker's
    # ZooKeeper connection then goes through the wire proxy (zkproxy "all").
    not_on_kafka: str | None = "the story needs agent toggles no released broker has"
    # the ZooKeeper client socket the agents' toggles model: `--compare` runs real brokers with it
    agent_zk_socket: str = "nio"
    # ``--kafka`` with neither --zk-socket nor --zk-hosts: the brokers' ZooKeeper client as the JIRA
    # reported it ({"zk_socket": ..., "zk_hosts": ...}), and the flag under which the bug cannot show
    # on a released broker, with why (printed with every real-broker run)
    kafka_as_reported: dict[str, Any] = field(default_factory=dict)
    kafka_clean_flag: tuple[str, str] | None = None
    # the first Kafka release whose ZooKeeper mode carries the fix (scenarios.fixes): from it on a
    # real-broker run expects the checkers valid, before it the anomaly; None: no release does
    kafka_fixed_in: str | None = None
    # the real-broker run puts the brokers' inter-broker listeners behind the Kafka wire proxy
    # (docs/kafkaproxy.md): the story holds, captures or replays the controller's requests there
    kafka_proxy: bool = False
    # the first Kafka release the real-broker story can be told on, and why none before it can
    # (``--kafka`` with an older release is refused: a run there would judge nothing)
    kafka_since: tuple[str, str] | None = None
    # server.properties every broker of the story's real-broker run gets (``KafkaBrokers.properties``):
    # a story whose bug shows only under a broker configuration says so here, in one place
    kafka_properties: dict[str, str] = field(default_factory=dict)
    # the checkers that judge the real-broker run, when not ``checkers`` (a checker the story's
    # broker configuration leaves nothing to decide from, or decides against the released fix)
    kafka_checkers: list[str] | None = None

    def checkers_on_kafka(self) -> list[str]:
        """The checkers of a ``--kafka`` run: ``kafka_checkers`` when given, else ``checkers``."""
        return list(self.checkers if self.kafka_checkers is None else self.kafka_checkers)

    def fixed_on(self, version: str) -> bool:
        """Kafka ``version`` carries this story's fix."""
        from base.components.kafka import parse_version

        return self.kafka_fixed_in is not None and parse_version(version) >= parse_version(self.kafka_fixed_in)

    def clients(self) -> dict[str, Client]:
        """The named clients the script invokes."""
        return {}

    def kafka_clients(self) -> dict[str, Client]:
        """The named clients ``play_on_kafka`` invokes: the same unless a client speaks only the
        agents' protocol (then the story names one that speaks Kafka's)."""
        return self.clients()

    def available(self) -> str | None:
        """None when runnable here, else why not (shown by --list, refused with exit 254): every
        toggle value must be one the agent in this build accepts."""
        from agent.config import TOGGLE_CHOICES, parse_toggle_value

        for toggles in (self.bug_toggles, self.fixed_toggles):
            for k, v in toggles.items():
                if k not in TOGGLE_CHOICES:
                    return f"the agent has no toggle {k!r}"
                if parse_toggle_value(k, v) not in TOGGLE_CHOICES[k]:
                    return f"the agent's toggle {k} has no value {v!r}"
        return None

    def play(self, ctx: RunContext) -> None:
        raise NotImplementedError

    def play_on_kafka(self, ctx: RunContext) -> None:
        """The story on released brokers (``--kafka``): the same script unless a story's faults need
        another form there (the agents' hooks have no equivalent in a real broker)."""
        self.play(ctx)

    def spec(self, fixed: bool, spark: bool = False, kafka: KafkaBrokers | None = None) -> TestSpec:
        """The test for one variant: the bug's toggles expecting the anomaly, or the fix's
        expecting a clean run from the same checkers; with ``kafka``, the same story and checkers
        with real Kafka brokers of that release: the anomaly expected before ``kafka_fixed_in``,
        a clean run from it on."""
        checkers = tuple(self.checkers_on_kafka() if kafka is not None else self.checkers)
        common: dict[str, Any] = dict(
            brokers=list(self.brokers), zk_overrides=dict(self.zk_overrides),
            script=self.play_on_kafka if kafka is not None else self.play,
            clients=self.kafka_clients() if kafka is not None else self.clients(), recovery=False,
            agents_end="kill", checkers=checkers,
            local_check=not (self.needs_spark or spark), margin_ms=self.margin_ms)
        if kafka is not None:
            if fixed:
                raise ValueError("--fixed picks the agents' fix; a release carries its own (--kafka VERSION)")
            released_fix = self.fixed_on(kafka.version)
            if self.kafka_properties:  # the story's broker configuration on top of the flags'
                kafka = replace(kafka, properties=(*kafka.properties, *self.kafka_properties.items()))
            return TestSpec(
                name=f"repro-{self.id}-kafka-{kafka.version}", zkproxy="all", kafka=kafka,
                kafkaproxy=self.kafka_proxy,
                expect=Expectation(VALID if released_fix else ANOMALY, checkers),
                info={"scenario": self.id, "jira": self.jira, "fixed": released_fix,
                      "variant": f"kafka:{kafka.version}"},
                **common)
        return TestSpec(
            name=f"repro-{self.id}{'-fixed' if fixed else ''}",
            toggles=dict(self.fixed_toggles if fixed else self.bug_toggles),
            # no ControlledShutdown on stop: the agents end with SIGKILL after run_end anyway
            agent_extra={"controlled_shutdown": False, **self.extra},
            pipeline_zkproxy=self.pipeline_zkproxy,
            expect=Expectation(VALID if fixed else ANOMALY, tuple(self.checkers)),
            info={"scenario": self.id, "jira": self.jira, "fixed": fixed},
            **common)
