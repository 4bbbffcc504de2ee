"""The Kafka wire proxy on two real Kafka brokers (ZooKeeper mode) whose inter-broker listeners
are advertised at it, on 3.9.1 and on 2.2.0 (the first release with broker epochs, KIP-380): it sees and decodes the controller's LeaderAndIsr/UpdateMetadata
and the replicas' fetches (with their epochs), a produce/consume client gets the same results
through it as around it, and a held LeaderAndIsr keeps a broker from hosting its partition until
the control API releases it, with the proxy up throughout."""

from __future__ import annotations

import json
import shutil
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0

from base.components.kafka import KafkaBroker, KafkaSettings, fetch_kafka
from base.ports import free_port
from base.remote import LocalRemote
from nemesis.kafkaproxy import KafkaProxyProcess
from nemesis.kafkaproxy.codec import KAFKA_39_MAX_VERSIONS, decode_response, versions
from tests import kafka_samples as ks
from tests.waiting import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(300)]

VERSIONS = ("3.9.1", "2.2.0")
HOST = "127.0.0.1"
IDS = (1, 2)


def frames(evpath: Path, **kw: Any) -> list[dict[str, Any]]:
    out = []
    for line in evpath.read_text().splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue  # a line being written
        v = d["value"]
        if d["f"] == "kafka_frame" and all(v.get(k) == x for k, x in kw.items()):
            out.append({"seq": d["seq"], **v})
    return out


class Cluster:
    def __init__(self, version: str, proxy: KafkaProxyProcess, brokers: dict[int, KafkaBroker],
                 client: dict[int, int], evpath: Path) -> None:
        self.version, self.proxy, self.brokers, self.client_ports, self.evpath = version, proxy, brokers, client, evpath
        self._speaks: dict[int, tuple[int, int]] = {}

    def speaks(self) -> dict[int, tuple[int, int]]:
        """{api key: (min, max version)} from broker 1's own ApiVersions (v0: every release answers it)."""
        if not self._speaks:
            d = decode_response(call(self.brokers[1].port, ApiVersionsRequestV0()), 18, 0)
            assert d.decoded, d.parse_error
            self._speaks = {a.api_key: (a.min_version, a.max_version) for a in d.body.api_keys}
        return self._speaks

    @property
    def direct(self) -> str:
        """The brokers' CLIENT listeners: around the proxy."""
        return ",".join(f"{HOST}:{p}" for p in self.client_ports.values())

    @property
    def proxied(self) -> str:
        """The proxy's listeners: a client bootstrapping here is told the PLAINTEXT advertised addresses,
        so every connection it makes passes the proxy."""
        return self.proxy.connect_string


def call(port: int, request: object) -> bytes:
    """One request straight to a broker's PLAINTEXT port; its response's body."""
    with socket.create_connection((HOST, port), 10) as s:
        s.sendall(ks.frame(request, 99, "zkfence-test"))
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        return s.recv(size, socket.MSG_WAITALL)


