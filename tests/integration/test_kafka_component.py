"""A real Apache Kafka broker (ZooKeeper mode) as a component, against a real ZooKeeper on loopback.

The jars come from Maven Central through Maven (cached under .local/kafka/VERSION); the broker runs
detached like every RemoteProcess, registers /brokers/ids/N, is killed (its registration goes with
its session), restarted from its log dirs and stopped: on 3.9.1, and on 2.1.1, whose bundled
ZooKeeper 3.4 client reaches no server on Java 14+ and is replaced by a 3.5 one at fetch time. A
broker that exits before it is up (a bad config) fails its start at once, with its log's last lines.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from base import hostkeys
from base.components import ProcState
from base.components.kafka import KAFKA_CACHE, ZK_CLIENT, KafkaBroker, KafkaSettings, fetch_kafka
from base.components.sshd import EmbeddedSshd
from base.errors import EnvironmentFailed
from base.ports import free_port
from base.remote import LocalRemote, SSHRemote
from nemesis.zkproxy import ProxyProcess
from tests.classrefs import unresolved
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

VERSION = "3.9.1"
OLD_VERSION = "2.1.1"  # the last release before KIP-380; Kafka before 2.4 brings a ZooKeeper 3.4 client
NODE = "127.0.0.21"  # the broker node's address (loopback)
REPO = Path(__file__).resolve().parents[2]




@pytest.fixture(scope="module")
def kafka_libs() -> Path:
    return fetch_kafka(VERSION)  # real Maven; a no-op once cached


@pytest.fixture
def node(tmp_path: Path) -> Iterator[SSHRemote]:
    """A broker node at its own loopback address, reached over SSH (the harness's embedded sshd)."""
    sshd = EmbeddedSshd(tmp_path / "sshd", [NODE])
    sshd.start()
    try:
        remote = SSHRemote("kafka1", NODE, sshd.port, sshd.user, str(sshd.client_key),
                           host_keys=lambda c: hostkeys.pin(c, [(NODE, sshd.port)], sshd.host_key.with_suffix(".pub")))
        yield remote
        remote.close()
    finally:
        sshd.stop()


@pytest.fixture
def zk(zk_server) -> Iterator[KazooClient]:
    c = KazooClient(hosts=zk_server.connect_string, timeout=4.0)
    c.start(timeout=20)
    yield c
    c.stop()
    c.close()


@pytest.mark.parametrize("version", [VERSION, OLD_VERSION])
def test_real_kafka_broker_registers_is_killed_restarted_and_stopped(zk_server, zk, node, tmp_path, version):
    kafka_libs = fetch_kafka(version)  # real Maven; a no-op once cached
    chroot = f"/kafka-{uuid.uuid4().hex[:8]}"  # the session-wide server stays clean
    host = NODE
    port = free_port(host)
    # T = 10 s: the pause below must stay well inside the session even on a loaded machine (at 3 s a
    # pause that took the JVM a while to reach every thread once outlasted it and the session expired)
    settings = KafkaSettings(version, f"{zk_server.connect_string}{chroot}", session_timeout_ms=10000)
    # shipped over SSH (SFTP) to the node's workdir, started and signalled over SSH
    broker = KafkaBroker("kafka1", 1, host, port, node, str(tmp_path / "kafka1"), settings)
    ids = f"{chroot}/brokers/ids/1"

    def registration() -> dict | None:
        got = zk.exists(ids) and zk.get(ids)
        return json.loads(got[0]) | {"owner": got[1].ephemeralOwner, "czxid": got[1].czxid} if got else None

    try:
        broker.install(kafka_libs)
        props = Path(broker.workdir, "server.properties").read_text()
        assert f"listeners=PLAINTEXT://{host}:{port}\n" in props
        assert "zookeeper.session.timeout.ms=10000\n" in props and f"log.dirs={broker.data_dir}\n" in props
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
        assert broker.pause()  # SIGSTOP reaches every thread of the JVM shortly after
        wait_for(lambda: broker.state() is ProcState.PAUSED, 10, "the broker to be paused")
        assert broker.resume()
        wait_for(lambda: broker.state() is ProcState.RUNNING, 10, "the broker to run again")
        assert registration()["czxid"] == second["czxid"]
        # stopped (SIGTERM): a controlled shutdown closes the session; nothing keeps running
        assert broker.stop(grace=60)
        assert broker.state() is ProcState.STOPPED
        wait_for(lambda: zk.exists(ids) is None, 10, f"{ids} to go on a clean stop")
        log, previous = (p.read_text() for p in broker.logs(tmp_path / "logs"))
        assert "[KafkaServer id=1] started" in log and "[KafkaServer id=1] shut down completed" in log
        # the first start's log survives the restart; Kafka logs the registration (2.2 and later with
        # its broker epoch, KIP-380)
        if version == VERSION:
            assert f"Registered broker 1 at path /brokers/ids/1 with addresses: PLAINTEXT://{host}:{port}, " \
                   f"czxid (broker epoch): {first['czxid']}" in previous
        else:  # the ZooKeeper client that connected is the replacement, not the bundled 3.4 one
            assert "Registered broker 1 at path /brokers/ids/1 with addresses: " in previous
            assert f"Client environment:zookeeper.version={ZK_CLIENT[2]}" in previous
            assert not list(kafka_libs.glob("zookeeper-3.4.*.jar"))
    finally:
        broker.stop(grace=5)
        zk.delete(chroot, recursive=True)


def test_kafka_before_2_4_gets_a_zookeeper_client_with_every_member_it_links_against():
    """The fetched 2.1.1 holds the replacement client, not its 3.4.13, and every ZooKeeper class,
    method and field its jars reference is in it (else the JVM would fail to link them)."""
    libs = fetch_kafka(OLD_VERSION)
    assert sorted(p.name for p in libs.glob("zookeeper*.jar")) == [f"zookeeper-{ZK_CLIENT[2]}.jar",
                                                                   f"zookeeper-jute-{ZK_CLIENT[2]}.jar"]
    assert f"replaced by {ZK_CLIENT[2]}" in (libs.parent / ".complete").read_text()
    users = [libs / f"kafka_2.12-{OLD_VERSION}.jar", libs / f"kafka-clients-{OLD_VERSION}.jar",
             *libs.glob("zkclient-*.jar")]
    assert unresolved(users, libs.glob("zookeeper*.jar"), "org/apache/zookeeper/") == set()


def test_a_broker_that_exits_at_once_fails_its_start_with_its_exit_code_and_log(kafka_libs, tmp_path):
    """A bad config: Kafka logs the ConfigException and exits 1 before it is up; the wait for its
    start says so at once (not after its timeout), naming the broker, the exit code and the log."""
    settings = KafkaSettings(VERSION, "127.0.0.1:1/none", extra={"zookeeper.session.timeout.ms": "soon"})
    broker = KafkaBroker("kafka1", 1, "127.0.0.1", free_port("127.0.0.1"), LocalRemote(),
                         str(tmp_path / "kafka1"), settings)
    try:
        broker.install(kafka_libs)
        broker.start()
        with pytest.raises(EnvironmentFailed) as e:
            broker.wait_started(timeout=300)
        msg = str(e.value)
        assert msg.startswith(f"kafka1: Kafka {VERSION} exited with code 1 before it started; its log ends: ")
        assert "Invalid value soon for configuration zookeeper.session.timeout.ms" in msg
        assert broker.state() is ProcState.STOPPED and broker.exit_code() == 1
    finally:
        broker.stop(grace=5)


def test_unresolvable_or_kraft_only_version_is_one_line_exit_254():
    for version, says in (("4.0.0", "no ZooKeeper mode"), ("3.9.99", "Maven could not resolve")):
        p = subprocess.run([sys.executable, "-m", "base.components.kafka", "fetch", version],
                           capture_output=True, text=True, timeout=300, cwd=REPO)
        assert p.returncode == 254, p.stderr
        assert p.stderr.count("\n") == 1 and says in p.stderr and p.stdout == ""
        assert not (KAFKA_CACHE / version).exists()  # nothing half-fetched is cached


def proxy_events(path: Path, f: str, **kw: object) -> list[dict]:
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.endswith("}"):
            d = json.loads(line)
            e = {"f": d["f"], "seq": d["seq"], **d["value"]}
            if e["f"] == f and all(e.get(k) == v for k, v in kw.items()):
                out.append(e)
    return out


def test_real_kafka_through_the_wire_proxy_reattaches_then_reregisters_after_expiry(zk_server, zk, kafka_libs,
                                                                                    tmp_path):
    chroot = f"/kafka-{uuid.uuid4().hex[:8]}"
    host, t_ms = "127.0.0.1", 3000
    ids = f"{chroot}/brokers/ids/1"
    evpath = tmp_path / "zkproxy.jsonl"

    def registration() -> tuple[int, int] | None:
        st = zk.exists(ids)
        return (st.czxid, st.ephemeralOwner) if st else None

    with ProxyProcess([zk_server.connect_string], evpath, tmp_path / "proxy", seed=3) as pp:
        settings = KafkaSettings(VERSION, f"{pp.connect_string}{chroot}", session_timeout_ms=t_ms)
        broker = KafkaBroker("kafka1", 1, host, free_port(host), LocalRemote(), str(tmp_path / "kafka1"), settings)
        try:
            broker.install(kafka_libs)
            broker.start()
            czxid1, s1 = wait_for(registration, 180, f"{ids} to appear")
            broker.wait_started()
            # the registration went through the proxy: Kafka's multi(create ephemeral, setData) on one path
            reg = [[(o["op_name"], o["path"]) for o in e["sub_ops"]]
                   for e in proxy_events(evpath, "frame", dir="c2s", op_name="multi", ephemeral=True)]
            assert [("create", ids), ("setData", ids)] in reg
            first = proxy_events(evpath, "session_established", session_id=s1)
            assert first and first[0]["connect_result"] == "new"
            # fault 1: the proxy closes the broker's connection; its client reattaches the same session
            conn = next(c["conn"] for c in pp.client.connections() if c["session_id"] == s1 and not c["closed_first"])
            pp.client.close_connection(conn)
            wait_for(lambda: proxy_events(evpath, "session_established", session_id=s1, connect_result="reattached"),
                     30, "the session to reattach")
            assert registration() == (czxid1, s1)
            # fault 2: the connection goes dark and every reconnect is cut until the session expires
            pp.client.add_rules([
                {"id": "cut-reconnects", "match": {"kind": "connect_req"}, "action": {"type": "drop_then_close"}},
                {"id": "dark", "match": {"session_id": s1}, "action": {"type": "drop_then_blackhole", "mode": "both"},
                 "budget": {"times": 1}},
            ])
            wait_for(lambda: zk.exists(ids) is None, 6 * t_ms / 1000 + 20, "the session to expire")
            pp.client.remove_rule("cut-reconnects")
            # Kafka learns of the expiry ("expired" ConnectResponse), opens a new session and registers again
            czxid2, s2 = wait_for(registration, 60, f"{ids} to be registered again")
            assert czxid2 > czxid1 and s2 != s1
            assert proxy_events(evpath, "frame", kind="connect_resp", connect_result="expired")
            assert proxy_events(evpath, "session_established", session_id=s2, connect_result="new")
            assert broker.state() is ProcState.RUNNING
        finally:
            broker.stop(grace=30)
            zk.delete(chroot, recursive=True)
    assert broker.state() is ProcState.STOPPED
