"""`harness repro KAFKA-14139 --kafka 3.9.1`: the empty-disk replica joins the ISR through a delayed
AlterPartition on released brokers (ZooKeeper mode, which has no KIP-903 in any release), and the
acknowledged records are lost when it is elected.

The whole command runs as a user runs it, three real brokers behind the Kafka wire proxy: the
leader A's AlterPartition adding B is held there, B is SIGKILLed, its session expires, it restarts
with an empty log dir and its fetches to A are dropped there; the held request is released once the
controller has sent the new B its LeaderAndIsr, and the ZooKeeper-mode controller (liveness only)
commits ISR [A, B]. A is killed; B is elected. Both checkers must fire, for the story's reasons:
``isr_expansion`` from the wire (the fetch the expansion rests on carries B's first epoch, ZooKeeper
had B's second at the commit) and ``queue_lost_write`` from the final read.
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
VERSION = "3.9.1"


def _events(history: Path) -> list[dict]:
    return [json.loads(line) for line in history.read_text().splitlines() if line.strip()]


def test_the_empty_replica_enters_the_isr_and_the_acknowledged_records_are_lost(tmp_path: Path) -> None:
    fetch_kafka(VERSION)  # real Maven; a no-op once cached
    store = tmp_path / "store"
    p = subprocess.run([sys.executable, "-m", "harness.cli", "repro", "KAFKA-14139", "--kafka", VERSION,
                        "--store", str(store), "--no-timeline"],
                       capture_output=True, text=True, timeout=840, cwd=REPO, env={**os.environ, "COLUMNS": "200"})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "REPRODUCED" in p.stdout and "reproduced 1/1" in p.stdout
    (run_dir,) = [d for d in store.glob(f"repro-KAFKA-14139-kafka-{VERSION}/*") if d.is_dir() and not d.is_symlink()]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["kafkaproxy"] is True and run["kafka"]["version"] == VERSION
    results = json.loads((run_dir / "results.json").read_text())
    assert results["checkers"]["isr_expansion"]["valid"] is False
    assert results["checkers"]["queue_lost_write"]["valid"] is False

    events = _events(run_dir / "history.jsonl")
    by_id = {e["id"]: e for e in events}
    steps = [e["value"]["what"] for e in events if e["f"] == "repro_step"]
    assert any("is held on the wire" in s for s in steps), steps
    assert any("empty B leads" in s for s in steps), steps

    # isr_expansion: the committed expansion's request, the fetch it rests on (by the old B, its
    # first epoch), the controller's accepted answer and the observer's committed state
    (stale,) = [a for a in results["anomalies"] if a["checker"] == "isr_expansion"]
    assert "a stale incarnation entered the ISR" in stale["message"], stale
    request, fetch, handled, state = (by_id[i] for i in stale["event_ids"])
    assert (request["f"], fetch["f"], handled["f"], state["f"]) == (
        "alter_partition", "fetch", "alter_partition_handled", "partition_state")
    assert request["src"] == fetch["src"] == handled["src"] == "kafkawire" and state["src"] == "observer"
    assert request["value"]["held"] is True and handled["value"]["outcome"] == "accepted"
    b = fetch["value"]["replica"]
    assert b in handled["value"]["isr"] and b in state["value"]["isr"]
    epochs = [e["value"]["epoch"] for e in events if e["src"] == f"agent:{b}" and e["f"] == "register"
              and e["type"] == "ok"]
    # B registered three times (start, restart after its clean stop, restart with an empty disk): the
    # fetch carries the second's epoch (Fetch v17's ReplicaState: a czxid), the commit saw the third's
    assert fetch["value"]["replica_epoch"] == epochs[-2] and epochs[-1] > epochs[-2], (fetch, epochs)
    assert state["value"]["zxid"] > epochs[-1]

    # queue_lost_write: every acknowledged send is missing from the final read, taken from B
    acked = [e for e in events if e["f"] == "send" and e["type"] == "ok"]
    lost = [a for a in results["anomalies"] if a["checker"] == "queue_lost_write"]
    assert acked and len(lost) == len(acked)
    (final,) = [e for e in events if e["f"] == "final_read" and e["type"] == "ok"]
    assert final["value"]["offsets"] == []
