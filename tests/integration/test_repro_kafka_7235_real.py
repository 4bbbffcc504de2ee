"""`harness repro KAFKA-7235-stale-stopreplica|stale-shutdown --kafka 2.1.1|2.2.0`: KIP-380's stories
(b) and (c) on released brokers, the stale request captured by the Kafka wire proxy and replayed
after the broker's bounce (``replay_control``).

2.1.1, the last release before KIP-380, carries no broker epoch in StopReplica v0 or
ControlledShutdown v1 and acts on the replayed request: the new incarnation applies the StopReplica
built for the old one (``control_request_epochs``), and the controller moves the live broker's
replicas for the old incarnation's ControlledShutdown (``controlled_shutdown_epochs``). 2.2.0
answers both STALE_BROKER_EPOCH (77). The broker epochs of a 2.1.1 request are inferred from the
ZooKeeper proxy's creates of /brokers/ids/N (``broker_epoch_from``); 2.2.0's are on the wire.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from base.components.kafka import fetch_kafka

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.nightly, pytest.mark.timeout(900)]

PAIRS = [(story, version) for story in ("stale-stopreplica", "stale-shutdown") for version in ("2.1.1", "2.2.0")]


def _events(history: Path) -> list[dict]:
    return [json.loads(line) for line in history.read_text().splitlines() if line.strip()]


def _replayed(events: list[dict], api: str) -> tuple[dict, dict]:
    """The replayed request of ``api`` and its answer, as the proxy logged them."""
    frames = [e["value"] for e in events if e["src"] == "kafkaproxy" and e["f"] == "kafka_frame"
              and e["value"].get("action") == "replay" and e["value"].get("api") == api]
    (req,) = [f for f in frames if f["kind"] == "request"]
    (resp,) = [f for f in frames if f["kind"] == "response"]
    return req, resp


@pytest.mark.parametrize("story, version", PAIRS)
def test_kip_380_story_reproduces_before_2_2_and_is_fenced_from_it(tmp_path: Path, story: str, version: str) -> None:
    from harness.cli import main

    fetch_kafka(version)  # real Maven; a no-op once cached
    sid = f"KAFKA-7235-{story}"
    store = tmp_path / "store"
    assert main(["repro", sid, "--kafka", version, "--store", str(store), "--no-timeline"]) == 0
    (run_dir,) = [d for d in store.glob(f"repro-{sid}-kafka-{version}/*") if d.is_dir() and not d.is_symlink()]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["kafkaproxy"] is True and run["zkproxy"] == "all"
    results = json.loads((run_dir / "results.json").read_text())
    events = _events(run_dir / "history.jsonl")
    wire = [(e["f"], e["value"]) for e in events if e["src"] == "kafkawire"]
    bugged = version == "2.1.1"
    if story == "stale-stopreplica":
        req, resp = _replayed(events, "StopReplica")
        assert req["api_version"] == (0 if bugged else 1)
        assert resp.get("error") == (None if bugged else "STALE_BROKER_EPOCH")
        assert results["checkers"]["control_request_epochs"]["valid"] is (not bugged)
        (recv,) = [v for f, v in wire if f == "control_recv" and v["request_id"] == f"{resp['conn']}:{resp['correlation_id']}"]
        # built for E1, received by E2: the stale request, applied (2.1.1) or refused (2.2.0)
        assert recv["broker_epoch"] < recv["own_epoch"]
        assert recv["outcome"] == ("applied" if bugged else "rejected")
        assert ("broker_epoch_from" in recv) is bugged
    else:
        req, resp = _replayed(events, "ControlledShutdown")
        assert req["api_version"] == (1 if bugged else 2)
        assert resp.get("error") == (None if bugged else "STALE_BROKER_EPOCH")
        assert results["checkers"]["controlled_shutdown_epochs"]["valid"] is (not bugged)
        handled = [v for f, v in wire if f == "controlled_shutdown_handled"]
        stale = handled[-1]  # the replay's: the controller's last answer
        assert stale["broker_epoch"] < stale["cached_epoch"]
        assert bool(stale["stop_replicas"]) is bugged and stale["error_code"] == (0 if bugged else 77)
    if bugged:
        (anomaly,) = results["anomalies"]
        assert anomaly["checker"] in ("control_request_epochs", "controlled_shutdown_epochs")
