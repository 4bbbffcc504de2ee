"""`harness doctor` against real nodes: the embedded loopback inventory is ready; an inventory
whose nodes do not answer SSH fails fast with one line per node."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def _doctor(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", "doctor", *argv], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def test_the_embedded_inventory_is_ready():
    res = _doctor()
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == "doctor: ready"
    for node in ("zk1", "zk2", "zk3", "b1", "b2", "b3"):
        mine = {ln.split()[1] for ln in lines if ln.startswith(node + " ")}
        assert {"ssh", "root", "clock", "disk", "ports"} <= mine
        assert ("java" if node.startswith("zk") else "python") in mine
    assert sum("toxiproxy  ok" in ln for ln in lines) == 3


def test_unreachable_nodes_fail_fast_one_line_each(tmp_path):
    inv = tmp_path / "down.toml"
    inv.write_text('name = "down"\n[ssh]\nmode = "external"\nuser = "root"\nport = 1\n'
                   '[[nodes]]\nname = "zk1"\naddress = "127.0.0.41"\nroles = ["zookeeper"]\n'
                   '[[nodes]]\nname = "b1"\naddress = "127.0.0.42"\nroles = ["broker"]\nbroker_id = 1\n')
    t = time.monotonic()
    res = _doctor("--inventory", str(inv))
    assert time.monotonic() - t < 30
    assert res.returncode == 1
    failing = [ln for ln in res.stdout.splitlines() if " FAIL " in ln]
    assert [ln.split()[:2] for ln in failing] == [["zk1", "ssh"], ["b1", "ssh"]]
    assert res.stdout.splitlines()[-1] == "doctor: 2 check(s) failed"
    assert _doctor("--inventory", str(inv), "--timeout", "0").returncode == 254
