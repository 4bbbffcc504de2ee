"""`harness repro KAFKA-14845 --kafka 3.9.1`: the JIRA's story on released Kafka brokers (ZooKeeper
mode), their ZooKeeper client as the JIRA reported it (Netty, three servers in the connect string:
no flag needed), every broker connection through Toxiproxy and the ZooKeeper wire proxy.

The whole command runs as a user runs it. The verdict is the registration_liveness checker's over
the history, whose broker events are parsed from the real brokers' logs: broker 2 is up but not
registered T + margin after the heal, because the session ZooKeeper created for it (its reply lost
by the proxy) took /brokers/ids/2 with the Netty client's pipelined registration, and Kafka's
CheckedEphemeral gave up on that foreign owner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from base.components.kafka import fetch_kafka
from harness.cluster import STATE_DIR

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
VERSION = "3.9.1"


def _events(history: Path) -> list[dict]:
    return [json.loads(line) for line in history.read_text().splitlines() if line.strip()]


def _java_cmdlines() -> list[str]:
    out = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "kafka.Kafka" in cmd:
            out.append(cmd)
    return out


def test_real_kafka_broker_never_reregisters_after_the_lost_create_session_reply(tmp_path):
    fetch_kafka(VERSION)  # real Maven; a no-op once cached
    # the broker pipelines its registration behind the lost reply only when it queued it in time: a run
    # where it did not says "story not told" (evidence of nothing) and is run again, at most twice
    for attempt in range(3):
        store = tmp_path / f"store{attempt}"
        p = subprocess.run([sys.executable, "-m", "harness.cli", "repro", "KAFKA-14845", "--kafka", VERSION,
                            "--store", str(store), "--no-timeline"],
                           capture_output=True, text=True, timeout=280, cwd=REPO, env={**os.environ, "COLUMNS": "200"})
        if not (p.returncode == 1 and "story not told in 1/1" in p.stdout):
            break
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "REPRODUCED" in p.stdout and "reproduced 1/1" in p.stdout
    assert "as the JIRA reported it: --zk-socket netty --zk-hosts 3; the bug cannot show with --zk-socket nio" \
        in p.stdout, p.stdout
    (run_dir,) = [d for d in store.glob("repro-KAFKA-14845-kafka-3.9.1/*") if d.is_dir() and not d.is_symlink()]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["kafka"] == {"version": VERSION, "zk_socket": "netty", "zk_hosts": 3, "properties": []}
    assert run["zkproxy"] == "all"

    results = json.loads((run_dir / "results.json").read_text())
    assert results["checkers"]["registration_liveness"]["valid"] is False
    (anomaly,) = results["anomalies"]
    assert anomaly["broker"] == 2 and "broker 2 is alive but not registered" in anomaly["message"]

    events = _events(run_dir / "history.jsonl")
    by_id = {e["id"]: e for e in events}
    # the broker is up at the end, and ZooKeeper's final word is: no /brokers/ids/2
    (run_end,) = [e for e in events if e["f"] == "run_end"]
    assert 2 in run_end["value"]["live_brokers"]
    final = [e for e in events if e["f"] == "broker_znode" and e["value"]["final"] and e["value"]["broker_id"] == 2]
    assert final and final[-1]["value"]["exists"] is False
    # the orphan: the session whose ConnectResponse the proxy dropped owned /brokers/ids/2 when the
    # broker (its log, parsed) was refused with NODEEXISTS; the anomaly cites that refusal
    orphans = {e["value"]["session_id"] for e in events
               if e["src"] == "zkproxy" and e["f"] == "session_established" and not e["value"]["forwarded_to_client"]}
    refused = [by_id[i] for i in anomaly["event_ids"] if i.startswith("agent:2/")]
    assert refused and refused[-1]["f"] == "register" and refused[-1]["type"] == "fail"
    assert refused[-1]["value"]["owner"] in orphans
    assert refused[-1]["value"]["session_id"] not in orphans  # the broker's own, later session
    # the brokers' logs are in the run directory
    assert "Error while creating ephemeral at /brokers/ids/2" in (run_dir / "logs" / "b2-kafka.log").read_text()

    # nothing left running: the run's state file is gone and no broker JVM of this run survives
    # (its own state files only: another worker's run may be recording one meanwhile)
    assert [p for p in STATE_DIR.glob("*.json") if json.loads(p.read_text()).get("scratch", "").startswith(run["scratch"])] == []
    assert not [c for c in _java_cmdlines() if run["scratch"] in c]


@pytest.mark.parametrize("version", ["2.1.1", "2.2.0"])
def test_kafka_6584_reproduces_on_the_last_release_without_kafka_7165_and_not_on_the_first_with_it(tmp_path, version):
    """The revived session (a ZooKeeper leader failover re-tracks the expired session S1, whose
    /brokers/ids/2 comes back): 2.1.1's CheckedEphemeral gives up on the foreign owner, and the broker
    stays unregistered; 2.2.0 deletes and re-creates the node (KAFKA-7165). A 2.1.1 broker logs its
    registrations without epoch or session: those come from the ZooKeeper wire proxy's creates."""
    from harness.cli import main

    fetch_kafka(version)
    store = tmp_path / "store"
    assert main(["repro", "KAFKA-6584", "--kafka", version, "--store", str(store), "--no-timeline"]) == 0
    (run_dir,) = [d for d in store.glob(f"repro-KAFKA-6584-kafka-{version}/*") if d.is_dir() and not d.is_symlink()]
    results = json.loads((run_dir / "results.json").read_text())
    events = _events(run_dir / "history.jsonl")
    b2 = [e for e in events if e["src"] == "agent:2"]
    regs = [e["value"] for e in b2 if e["f"] == "register" and e["type"] == "ok"]
    assert regs and all(isinstance(r["epoch"], int) and isinstance(r["session_id"], int) for r in regs), regs
    if version == "2.1.1":
        assert results["checkers"]["registration_liveness"]["valid"] is False
        assert all(r["wire_event"].startswith("zkproxy/") for r in regs)
        refused = [e["value"] for e in b2 if e["f"] == "register" and e["type"] == "fail"]
        assert refused and refused[-1]["owner"] == regs[0]["session_id"]  # S1, revived
    else:
        assert results["checkers"]["registration_liveness"]["valid"] is True
        deleted = [e["value"] for e in b2 if e["f"] == "register_delete"]
        assert deleted and deleted[0]["owner"] == regs[0]["session_id"], (deleted, regs)  # the story happened
        assert regs[-1]["session_id"] == deleted[0]["session_id"] != regs[0]["session_id"]
