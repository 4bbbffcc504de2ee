"""The bug-catching score's pure part (``bench/mutation.py`` runs it): which toggle values are bugs,
the fixed agent they are set on, and the score of a finished campaign state.

The fixed agent is every fix on: Kafka 3.7's defaults plus PR #13558's registration retries
(``registration=retry14845``, KAFKA-14845) and KIP-903's ISR epoch check (``isr_epoch_check=kip903``,
KAFKA-14139). A mutation sets one bug on top of it (two toggles when the bug needs both:
KAFKA-14845's orphan owner needs the 3.x CheckedEphemeral *and* the pipelined re-registration).
``preferred_controller=true`` (KIP-39, never shipped) is a feature, not a bug: no checker claims it
is wrong, so it is not in the default set (``--toggles preferred_controller=true`` still runs it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.config import ConfigError, parse_toggle_args

FIXED: dict[str, Any] = {"registration": "retry14845", "isr_epoch_check": "kip903"}

# name → the toggles it sets on the fixed agent, and the JIRA it brings back
MUTATIONS: dict[str, tuple[dict[str, Any], str]] = {
    "registration=pre_2_2": ({"registration": "pre_2_2"}, "KAFKA-6584"),
    "registration=3x+pipeline_on_connect=true": ({"registration": "3x", "pipeline_on_connect": True}, "KAFKA-14845"),
    "broker_epoch_check=off": ({"broker_epoch_check": "off"}, "KAFKA-7235"),
    "broker_epoch_check=strict": ({"broker_epoch_check": "strict"}, "KAFKA-9839"),
    "controller_fencing=off": ({"controller_fencing": "off"}, "KAFKA-6082"),
    "isr_epoch_check=off": ({"isr_epoch_check": "off"}, "KAFKA-14139"),
    "max_broker_epoch=true": ({"max_broker_epoch": True}, "KAFKA-7186"),
    "reregister_on_expiry=false": ({"reregister_on_expiry": False}, "broken agent"),
}


def parse_mutations(text: str | None) -> dict[str, dict[str, Any]]:
    """``--toggles``: comma-separated mutations, each ``NAME=VALUE`` or several joined by ``+``
    (``registration=3x+pipeline_on_connect=true``); None → every mutation of ``MUTATIONS``; ``none`` → no
    mutation (the fixed agent's runs only)."""
    if text is None:
        return {name: dict(t) for name, (t, _) in MUTATIONS.items()}
    if text.strip() == "none":
        return {}
    out: dict[str, dict[str, Any]] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        try:
            toggles = parse_toggle_args(item.split("+"), where="--toggles")
        except ConfigError as e:
            raise ValueError(str(e)) from None
        if all(FIXED.get(k) == v for k, v in toggles.items()):
            raise ValueError(f"--toggles {item!r}: that is the fixed agent, not a bug")
        out[item] = toggles
    if not out:
        raise ValueError("--toggles: no toggle given")
    return out


def mutant(toggles: dict[str, Any]) -> dict[str, Any]:
    return {**FIXED, **toggles}


def slug(name: str) -> str:
    """A campaign name for a mutation: ``registration=3x+pipeline...`` → ``mutation-registration-3x-pipeline...``."""
    return "mutation-" + "".join(c if c.isalnum() or c in "._-" else "-" for c in name)


@dataclass(frozen=True)
class ToggleScore:
    name: str
    caught: bool
    checkers: tuple[str, ...]  # of the first invalid run
    first_catch_s: float | None  # campaign start → end of the first invalid run
    runs: int
    unknowns: int
    catching_run: str  # its label ("partition · ... · seed 1"), "" when not caught


@dataclass(frozen=True)
class FixedScore:
    runs: int
    false_alarms: int
    unknowns: int
    checkers: tuple[str, ...]  # that fired on the fixed agent


def toggle_score(name: str, state: dict[str, Any]) -> ToggleScore:
    runs = list(state.get("runs", {}).values())
    first = next((r for r in runs if r["valid"] is False), None)
    unknowns = sum(1 for r in runs if r["valid"] not in (True, False))
    if first is None:
        return ToggleScore(name, False, (), None, len(runs), unknowns, "")
    return ToggleScore(name, True, tuple(first.get("fired") or ()), first.get("t_end_s"),
                       runs.index(first) + 1, unknowns, first.get("label", ""))


def fixed_score(state: dict[str, Any]) -> FixedScore:
    runs = list(state.get("runs", {}).values())
    bad = [r for r in runs if r["valid"] is False]
    fired = sorted({c for r in bad for c in r.get("fired") or ()})
    return FixedScore(len(runs), len(bad), sum(1 for r in runs if r["valid"] not in (True, False)), tuple(fired))


@dataclass(frozen=True)
class ReleaseBug:
    """A bug a released Kafka broker carries, and a randomized campaign that can reach it
    (``bench/mutation_kafka.py``): the campaign's fault sets each get ``fault`` added, and run on
    ``release`` with the brokers' ZooKeeper client ``buggy_socket``/``zk_hosts``; the control runs
    the same campaign where the bug cannot show (``control_release``/``control_socket``)."""

    jira: str
    release: str  # kafka:VERSION that carries the bug
    fault: str  # the packaged fault that reaches it
    checkers: tuple[str, ...]  # the checkers that name it
    buggy_socket: str
    control_release: str
    control_socket: str
    zk_hosts: int | None
    control_why: str  # why the control cannot show the bug


RELEASE_BUGS: dict[str, ReleaseBug] = {
    "KAFKA-14845": ReleaseBug(
        "KAFKA-14845", "kafka:3.9.1", "lost_connect", ("registration_liveness",), "netty", "kafka:3.9.1", "nio", 3,
        "no release fixes it in ZooKeeper mode; the control is the same release with Kafka's default NIO client, "
        "which sends the registration only after the session's reply (the JIRA's precondition: Netty pipelines "
        "it after a lost ConnectResponse)"),
}

# The stories a released broker carries that no randomized fault reaches yet, and why.
RELEASE_BUGS_UNREACHABLE: dict[str, str] = {
    "KAFKA-7235": "needs the controller's requests held and replayed on the wire (the Kafka wire proxy, issue 42)",
    "KAFKA-6584": "its episode (revived_session) runs on 2.1.1 and 2.2.0, but a pre-2.2 broker's log names no "
                  "session or epoch for a registration (broker epochs came with KIP-380 in 2.2), so registration_liveness "
                  "says unknown there; it needs the registrations from the ZooKeeper wire proxy's events (issue 42)",
    "KAFKA-14139": "needs AlterPartition held on the wire (the Kafka wire proxy, issue 42)",
}