@pytest.fixture(scope="module", params=VERSIONS)
def cluster(request, zk_server, tmp_path_factory) -> Iterator[Cluster]:
    version = request.param
    libs = fetch_kafka(version)  # real Maven; a no-op once cached
    tmp = tmp_path_factory.mktemp(f"kproxy-{version}")
    chroot = f"/kproxy-{uuid.uuid4().hex[:8]}"
    plain = {i: free_port(HOST) for i in IDS}
    client = {i: free_port(HOST) for i in IDS}
    listen = {i: free_port(HOST) for i in IDS}
    evpath = tmp / "kafkaproxy.jsonl"
    proxy = KafkaProxyProcess([f"{HOST}:{listen[i]}={HOST}:{plain[i]}" for i in IDS], evpath, tmp / "proxy",
                              broker_ids=list(IDS))
    brokers: dict[int, KafkaBroker] = {}
    try:
        proxy.start()
        for i in IDS:
            settings = KafkaSettings(version, f"{zk_server.connect_string}{chroot}", session_timeout_ms=6000,
                                     client_listener=(client[i], f"{HOST}:{client[i]}"),
                                     advertised_plaintext={b: f"{HOST}:{listen[b]}" for b in IDS},
                                     extra={"offsets.topic.replication.factor": "2", "min.insync.replicas": "1"})
            brokers[i] = KafkaBroker(f"kafka{i}", i, HOST, plain[i], LocalRemote(), str(tmp / f"kafka{i}"), settings)
            brokers[i].install(libs)
        for b in brokers.values():
            b.start()
        for b in brokers.values():
            b.wait_started(120)
        yield Cluster(version, proxy, brokers, client, evpath)
    finally:
        for b in brokers.values():
            b.stop(grace=20)
        proxy.stop()
        zk = KazooClient(hosts=zk_server.connect_string, timeout=4.0)
        zk.start(timeout=20)
        zk.delete(chroot, recursive=True)
        zk.stop()
        zk.close()
        shutil.rmtree(tmp / "kafka1" / "libs", ignore_errors=True)
        shutil.rmtree(tmp / "kafka2" / "libs", ignore_errors=True)


def held_seq(cluster: Cluster) -> int:
    return next(f["seq"] for f in frames(cluster.evpath, kind="request", rule_id="hold-lai"))


def held_from(cluster: Cluster) -> int:
    return next(f["src_broker"] for f in frames(cluster.evpath, kind="request", rule_id="hold-lai"))


