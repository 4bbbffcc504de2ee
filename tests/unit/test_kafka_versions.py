"""base.components.kafka without a JVM or Maven: versions, coordinates, config, Maven's errors, which
ZooKeeper client replaces a bundled one, and how a start that ended is told (with ``sh``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from base.components import Component, ProcState
from base.components.kafka import (
    ZK_CLIENT,
    KafkaBroker,
    KafkaSettings,
    _cached,
    _maven_error,
    _pom,
    bundled_zookeeper,
    kafka_artifact,
    parse_version,
    recording_exit,
    render_server_properties,
    start_probe,
    zookeeper_replacement,
)
from base.components.process import RemoteProcess
from base.errors import EnvironmentFailed, UsageError
from base.remote import LocalRemote
from harness.cluster import Cluster


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
    assert "inter.broker.listener.name" not in props


def test_a_client_listener_is_advertised_as_the_clients_link_and_brokers_replicate_over_plaintext() -> None:
    s = KafkaSettings("2.0.1", "h:1", client_listener=(9094, "127.0.0.1:40001"))
    props = dict(line.split("=", 1) for line in render_server_properties(2, "127.0.0.22", 9093, "/w/data", s)
                 .splitlines())
    assert props["listeners"] == "PLAINTEXT://127.0.0.22:9093,CLIENT://127.0.0.22:9094"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.22:9093,CLIENT://127.0.0.1:40001"
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"


def test_the_inter_broker_listener_can_be_advertised_at_a_kafka_proxy() -> None:
    """Each broker listens on its own port; the controller and the replica fetchers connect to the
    advertised address, the Kafka wire proxy's listener for that broker (docs/kafkaproxy.md)."""
    s = KafkaSettings("3.9.1", "h:1", client_listener=(9094, "127.0.0.1:40001"),
                      advertised_plaintext={2: "127.0.0.1:45002"})
    props = dict(line.split("=", 1) for line in render_server_properties(2, "127.0.0.22", 9093, "/w/data", s)
                 .splitlines())
    assert props["listeners"] == "PLAINTEXT://127.0.0.22:9093,CLIENT://127.0.0.22:9094"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:45002,CLIENT://127.0.0.1:40001"
    other = dict(line.split("=", 1) for line in render_server_properties(3, "127.0.0.23", 9095, "/w/data", s)
                 .splitlines())
    assert other["advertised.listeners"].startswith("PLAINTEXT://127.0.0.23:9095,")


def test_what_a_run_leaves_in_a_broker_workdir_is_everything_but_its_jars_and_config() -> None:
    files = KafkaBroker.run_files("/w/b1/kafka")
    assert files == ["/w/b1/kafka/data", "/w/b1/kafka/kafka.log", "/w/b1/kafka/kafka-previous.log",
                     "/w/b1/kafka/kafka.exit"]


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


# the jars Maven resolves for Kafka 2.1.1 (ZooKeeper client 3.4.13) and 3.9.1 (3.8.4), in part
JARS_2_1_1 = ["kafka_2.12-2.1.1.jar", "zkclient-0.11.jar", "zookeeper-3.4.13.jar", "log4j-1.2.17.jar"]
JARS_3_9_1 = ["kafka_2.13-3.9.1.jar", "zookeeper-3.8.4.jar", "zookeeper-jute-3.8.4.jar"]


def test_a_zookeeper_3_4_client_is_replaced_and_no_other() -> None:
    assert bundled_zookeeper(JARS_2_1_1) == "3.4.13" and bundled_zookeeper(JARS_3_9_1) == "3.8.4"
    assert bundled_zookeeper(["zookeeper-jute-3.5.10.jar", "kafka_2.12-2.3.1.jar"]) is None
    assert zookeeper_replacement("3.4.13") == zookeeper_replacement("3.4.14") == ZK_CLIENT[2] == "3.5.10"
    for fine in ("3.5.6", "3.5.7", "3.5.10", "3.8.4", None):  # 3.5 takes the host with getHostString()
        assert zookeeper_replacement(fine) is None


def test_the_replacement_is_a_direct_dependency_next_to_kafka() -> None:
    pom = _pom("2.1.1", "3.5.10")
    kafka = pom.index("<artifactId>kafka_2.12</artifactId><version>2.1.1</version>")
    zk = pom.index("<groupId>org.apache.zookeeper</groupId><artifactId>zookeeper</artifactId><version>3.5.10</version>")
    assert kafka < zk < pom.index("<artifactId>reload4j</artifactId>")
    assert "zookeeper" not in _pom("2.1.1") and "zookeeper" not in _pom("3.9.1")


