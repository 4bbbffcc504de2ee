"""A real Apache Kafka broker (ZooKeeper mode) as a component, against a real ZooKeeper on loopback.

The jars come from Maven Central through Maven (cached under .local/kafka/VERSION); the broker runs
detached like every RemoteProcess, registers /brokers/ids/N, is killed (its registration goes with
its session), restarted from its log dirs and stopped.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from kazoo.client import KazooClient

from harness.components import ProcState
from harness.components.kafka import KAFKA_CACHE, KafkaBroker, KafkaSettings, fetch_kafka
from harness.ports import free_port
from harness.remote import LocalRemote

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

VERSION = "3.9.1"
REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def wait_for(fn: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@pytest.fixture(scope="module")
def kafka_libs() -> Path:
    return fetch_kafka(VERSION)  # real Maven; a no-op once cached


@pytest.fixture
def zk(zk_server) -> Iterator[KazooClient]:
    c = KazooClient(hosts=zk_server.connect_string, timeout=4.0)
    c.start(timeout=20)
    yield c
    c.stop()
    c.close()


def test_real_kafka_broker_registers_is_killed_restarted_and_stopped(zk_server, zk, kafka_libs, tmp_path):
    chroot = f"/kafka-{uuid.uuid4().hex[:8]}"  # the session-wide server stays clean
    host = "127.0.0.1"
    port = free_port(host)
    settings = KafkaSettings(VERSION, f"{zk_server.connect_string}{chroot}", session_timeout_ms=3000)
    broker = KafkaBroker("kafka1", 1, host, port, LocalRemote(), str(tmp_path / "kafka1"), settings)
    ids = f"{chroot}/brokers/ids/1"

    def registration() -> dict | None:
        got = zk.exists(ids) and zk.get(ids)
        return json.loads(got[0]) | {"owner": got[1].ephemeralOwner, "czxid": got[1].czxid} if got else None

    try:
        broker.install(kafka_libs)
        props = Path(broker.workdir, "server.properties").read_text()
        assert f"listeners=PLAINTEXT://{host}:{port}\n" in props
        assert "zookeeper.session.timeout.ms=3000\n" in props and f"log.dirs={broker.data_dir}\n" in props
        broker.start()
        first = wait_for(registration, 180, f"{ids} to appear")
        broker.wait_started()
        assert first["endpoints"] == [f"PLAINTEXT://{host}:{port}"] and first["owner"] != 0
        assert broker.state() is ProcState.RUNNING
        # killed: the broker's session expires about T later and the registration goes with it
        assert broker.kill()
        wait_for(lambda: broker.state() is ProcState.STOPPED, 10, "the broker to die")
        wait_for(lambda: zk.exists(ids) is None, 30, f"{ids} to vanish with the session")
        # restarted from its log dirs: a new registration with a larger czxid (its broker epoch)
        broker.start()
        second = wait_for(registration, 180, f"{ids} to reappear")
        broker.wait_started()
        assert second["czxid"] > first["czxid"] and second["owner"] != first["owner"]
        # paused: not live; resumed: running, still registered under the same session
        assert broker.pause() and broker.state() is ProcState.PAUSED
        assert broker.resume() and broker.state() is ProcState.RUNNING
        assert registration()["czxid"] == second["czxid"]
        # stopped (SIGTERM): a controlled shutdown closes the session; nothing keeps running
        assert broker.stop(grace=60)
        assert broker.state() is ProcState.STOPPED
        wait_for(lambda: zk.exists(ids) is None, 10, f"{ids} to go on a clean stop")
        log = broker.logs(tmp_path / "logs")[0].read_text()
        assert "[KafkaServer id=1] started" in log and "[KafkaServer id=1] shut down completed" in log
    finally:
        broker.stop(grace=5)
        zk.delete(chroot, recursive=True)


def test_unresolvable_or_kraft_only_version_is_one_line_exit_254():
    for version, says in (("4.0.0", "no ZooKeeper mode"), ("3.9.99", "Maven could not resolve")):
        p = subprocess.run([sys.executable, "-m", "harness.components.kafka", "fetch", version],
                           capture_output=True, text=True, timeout=300, cwd=REPO)
        assert p.returncode == 254, p.stderr
        assert p.stderr.count("\n") == 1 and says in p.stderr and p.stdout == ""
        assert not (KAFKA_CACHE / version).exists()  # nothing half-fetched is cached