def create_topic(bootstrap: str, name: str, wait_s: float = 20, **kw: Any) -> None:
    """``wait_s``: how long the controller waits for the partitions to have leaders (0: not at all)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, **kw)], operation_timeout=wait_s)[name].result(30)


def produce_consume(bootstrap: str, topic: str, n: int = 200) -> list[tuple[int, int, bytes | None, bytes]]:
    """The client script: create a 2-partition topic replicated on both brokers, produce ``n`` keyed
    messages (acks=all, idempotent), consume them all back; (partition, offset, key, value), sorted."""
    create_topic(bootstrap, topic, num_partitions=2, replication_factor=2)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(n):
        p.produce(topic, key=str(i % 7).encode(), value=f"v{i}".encode(), partition=i % 2)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    got: list[tuple[int, int, bytes | None, bytes]] = []
    try:
        wait_for(lambda: got.extend((m.partition(), m.offset(), m.key(), m.value())
                                    for m in c.consume(100, 0.5) if m.error() is None) or len(got) >= n,
                 60, f"{n} messages of {topic}")
    finally:
        c.close()
    return sorted(got)


def test_the_proxy_sees_the_controllers_requests_and_the_replicas_fetches(cluster: Cluster) -> None:
    ev = cluster.evpath
    create_topic(cluster.direct, "seen", num_partitions=1, replication_factor=2)
    lai = wait_for(lambda: [f for f in frames(ev, api="LeaderAndIsr", kind="request")
                            if any(p["topic"] == "seen" for p in f.get("partitions", []))], 30, "LeaderAndIsr for seen")
    f = lai[0]
    controller = f["controller_id"]
    assert {x["dst_broker"] for x in lai} == set(IDS)  # the controller told both replicas, itself included
    speaks = cluster.speaks()
    assert f["api_version"] == speaks[4][1] and f["decoded"] and f["src_broker"] == controller and controller in IDS
    assert f["controller_epoch"] >= 1 and f["broker_epoch"] > 0 and f["dst_broker"] in IDS
    p = next(p for p in f["partitions"] if p["topic"] == "seen")
    assert p["leader"] in IDS and p["leader_epoch"] >= 0 and sorted(p["isr"]) == [1, 2]
    resp = wait_for(lambda: frames(ev, kind="response", req_seq=f["seq"]), 30, "its response")[0]
    assert resp["api"] == "LeaderAndIsr" and resp["controller_epoch"] == f["controller_epoch"] and "error" not in resp
    um = wait_for(lambda: frames(ev, api="UpdateMetadata", kind="request"), 30, "an UpdateMetadata")[0]
    assert um["api_version"] == speaks[6][1] and um["broker_epoch"] > 0 and um["src_broker"] == controller
    fetch = wait_for(lambda: [x for x in frames(ev, api="Fetch", kind="request") if x.get("replica_id", -1) in IDS],
                     30, "a replica's fetch")[0]
    assert fetch["src_broker"] == fetch["replica_id"] != fetch["dst_broker"]
    assert fetch["client_id"].startswith(f"broker-{fetch['replica_id']}-fetcher")
    assert fetch["api_version"] == speaks[1][1]
    # every frame of the brokers' real traffic decodes (the codec has every version they speak)
    undecoded = [(x["api"], x.get("api_version"), x.get("parse_error")) for x in frames(ev) if not x["decoded"]]
    assert undecoded == []


def test_a_brokers_own_api_versions_are_all_in_the_codec(cluster: Cluster) -> None:
    speaks = cluster.speaks()
    lacking = {k: v for k, v in speaks.items() if not set(range(v[0], v[1] + 1)) <= set(versions(k))}
    assert lacking == {}
    if cluster.version == "3.9.1":
        assert {k: speaks[k][1] for k in KAFKA_39_MAX_VERSIONS} == KAFKA_39_MAX_VERSIONS
        # the flexible ApiVersions (header v2 request, header v0 response) too
        d = decode_response(call(cluster.brokers[1].port, ks.api_versions_v3()), 18, 3)
        assert d.decoded and {a.api_key for a in d.body.api_keys} == set(speaks)


def test_a_client_gets_the_same_results_through_the_proxy(cluster: Cluster) -> None:
    direct = produce_consume(cluster.direct, "direct-t")
    proxied = produce_consume(cluster.proxied, "proxied-t")
    assert len(direct) == 200 and proxied == direct
    # the proxied client's requests really passed the proxy: its Produce and Fetch, decoded
    assert frames(cluster.evpath, api="Produce", kind="request", decoded=True)
    assert [f for f in frames(cluster.evpath, api="Fetch", kind="request") if f.get("replica_id", -1) < 0]


def test_a_held_leader_and_isr_keeps_a_broker_from_its_partition_until_released(cluster: Cluster) -> None:
    api = cluster.proxy.client
    api.add_rule({"id": "hold-lai", "match": {"api": "LeaderAndIsr", "dst_broker": 2, "topic": "held"},
                  "action": "hold", "budget": {"times": 1}})
    # on broker 2 only; not waiting for a leader: a held LeaderAndIsr is why it has none
    create_topic(cluster.direct, "held", 0, num_partitions=1, replica_assignment=[[2]])
    held = wait_for(lambda: api.held(), 30, "the LeaderAndIsr for 'held' to be held")
    assert [h["rule_id"] for h in held] == ["hold-lai"]
    log_dir = Path(cluster.brokers[2].data_dir) / "held-0"
    # the visible effect: broker 2 was never told to host held-0 (its log dir does not exist), and
    # the controller, waiting on broker 2's answer, has sent it nothing since (its channel is one at a time)
    time.sleep(1.5)
    assert not log_dir.exists()
    assert not [x for x in frames(cluster.evpath, kind="request", dst_broker=2, src_broker=held_from(cluster))
                if x["seq"] > held_seq(cluster) and x["api"] in ("LeaderAndIsr", "UpdateMetadata", "StopReplica")]
    assert api.health()["ok"]
    assert api.release("hold-lai") == 1
    wait_for(log_dir.exists, 30, "broker 2 to create held-0 once the LeaderAndIsr is delivered")
    f, = [x for x in frames(cluster.evpath, kind="request", rule_id="hold-lai")]
    assert f["action"] == "hold" and f["api"] == "LeaderAndIsr" and f["dst_broker"] == 2
    resp = wait_for(lambda: frames(cluster.evpath, kind="response", req_seq=f["seq"]), 30, "its late response")[0]
    assert "error" not in resp
    p = Producer({"bootstrap.servers": cluster.direct})
    p.produce("held", b"after")
    assert p.flush(30) == 0
    assert api.health()["ok"] and cluster.proxy.process.poll() is None


def test_a_captured_request_is_replayed_to_the_broker_on_a_connection_of_the_proxys_own(cluster: Cluster) -> None:
    """``capture`` forwards the controller's LeaderAndIsr for 'replayed' and keeps a copy; ``/replay``
    writes it to broker 2 again on a new connection, and the broker answers it there (a LeaderAndIsr
    whose leader epoch is not newer than the one it has: the partition is skipped, the request not
    refused). Request and answer cite the captured frame; the controller's own connection is untouched."""
    api = cluster.proxy.client
    api.add_rule({"id": "cap-lai", "match": {"api": "LeaderAndIsr", "kind": "request", "dst_broker": 2,
                                             "topic": "replayed"}, "action": "capture", "budget": {"times": 1}})
    create_topic(cluster.direct, "replayed", num_partitions=1, replica_assignment=[[2, 1]])
    (cap,) = wait_for(lambda: api.captured(), 30, "the LeaderAndIsr for 'replayed' to be captured")
    orig = next(f for f in frames(cluster.evpath, kind="request", rule_id="cap-lai") if f["action"] == "capture")
    assert cap["frame_seq"] == orig["seq"]
    (out,) = api.replay("cap-lai")
    assert out["replay_of"] == orig["seq"] and out["api"] == "LeaderAndIsr" and out["error"] is None
    req, resp = [f for f in frames(cluster.evpath, action="replay") if f["replay_of"] == orig["seq"]]
    assert req["kind"] == "request" and req["conn"] != orig["conn"] and req["dst_broker"] == 2
    assert (req["controller_epoch"], req.get("broker_epoch")) == (orig["controller_epoch"], orig.get("broker_epoch"))
    assert resp["kind"] == "response" and resp["req_seq"] == req["seq"] and resp["seq"] == out["response_seq"]
    assert api.health()["ok"] and cluster.proxy.process.poll() is None


