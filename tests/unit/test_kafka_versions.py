"""base.components.kafka without a JVM or Maven: versions, coordinates, config, Maven's errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from base.components import Component
from base.components.kafka import (
    KafkaBroker,
    KafkaSettings,
    _maven_error,
    kafka_artifact,
    parse_version,
    render_server_properties,
)
from base.errors import UsageError
from base.remote import LocalRemote


def test_versions_with_zookeeper_mode_only() -> None:
    assert parse_version("3.9.1") == (3, 9, 1) and parse_version("2.0.0") == (2, 0, 0)
    for bad, says in (("4.0.0", "no ZooKeeper mode"), ("4.1.0", "no ZooKeeper mode"), ("1.1.1", "before 2.0"),
                      ("3.9", "MAJOR.MINOR.PATCH"), ("latest", "MAJOR.MINOR.PATCH"), ("3.9.1-rc1", "MAJOR")):
        with pytest.raises(UsageError, match=says):
            parse_version(bad)


def test_maven_coordinates_follow_the_scala_builds() -> None:
    assert kafka_artifact("3.9.1") == "org.apache.kafka:kafka_2.13:3.9.1"
    assert kafka_artifact("2.4.0") == "org.apache.kafka:kafka_2.13:2.4.0"
    assert kafka_artifact("2.3.1") == "org.apache.kafka:kafka_2.12:2.3.1"


def test_server_properties() -> None:
    s = KafkaSettings("3.9.1", "127.0.0.1:2181,127.0.0.1:2182/k", session_timeout_ms=3000, extra={"x.y": "1"})
    props = dict(line.split("=", 1) for line in render_server_properties(2, "127.0.0.22", 9093, "/w/data", s)
                 .splitlines())
    assert props["broker.id"] == "2" and props["listeners"] == "PLAINTEXT://127.0.0.22:9093"
    assert props["advertised.listeners"] == props["listeners"] and props["log.dirs"] == "/w/data"
    assert props["zookeeper.connect"] == "127.0.0.1:2181,127.0.0.1:2182/k"
    assert props["zookeeper.session.timeout.ms"] == "3000" and props["x.y"] == "1"


def test_broker_is_a_component_with_a_small_heap(tmp_path: Path) -> None:
    b = KafkaBroker("kafka1", 1, "127.0.0.1", 9092, LocalRemote(), str(tmp_path), KafkaSettings("3.9.1", "h:1"))
    assert isinstance(b, Component) and b.role == "kafka"
    cmd, env = b.command()
    assert "-Xmx256m" in cmd and "kafka.Kafka" in cmd and f"{tmp_path}/libs/*" in cmd and env is None
    with pytest.raises(UsageError, match="no ZooKeeper mode"):
        KafkaBroker("k", 1, "127.0.0.1", 1, LocalRemote(), str(tmp_path), KafkaSettings("4.0.0", "h:1"))


def test_maven_error_is_one_line() -> None:
    out = ("\x1b[0m\x1b[0m[ERROR] Failed to execute goal on project kafka-3.9.99: Could not resolve dependencies "
           "for project zkfence:kafka-3.9.99:pom:1: org.apache.kafka:kafka_2.13:jar:3.9.99 was not found in "
           "https://repo.maven.apache.org/maven2 during a previous attempt. This failure was cached -> [Help 1]\n"
           "[ERROR] \n[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.\n")
    assert _maven_error(out) == ("org.apache.kafka:kafka_2.13:jar:3.9.99 was not found in "
                                 "https://repo.maven.apache.org/maven2")
    assert _maven_error("") == "no output"


def test_kraft_only_version_exits_254_without_maven() -> None:
    p = subprocess.run([sys.executable, "-m", "base.components.kafka", "fetch", "4.0.0"], capture_output=True,
                       text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert p.returncode == 254 and p.stdout == ""
    assert p.stderr == "harness: Kafka 4.0.0: 4.0 and later have no ZooKeeper mode (KRaft only); use 2.x-3.9.x\n"
