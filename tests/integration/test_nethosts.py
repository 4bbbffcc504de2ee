"""Hosts that behave like VMs (tests/nethosts.py: a network namespace, an address on a bridge, an
sshd on port 22 and a home directory per node), driven as an external inventory: `harness setup`
installs ZooKeeper from Maven Central and kazoo's wheels (then changes nothing the second time),
`harness doctor` passes, and a run with a Toxiproxy partition and an nftables partition of the
ZooKeeper leader's quorum links ends valid; afterwards no namespace, bridge, rule or process is
left. Real sshd, ZooKeeper, Toxiproxy, nftables and Spark. Needs root (CI runs as root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from base.localstate import processes_mentioning
from history import read_events
from tests.nethosts import NetHosts, available, sh

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(available() is not None, reason=f"namespace hosts: {available()}")]
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
NODES = [("zk1", ("zookeeper",), None), ("zk2", ("zookeeper",), None), ("zk3", ("zookeeper",), None),
         ("b1", ("broker",), 1), ("b2", ("broker",), 2), ("b3", ("broker",), 3)]
SCHEDULE = """name = "nethosts"
[[step]]
at = 2.0
fault = "partition"
targets = ["b1"]
duration = 4.5
params = { grudge = "isolate" }

[[step]]
at = 8.0
fault = "net_partition"
targets = "zk-leader"
duration = 5.0
params = { grudge = "isolate" }
"""


def _harness(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True, env=ENV,
                          cwd=REPO, timeout=timeout)


def test_setup_doctor_and_a_run_with_both_partitions_on_namespace_hosts(tmp_path):
    hosts = NetHosts(NODES).up()
    try:
        inv = hosts.inventory(zookeeper='version = "3.8.4"\ntick_time_ms = 200\nmax_session_timeout_ms = 10000',
                              agents='python = "/usr/bin/python3"\nsession_timeout_ms = 3000')
        first = _harness("setup", "--inventory", str(inv))
        assert first.returncode == 0, first.stdout + first.stderr
        lines = first.stdout.splitlines()
        assert sum(" zookeeper 3.8.4 " in ln and " installed " in ln for ln in lines) == 3, first.stdout
        assert sum(ln.split()[1:3] == ["kazoo", "installed"] for ln in lines) == 3, first.stdout
        again = _harness("setup", "--inventory", str(inv))
        assert again.returncode == 0 and again.stdout.splitlines()[-1] == "setup: nothing to change (every item present)", \
            again.stdout

        doctor = _harness("doctor", "--inventory", str(inv))
        assert doctor.returncode == 0 and doctor.stdout.splitlines()[-1] == "doctor: ready", doctor.stdout

        schedule = tmp_path / "nethosts.toml"
        schedule.write_text(SCHEDULE)
        store = tmp_path / "store"
        run = _harness("run", "--inventory", str(inv), "--schedule", str(schedule), "--time-limit", "16",
                       "--store", str(store))
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        (run_dir,) = [p for p in (store / "nethosts").iterdir() if p.is_dir() and not p.is_symlink()]
        assert json.loads((run_dir / "results.json").read_text())["valid"] is True
        history = list(read_events(run_dir / "history.jsonl"))
        toxi = [e for e in history if e.f == "partition" and e.value.get("stage") == "complete"]
        assert toxi and not any(e.value.get("error") for e in toxi)
        firewall = [e for e in history if e.f == "net_partition" and e.value.get("stage") == "complete"]
        assert [e.value["phase"] for e in firewall] == ["start", "stop"], firewall
        start, stop = (e.value for e in firewall)
        assert not start.get("error") and not stop.get("error")
        (leader,) = start["targets"]
        assert leader.startswith("zk") and set(start["nodes"]) == {n for n, _, _ in NODES}
        assert set(stop["tables_removed"]) == set(start["nodes"])
        debian = hosts.inventory(zookeeper='source = "debian"', agents='python = "/usr/bin/python3"')
        deb = _harness("setup", "--inventory", str(debian))  # these hosts share this machine's packages
        assert deb.returncode == 0 and sum(ln.split()[1:4] == ["zookeeper", "deb", "present"]
                                           for ln in deb.stdout.splitlines()) == 3, deb.stdout
        for name, _, _ in NODES:  # healed: no table of ours in any node's netfilter
            assert sh("ip", "netns", "exec", hosts.ns(name), "nft", "list", "table", "inet", "zkfence",
                      check=False).returncode != 0
    finally:
        hosts.down()
    assert hosts.leftovers() == []
    assert processes_mentioning(str(hosts.root)) == []


def test_doctor_on_the_example_vms_inventory_fails_fast_one_line_per_node():
    """inventory/example-vms.toml names 10.0.0.x hosts that are not ours: doctor runs inside a
    namespace of our own whose only address is the control node's (toxiproxy.host), so those
    addresses are unreachable and no packet leaves this machine."""
    ns = f"zkf-{os.getpid() % 10000:04d}-novms"
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "addr", "add", "10.0.0.5/32", "dev", "lo")
        t = time.monotonic()
        res = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "harness.cli", "doctor",
                              "--inventory", "inventory/example-vms.toml"], capture_output=True, text=True,
                             env=ENV, cwd=REPO, timeout=120)
        elapsed = time.monotonic() - t
    finally:
        sh("ip", "netns", "del", ns)
    assert res.returncode == 1, res.stdout + res.stderr
    failing = [ln.split()[:3] for ln in res.stdout.splitlines() if " FAIL " in ln]
    assert failing == [[n, "ssh", "FAIL"] for n in ("zk1", "zk2", "zk3", "kafka1", "kafka2", "kafka3")], res.stdout
    assert res.stdout.splitlines()[-1] == "doctor: 6 check(s) failed"
    assert elapsed < 60, f"doctor took {elapsed:.1f}s"
