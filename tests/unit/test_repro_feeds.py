"""Every story that runs on released brokers is judged by checkers those brokers feed, on every
release it accepts: a checker given nothing would say valid, and a clean run would read as the fix."""

from __future__ import annotations

import pytest

from harness.commands.repro import unfed_checker
from scenarios import scenarios

SCENARIOS = list(scenarios().values())

VERSIONS = ("2.0.1", "2.1.1", "2.2.0", "2.8.2", "3.9.1")


@pytest.mark.parametrize("sc", [s for s in SCENARIOS if s.not_on_kafka is None], ids=lambda s: s.id)
def test_each_real_broker_storys_checkers_are_fed_on_the_releases_it_accepts(sc) -> None:  # noqa: ANN001
    from base.components.kafka import parse_version

    since = sc.kafka_since[0] if sc.kafka_since else "2.0.0"
    for version in VERSIONS:
        if parse_version(version) >= parse_version(since):
            assert unfed_checker(sc, version) is None, (sc.id, version)


def test_a_story_whose_checker_a_run_cannot_feed_is_refused_with_why() -> None:
    (sc,) = [s for s in SCENARIOS if s.id == "KAFKA-14139"]
    # before 2.7 there is no AlterIsr on the wire (the story's own kafka_since refuses it first)
    assert "isr_expansion cannot judge" in (unfed_checker(sc, "2.6.3") or "")
