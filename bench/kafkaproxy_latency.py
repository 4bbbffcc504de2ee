"""Per-request latency of real Kafka requests through the Kafka wire proxy vs direct, same broker.

    .venv/bin/python bench/kafkaproxy_latency.py [--n 2000] [--bootstrap HOST:PORT] [--json]

Without ``--bootstrap`` it starts its own ZooKeeper and one Kafka 3.9.1 broker (ZooKeeper mode) on
loopback (base.components). The proxy runs as its own process (``python -m nemesis.kafkaproxy``, no
rules, events written to a temp file), so the figures include decoding every request and response
with the codec and logging its event. Each path has one TCP connection; ApiVersions (v3) and
Metadata (v12, all topics) requests are sent one at a time, direct and proxied interleaved in
rounds to share any drift in broker or machine load. Prints proxied ÷ direct latency.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kio.schema.api_versions.v3.request import ApiVersionsRequest  # noqa: E402
from kio.schema.metadata.v12.request import MetadataRequest  # noqa: E402

from base.localstate import bench_scratch  # noqa: E402
from base.parsing import summary  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402
from nemesis.kafkaproxy import KafkaProxyProcess  # noqa: E402
from nemesis.kafkaproxy.codec import encode_request  # noqa: E402

VERSION = "3.9.1"
REQUESTS = {
    "api_versions": ApiVersionsRequest(client_software_name="zkfence-bench", client_software_version="1"),
    "metadata": MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                include_topic_authorized_operations=False),
}


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


class Conn:
    """One blocking Kafka connection: send a request frame, read its response frame."""

    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0

    def call(self, entity: object) -> None:
        self.corr += 1
        self.sock.sendall(encode_request(entity, self.corr, "zkfence-bench"))
        size = struct.unpack(">i", self._read(4))[0]
        body = self._read(size)
        if struct.unpack(">i", body[:4])[0] != self.corr:
            raise RuntimeError("correlation id mismatch")

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed")
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


def start_broker(workdir: Path):
    """A ZooKeeper and one broker on loopback; returns (stop, PLAINTEXT address)."""
    from base.components.kafka import KafkaBroker, KafkaSettings, fetch_kafka
    from base.components.zookeeper import Ensemble, ZkMember, ZkSettings, ZooKeeperNode
    from base.ports import free_port
    from base.remote import LocalRemote

    h = "127.0.0.1"
    m = ZkMember(myid=1, name="zk-bench", address=h, client_port=free_port(h), peer_port=free_port(h),
                 election_port=free_port(h), workdir=str(workdir / "zk"))
    ens = Ensemble([ZooKeeperNode(m, LocalRemote(), ZkSettings())])
    broker = None

    def stop() -> None:
        if broker is not None:
            broker.stop(grace=20)
        ens.stop()

    try:
        ens.start(timeout=60)
        broker = KafkaBroker("kafka-bench", 1, h, free_port(h), LocalRemote(), str(workdir / "kafka"),
                             KafkaSettings(VERSION, f"{m.client_address}/kafkaproxy-bench"))
        broker.install(fetch_kafka(VERSION))
        broker.start()
        broker.wait_started(120)
    except BaseException:
        stop()
        raise
    return stop, broker.bootstrap


def measure(n: int, bootstrap: str, workdir: Path) -> dict:
    with KafkaProxyProcess([bootstrap], workdir / "kafkaproxy.jsonl", workdir / "proxy", broker_ids=[1]) as pp:
        conns = {"direct": Conn(bootstrap), "proxy": Conn(pp.addresses[0])}
        lat: dict[str, dict[str, list[float]]] = {k: {r: [] for r in REQUESTS} for k in conns}
        warmup = min(100, n // 10)
        try:
            for i in range(n + warmup):
                for name, c in conns.items():
                    for req, entity in REQUESTS.items():
                        t0 = time.perf_counter()
                        c.call(entity)
                        if i >= warmup:
                            lat[name][req].append((time.perf_counter() - t0) * 1e3)
        finally:
            for c in conns.values():
                c.close()
    out: dict = {"n": n, "broker": bootstrap, "requests": {}}
    for req in REQUESTS:
        row: dict = {}
        for name in conns:
            xs = lat[name][req]
            row[name] = {"median_ms": statistics.median(xs), "p99_ms": pct(xs, 99), "mean_ms": statistics.fmean(xs)}
        row["ratio_median"] = row["proxy"]["median_ms"] / row["direct"]["median_ms"]
        row["ratio_p99"] = row["proxy"]["p99_ms"] / row["direct"]["p99_ms"]
        row["added_median_ms"] = row["proxy"]["median_ms"] - row["direct"]["median_ms"]
        out["requests"][req] = row
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=summary(__doc__))
    ap.add_argument("--n", type=int, default=2000, help="measured requests per kind and path")
    ap.add_argument("--bootstrap", help="use this running broker's PLAINTEXT listener instead of starting one")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    workdir = bench_scratch()  # harness teardown finds it, and stops what it started, if this bench is killed
    stop = None
    try:
        bootstrap = args.bootstrap
        if bootstrap is None:
            stop, bootstrap = start_broker(workdir)
        res = measure(args.n, bootstrap, workdir)
    finally:
        if stop is not None:
            stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"Kafka request latency, {res['n']} requests per kind, broker {res['broker']} (ms)")
    print(f"{'request':<13} {'direct med':>10} {'proxy med':>10} {'ratio':>6} {'direct p99':>11} {'proxy p99':>10} "
          f"{'ratio':>6}")
    for req, r in res["requests"].items():
        print(f"{req:<13} {r['direct']['median_ms']:>10.3f} {r['proxy']['median_ms']:>10.3f} {r['ratio_median']:>6.2f} "
              f"{r['direct']['p99_ms']:>11.3f} {r['proxy']['p99_ms']:>10.3f} {r['ratio_p99']:>6.2f}")
    return 0


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