def test_a_cache_holding_a_3_4_client_is_fetched_again(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    libs.mkdir()
    for name in JARS_2_1_1:
        (libs / name).write_text("")
    assert not _cached(tmp_path, libs)  # no .complete
    (tmp_path / ".complete").write_text("org.apache.kafka:kafka_2.12:2.1.1\n")
    assert not _cached(tmp_path, libs)  # fetched before the replacement existed
    (libs / "zookeeper-3.4.13.jar").rename(libs / "zookeeper-3.5.10.jar")
    assert _cached(tmp_path, libs)
    assert not _cached(tmp_path, tmp_path / "none")


def _broker(tmp_path: Path) -> KafkaBroker:
    return KafkaBroker("kafka1", 1, "127.0.0.1", 9092, LocalRemote(), str(tmp_path), KafkaSettings("2.1.1", "h:1"))


def test_start_probe_tells_started_starting_and_exited(tmp_path: Path) -> None:
    b, sh = _broker(tmp_path), LocalRemote()
    Path(b.logfile).write_text("[2026-11-27 20:00:00,000] INFO starting (kafka.server.KafkaServer)\n")
    probe = start_probe(b.started_marker, b.logfile, b.pidfile)
    assert sh.run(probe).stdout == "exited\n"  # no pid file: nothing runs
    Path(b.pidfile).write_text(f"{os.getpid()}\n")
    assert sh.run(probe).stdout == "starting\n"
    with open(b.logfile, "a") as f:
        f.write("[2026-11-27 20:00:07,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n")
    assert sh.run(probe).stdout == "started\n" and b.start_state() == "started"
    dead = subprocess.Popen(["true"])
    dead.wait()
    Path(b.logfile).write_text("")
    Path(b.pidfile).write_text(f"{dead.pid}\n")
    assert b.start_state() == "exited"


def test_a_recorded_exit_code_and_the_last_log_lines_name_a_start_that_ended(tmp_path: Path) -> None:
    b = _broker(tmp_path)
    lines = "".join(f"echo line{i}; " for i in range(30))
    b.proc.start(recording_exit(f"sh -c {lines + 'exit 3'!r}", b.exit_file), b.workdir, b.pidfile, b.logfile)
    deadline = time.monotonic() + 10
    while b.state() is not ProcState.STOPPED and time.monotonic() < deadline:
        time.sleep(0.05)
    assert b.exit_code() == 3 and b.how_it_ended() == "exited with code 3"
    with pytest.raises(EnvironmentFailed) as e:
        b.wait_started(timeout=60)
    msg = str(e.value)
    assert msg.startswith("kafka1: Kafka 2.1.1 exited with code 3 before it started; its log ends: line10 | ")
    assert msg.endswith("line28 | line29") and "\n" not in msg and "line9 " not in msg
    # the wait for registrations looks at the same processes
    with pytest.raises(EnvironmentFailed, match="kafka1: Kafka 2.1.1 exited with code 3 before it registered"):
        Cluster._raise_if_exited(SimpleNamespace(agents={1: b}), [1], "before it registered")  # type: ignore[arg-type]


def test_a_process_without_a_recorded_status_says_it_exited(tmp_path: Path) -> None:
    p = RemoteProcess("b2", LocalRemote(), str(tmp_path), str(tmp_path / "a.pid"), str(tmp_path / "a.log"))
    Path(p.logfile).write_text("Traceback (most recent call last):\nValueError: boom\n")
    err = p.exited_error("before it registered")
    assert str(err) == "b2: process exited before it registered; its log ends: Traceback (most recent call last): | " \
                       "ValueError: boom"


FAKE_MVN = """#!/bin/sh
# stands in for Maven: writes a Kafka jar and a 3.5 ZooKeeper client into -DoutputDirectory, slowly
echo run >> "$0.calls"
for a in "$@"; do case "$a" in -DoutputDirectory=*) out="${a#-DoutputDirectory=}";; esac; done
sleep 1
mkdir -p "$out" && touch "$out/kafka_2.12-2.8.2.jar" "$out/zookeeper-3.5.9.jar" "$out/lz4-java-1.7.1.jar"
"""


def test_two_first_fetches_at_once_resolve_once_and_share_the_cache(tmp_path) -> None:  # noqa: ANN001
    """The suite's two workers asking for one release on a fresh machine: the second waits for the
    first's cache instead of replacing its ``libs`` under a broker being installed from it."""
    import threading

    from base.components.kafka import fetch_kafka

    mvn = tmp_path / "mvn"
    mvn.write_text(FAKE_MVN)
    mvn.chmod(0o755)
    got: list[object] = []
    fetchers = [threading.Thread(target=lambda: got.append(fetch_kafka("2.8.2", tmp_path / "cache", mvn=str(mvn))))
                for _ in range(2)]
    for t in fetchers:
        t.start()
    for t in fetchers:
        t.join()
    libs = tmp_path / "cache" / "2.8.2" / "libs"
    assert got == [libs, libs] and (libs / "lz4-java-1.7.1.jar").exists()
    assert (tmp_path / "mvn.calls").read_text().splitlines() == ["run"]