def test_a_controlled_shutdown_and_the_controllers_answer_pass_the_proxy(cluster: Cluster) -> None:
    """Last in the module: it stops broker 2. Its ControlledShutdown (with its broker epoch, KIP-380)
    goes to the controller through the proxy, and so do the controller's requests back to broker 2
    (with that epoch) and the LeaderAndIsr that moves leadership off it."""
    create_topic(cluster.direct, "moving", num_partitions=1, replica_assignment=[[2, 1]])  # led by 2
    before = wait_for(lambda: [f for f in frames(cluster.evpath, api="LeaderAndIsr", kind="request")
                               if any(p["topic"] == "moving" for p in f.get("partitions", []))], 30, "moving's leader")
    epoch0 = next(p["leader_epoch"] for p in before[0]["partitions"] if p["topic"] == "moving")
    since = max(f["seq"] for f in frames(cluster.evpath))
    assert cluster.brokers[2].stop(grace=60)
    new = [f for f in frames(cluster.evpath, kind="request") if f["seq"] > since]
    cs = [f for f in new if f["api"] == "ControlledShutdown"]
    assert cs and cs[0]["src_broker"] == 2 and cs[0]["broker_epoch"] > 0 and cs[0]["decoded"]
    resp = [f for f in frames(cluster.evpath, kind="response", api="ControlledShutdown") if f["req_seq"] == cs[0]["seq"]]
    assert resp and "error" not in resp[0]
    # the controller's requests to broker 2 meanwhile carry the broker epoch broker 2 announced (what
    # a broker checks them against: STALE_BROKER_EPOCH otherwise)
    control = [f for f in new if f["api"] in ("LeaderAndIsr", "UpdateMetadata", "StopReplica") and f["dst_broker"] == 2]
    assert control and {f["broker_epoch"] for f in control} == {cs[0]["broker_epoch"]}
    moved = [p for f in new if f["api"] == "LeaderAndIsr" for p in f.get("partitions", []) if p["topic"] == "moving"]
    assert moved and moved[0]["leader"] == 1 and moved[0]["leader_epoch"] > epoch0
