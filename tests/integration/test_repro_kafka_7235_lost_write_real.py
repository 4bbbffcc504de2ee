"""`harness repro KAFKA-7235-lost-write --kafka 2.1.1 / 2.2.0` (nightly): KIP-380's data consequence
on released brokers configured below inter-broker protocol 0.11.0-IV2 (no leader epochs, so a new
follower truncates to its high watermark).

The whole command runs as a user runs it, three real brokers behind both wire proxies: the
controller's LeaderAndIsr for a newly added t7235lw-1 is captured on the Kafka proxy; B is SIGKILLed
and restarted while the ZooKeeper proxy holds the controller's /brokers/ids notifications; the
captured request is replayed to the new B; B's fetches to L are dropped, the controller is shut down
and L killed. 2.1.1 misses the bounce: the replayed request is B's first, B rewrites its checkpoint
without t7235lw-0, truncates it to 0 under the new controller and is elected with nothing:
``queue_lost_write`` names every acknowledged send. 2.2.0 (KIP-380) sees the bounce by czxid and
sends B its partitions first: the checkpoint keeps t7235lw-0's high watermark, nothing is lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from base.components.kafka import fetch_kafka

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.nightly, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
SID = "KAFKA-7235-lost-write"


def _events(history: Path) -> list[dict]:
    return [json.loads(line) for line in history.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("version", ["2.1.1", "2.2.0"])
def test_the_missed_bounce_loses_acknowledged_records_before_kip_380_only(tmp_path: Path, version: str) -> None:
    fetch_kafka(version)  # real Maven; a no-op once cached
    store = tmp_path / "store"
    p = subprocess.run([sys.executable, "-m", "harness.cli", "repro", SID, "--kafka", version,
                        "--store", str(store), "--no-timeline"],
                       capture_output=True, text=True, timeout=840, cwd=REPO, env={**os.environ, "COLUMNS": "200"})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (run_dir,) = [d for d in store.glob(f"repro-{SID}-kafka-{version}/*") if d.is_dir() and not d.is_symlink()]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["kafkaproxy"] is True and run["kafka"]["version"] == version
    # the story's broker configuration reached the brokers' server.properties
    assert ["inter.broker.protocol.version", "0.10.2"] in run["kafka"]["properties"]
    results = json.loads((run_dir / "results.json").read_text())
    # the one checker judging it there: no request carries a broker epoch below 2.2-IV0 (kafka_checkers)
    assert list(results["checkers"]) == ["queue_lost_write"]
    # `harness check` of the stored run judges it by the checkers the run judged by (run.json's)
    c = subprocess.run([sys.executable, "-m", "harness.cli", "check", "--json", "--no-server", str(run_dir)],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    (row,) = [json.loads(x) for x in c.stdout.splitlines() if x.startswith("{")]
    assert (row["valid"], row["checkers"], row["anomalies"]) == (
        results["valid"], results["checkers"], results["anomalies"]), c.stderr[-2000:]

    events = _events(run_dir / "history.jsonl")
    steps = [e["value"]["what"] for e in events if e["f"] == "repro_step"]
    assert any("is captured" in s and "LeaderAndIsr v0" in s for s in steps), steps  # IBP 0.10.2: v0, no epoch
    replays = [e["value"] for e in events if e["src"] == "kafkaproxy" and e["f"] == "kafka_frame"
               and e["value"].get("action") == "replay"]
    assert any(v["kind"] == "response" and v["api"] == "LeaderAndIsr" and not v.get("error") for v in replays)
    acked = [e for e in events if e["f"] == "send" and e["type"] == "ok"]
    (final,) = [e for e in events if e["f"] == "final_read" and e["type"] == "ok"]
    assert len(acked) == 5
    if version == "2.1.1":  # the bounce missed: the replayed request rewrote the checkpoint
        assert "REPRODUCED" in p.stdout and "reproduced 1/1" in p.stdout
        assert any("(t7235lw-0 dropped)" in s for s in steps), steps
        assert any("from L asks from offset 0" in s and "local high watermark 0" in s for s in steps), steps
        assert results["checkers"]["queue_lost_write"]["valid"] is False
        lost = [a for a in results["anomalies"] if a["checker"] == "queue_lost_write"]
        assert len(lost) == len(acked)
        assert {a["event_ids"][0] for a in lost} == {e["id"] for e in acked}  # each cites its send op
        assert all(final["id"] in a["event_ids"] for a in lost)  # and the final read
        assert final["value"]["offsets"] == []
    else:  # KIP-380: B got its partitions with the bounce; the checkpoint kept t7235lw-0
        assert "clean" in p.stdout and "as expected" in p.stdout
        assert any("(t7235lw-0 kept)" in s for s in steps), steps
        # the replay is refused partition by partition under a top-level NONE: not applied
        # (base.kafkawire.control_outcome), whatever the inferred epochs say
        answered = {v["req_seq"] for v in replays if v["kind"] == "response" and v["api"] == "LeaderAndIsr"
                    and v.get("partition_error_count") == v.get("partition_count")}
        asked = {f"{e['value']['conn']}:{e['value']['correlation_id']}" for e in events
                 if e["f"] == "kafka_frame" and e["seq"] in answered and e["src"] == "kafkaproxy"}
        recv = [e["value"] for e in events if e["f"] == "control_recv" and e["value"]["request_id"] in asked]
        assert recv and all(v["outcome"] == "rejected" and v["error_code"] == 11 for v in recv), recv
        assert results["checkers"]["queue_lost_write"]["valid"] is True
        assert final["value"]["offsets"] == [0, 1, 2, 3, 4]
