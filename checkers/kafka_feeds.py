"""Which checkers a run of real Kafka brokers feeds, from what, and why the others cannot decide
(pure; docs/checking.md's table "Checkers on real Kafka brokers" says the same, and a test holds the
two equal).

A broker writes no events of its own: its log (``base.kafkalog``: starts, sessions, registrations),
the observer's znode reads (registrations, and the partition states), the Kafka wire proxy's frames
mapped onto the agents' kinds (``base.kafkawire``: ``control_send``, ``control_recv``,
``controlled_shutdown``, ``controlled_shutdown_handled``; ``fetch``, ``alter_partition``,
``alter_partition_handled``), the ZooKeeper
wire proxy's frames and the workload's Kafka client are what there is. A checker whose inputs none
of them gives is not run: it would find nothing wrong in nothing and say valid. The run lists it
as ``unknown`` with the reason (``results.feeds``); the verdict is over the checkers that ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checkers.project import CHECKER_NAMES
from checkers.result import worst


@dataclass(frozen=True)
class Feed:
    """``fed_from``: what feeds the checker; else ``unknown``: why it cannot decide."""

    fed_from: str | None = None
    unknown: str | None = None

    def as_dict(self) -> dict[str, str]:
        return {"fed_from": self.fed_from} if self.fed_from else {"valid": "unknown", "reason": self.unknown or ""}


KIP_380 = (2, 2)  # broker epochs: registrations and control requests carry them from 2.2
KIP_497 = (2, 7)  # AlterIsr: from 2.7 a leader asks the controller to change its ISR (AlterPartition from 3.2)
ISR_FROM_WIRE = ("Kafka proxy: AlterPartition/AlterIsr requests and answers as alter_partition(_handled), the "
                 "replicas' answered fetches as fetch (based_on_fetch inferred: the replica's last fetch to the "
                 "leader before the request), the committed states and zxids from the observer's reads")
NO_ALTER_ISR = "before 2.7 a leader writes its ISR changes to ZooKeeper itself: no AlterIsr to see"
NO_PROXY = "no Kafka proxy in this run (--kafkaproxy, or one of its faults): the control plane is not seen"
NO_OWNER = "a broker's log names no registration's owner session (register.owner), which it compares"
UNKNOWN: dict[str, str] = {
    "single_registrant": NO_OWNER,
    "controller_write_fencing": "needs the controller's ZooKeeper writes with the /controller_epoch version each "
                                "checked (controller_zk_write): inside the broker's ZooKeeper session, not logged",
    "partition_states": "needs the partition states in ZooKeeper commit (zxid) order: LeaderAndIsr carries them in "
                        "each broker's queue order, which a held or dropped request reorders",
    "max_broker_epoch": "ZooKeeper-mode Kafka has no max-broker-epoch mode (an agents' toggle): no request carries "
                        "MaxBrokerEpoch",
    "zxid_realtime": NO_OWNER,
    "zxid_replay": NO_OWNER,
    "register_linearizable": "the register workload speaks the agents' protocol only",
}
LOG = "broker log (base.kafkalog) and the observer's znode reads"
# KIP-380 (2.2) put broker epochs in the control requests and ControlledShutdown; before it each
# request's epoch is inferred (base.kafkawire: the incarnation it was built for)
PRE_380_EPOCHS = ("; no broker epoch in a request before 2.2 (KIP-380): each request's is its target's (a "
                  "ControlledShutdown's sender's) registration current when it was first sent, from the ZooKeeper "
                  "proxy's creates (broker_epoch_from), and the broker's own from those creates too")
NO_PRE_380_EPOCHS = ("; no broker epoch in a request before 2.2 (KIP-380) and no ZooKeeper proxy (--zkproxy) to infer "
                     "one from: only the controller-epoch cases")
# before 2.2 a registration's log line names neither its epoch nor its session
WIRE_REGISTRATIONS = ("; before 2.2 each registration's session and epoch are the ZooKeeper proxy's create of "
                      "its znode (base.kafkalog.with_wire_registrations)")
NO_WIRE_REGISTRATIONS = "; no session or epoch in the log before 2.2 and no ZooKeeper proxy: it says unknown itself"


def version_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def kafka_feeds(version: str, *, kafkaproxy: bool, zkproxy: bool, queue: bool) -> dict[str, Feed]:
    """Every checker (report order) → how a ``--brokers kafka:VERSION`` run with these feeds it."""
    epochs = version_tuple(version) >= KIP_380
    out: dict[str, Feed] = {}
    for name in CHECKER_NAMES:
        if name in UNKNOWN:
            out[name] = Feed(unknown=UNKNOWN[name])
        elif name in ("registration_epochs", "registration_liveness"):
            out[name] = Feed(LOG + ("" if epochs else WIRE_REGISTRATIONS if zkproxy else NO_WIRE_REGISTRATIONS))
        elif name == "control_request_epochs":
            out[name] = Feed("Kafka proxy: LeaderAndIsr/UpdateMetadata/StopReplica answers as control_recv, the "
                             "broker's own epoch from its log" + ("" if epochs else PRE_380_EPOCHS if zkproxy else
                                                                  NO_PRE_380_EPOCHS)
                             ) if kafkaproxy else Feed(unknown=NO_PROXY)
        elif name == "controlled_shutdown_epochs":
            if not kafkaproxy:
                out[name] = Feed(unknown=NO_PROXY)
            elif not (epochs or zkproxy):  # every epoch it compares would be null: it would say valid of nothing
                out[name] = Feed(unknown="before 2.2 (KIP-380) a ControlledShutdown and the control requests carry "
                                         "no broker epoch, and without the ZooKeeper proxy (--zkproxy) none is inferred")
            else:
                out[name] = Feed("Kafka proxy: the controller's answer to a ControlledShutdown as "
                                 "controlled_shutdown_handled: its cached epoch of the broker = the epoch of the last "
                                 "control request it sent the broker, its leader moves and StopReplicas = its requests "
                                 "from the shutdown request to 1 s after the answer (by time)"
                                 + ("" if epochs else PRE_380_EPOCHS))
        elif name == "bounce_handling":
            out[name] = Feed("the controller's log (each read of /brokers/ids: broker_change), the registrations ("
                             + ("the broker's log" if epochs else "the ZooKeeper proxy's creates" if zkproxy else
                                "none before 2.2 without the ZooKeeper proxy: it says unknown itself")
                             + ") and the Kafka "
                             "proxy's LeaderAndIsr and UpdateMetadata to the re-registered broker (any UpdateMetadata: which "
                             "partitions a full one names is the controller's state, not on the wire)") if kafkaproxy else Feed(unknown=NO_PROXY)
        elif name == "isr_expansion":
            out[name] = (Feed(unknown=NO_ALTER_ISR) if version_tuple(version) < KIP_497 else
                         Feed(ISR_FROM_WIRE) if kafkaproxy else Feed(unknown=NO_PROXY))
        elif name == "controller_epochs":
            out[name] = Feed("the controllers' logs (each election: controller_elected, epochs in order) and the "
                             "Kafka proxy (control requests as control_send: one controller per epoch)"
                             ) if kafkaproxy else Feed(unknown=NO_PROXY)
        elif name == "zxid_session":
            out[name] = Feed("ZooKeeper proxy: the brokers' sessions' reply zxids") if zkproxy else Feed(
                unknown="no ZooKeeper proxy in this run (--zkproxy): no session's frames")
        elif name.startswith("queue_"):
            out[name] = Feed("the queue workload's Kafka client") if queue else Feed(
                unknown="no queue workload in this run (--workload queue)")
        else:
            out[name] = Feed(unknown="not mapped for real Kafka brokers")
    return out


def fed(feeds: dict[str, Feed]) -> tuple[str, ...]:
    return tuple(n for n, f in feeds.items() if f.fed_from)


def judged_by(run: dict[str, Any]) -> tuple[str, ...] | None:
    """The checkers a stored run's own verdict was judged by: its ``run.json``'s ``checkers``, which the
    engine writes from the test it then checks with (``TestSpec.checkers``: a story's real-broker
    checkers, ``Scenario.checkers_on_kafka``, or a ``harness run``'s fed ones); None when it names
    none (null: every checker judged it; or a run.json written without them)."""
    names = run.get("checkers")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        return None
    return tuple(names)


def as_the_run_judged(result: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """``result`` of every checker over a stored run's history (``harness check RUN_DIR``), judged as
    the run was: on a run of real brokers (its ``run.json`` names ``kafka``) only the checkers the run
    judged by count (``judged_by``; a run.json without them: the ones its sources fed, derived from the
    release, the proxies and the workload). The others are left out of the verdict, and ``feeds`` says
    what the run's sources feed, unknown with why (a checker given nothing would say valid). Any other
    run's result is returned as it is: every checker judges an agents' history, so a new checker can
    re-judge old runs.

    The run's own list, not a derivation, because a story picks its real-broker checkers itself
    (``Scenario.kafka_checkers``) and feeds them from its own Kafka client while its run.json says
    workload ``none``: derived, a story's ``queue_lost_write`` went unjudged and a checker it leaves
    out judged."""
    kafka = run.get("kafka")
    if not isinstance(kafka, dict) or not isinstance(kafka.get("version"), str):
        return result
    names = judged_by(run)
    feeds = kafka_feeds(kafka["version"], kafkaproxy=bool(run.get("kafkaproxy")),
                        zkproxy=run.get("zkproxy") not in (None, "off", False) or bool(run.get("pipeline_zkproxy")),
                        # a story's queue checker reads its own Kafka client's events (repro.unfed_checker)
                        queue=run.get("workload") == "queue" or any(n.startswith("queue_") for n in names or ()))
    checkers = result.get("checkers", {})
    if names is None:
        kept = {n: c for n, c in checkers.items() if n not in feeds or feeds[n].fed_from}
    else:  # one this check does not have (renamed since) cannot be judged again: unknown, never left out
        order = [n for n in checkers if n in names] + [n for n in names if n not in checkers]  # report order
        kept = {n: checkers.get(n, {"valid": "unknown", "reason": "the run judged by it; this check has no such "
                                                                    "checker"}) for n in order}
    valid = worst(*(c["valid"] for c in kept.values()))
    if result.get("stats", {}).get("damaged_lines"):  # skipped lines: never more than unknown
        valid = worst(valid, "unknown")
    return {**result, "valid": valid, "checkers": kept,
            "anomalies": [a for a in result.get("anomalies", []) if a.get("checker") in kept],
            "feeds": {n: f.as_dict() for n, f in feeds.items()}}
