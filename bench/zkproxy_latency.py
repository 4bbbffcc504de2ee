"""Per-request latency of kazoo get/set through the ZooKeeper wire proxy vs direct, same server.

    .venv/bin/python bench/zkproxy_latency.py [--n 2000] [--zk HOST:PORT] [--json]

Without ``--zk`` it starts its own single ZooKeeper on loopback (base.components.zookeeper). The proxy runs
as its own process (``python -m nemesis.zkproxy``, no rules, events written to a temp file) so the
figures include event logging. Direct and proxied requests are interleaved in rounds to share any
drift in server or machine load.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kazoo.client import KazooClient  # noqa: E402

from base.localstate import bench_scratch  # noqa: E402
from base.parsing import summary  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402
from nemesis.zkproxy import ProxyProcess  # noqa: E402


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def start_zk(workdir: str):
    from base.components.zookeeper import Ensemble, ZkMember, ZkSettings, ZooKeeperNode
    from base.ports import free_port
    from base.remote import LocalRemote

    h = "127.0.0.1"
    m = ZkMember(myid=1, name="zk-bench", address=h, client_port=free_port(h), peer_port=free_port(h),
                 election_port=free_port(h), workdir=workdir)
    ens = Ensemble([ZooKeeperNode(m, LocalRemote(), ZkSettings())])
    ens.start(timeout=60)
    return ens, m.client_address


def measure(n: int, zk_addr: str, workdir: str) -> dict:
    with ProxyProcess([zk_addr], Path(workdir) / "zkproxy.jsonl", workdir) as pp:
        clients = {"direct": KazooClient(hosts=zk_addr, timeout=10), "proxy": KazooClient(hosts=pp.connect_string,
                                                                                         timeout=10)}
        for c in clients.values():
            c.start(timeout=15)
        path = f"/zkproxy-bench-{int(time.time() * 1000)}"
        clients["direct"].create(path, b"0")
        lat: dict[str, dict[str, list[float]]] = {k: {"get": [], "set": []} for k in clients}
        payload = b"x" * 64
        warmup = min(100, n // 10)
        for i in range(n + warmup):
            for name, c in clients.items():
                t0 = time.perf_counter()
                c.get(path)
                t1 = time.perf_counter()
                c.set(path, payload)
                t2 = time.perf_counter()
                if i >= warmup:
                    lat[name]["get"].append((t1 - t0) * 1e3)
                    lat[name]["set"].append((t2 - t1) * 1e3)
        clients["direct"].delete(path)
        for c in clients.values():
            c.stop()
            c.close()
    out: dict = {"n": n, "server": zk_addr, "ops": {}}
    for op in ("get", "set"):
        row = {}
        for name in clients:
            xs = lat[name][op]
            row[name] = {"median_ms": statistics.median(xs), "p99_ms": pct(xs, 99), "mean_ms": statistics.fmean(xs)}
        row["ratio_median"] = row["proxy"]["median_ms"] / row["direct"]["median_ms"]
        row["ratio_p99"] = row["proxy"]["p99_ms"] / row["direct"]["p99_ms"]
        row["added_median_ms"] = row["proxy"]["median_ms"] - row["direct"]["median_ms"]
        out["ops"][op] = row
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=summary(__doc__))
    ap.add_argument("--n", type=int, default=2000, help="measured requests per op and path")
    ap.add_argument("--zk", help="use this running server instead of starting one")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    workdir = str(bench_scratch())  # harness teardown finds it, and stops its ZooKeeper, if this bench is killed
    ens = None
    try:
        zk_addr = args.zk
        if zk_addr is None:
            ens, zk_addr = start_zk(workdir)
        res = measure(args.n, zk_addr, workdir)
    finally:
        if ens is not None:
            ens.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"kazoo latency, {res['n']} requests per op, server {res['server']} (ms)")
    print(f"{'op':<4} {'direct med':>10} {'proxy med':>10} {'ratio':>6} {'direct p99':>11} {'proxy p99':>10} {'ratio':>6}")
    for op, r in res["ops"].items():
        print(f"{op:<4} {r['direct']['median_ms']:>10.3f} {r['proxy']['median_ms']:>10.3f} {r['ratio_median']:>6.2f} "
              f"{r['direct']['p99_ms']:>11.3f} {r['proxy']['p99_ms']:>10.3f} {r['ratio_p99']:>6.2f}")
    return 0


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
