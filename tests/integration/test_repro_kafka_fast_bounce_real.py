"""`harness repro KAFKA-7235-fast-bounce --kafka 2.1.1 / 2.2.0` (nightly: make test runs KAFKA-6584's
pair): the ZooKeeper proxy holds the controller's /brokers/ids notifications while broker 2 bounces,
so the controller reads the ids once, with broker 2 back. 2.1.1 compares ids only and sends broker 2
nothing (its replica stays out of the ISR); 2.2.0 (KIP-380) compares czxids, logs it bounced and
sends it a full UpdateMetadata and a LeaderAndIsr with its new epoch."""

from __future__ import annotations

import json

import pytest

from base.components.kafka import fetch_kafka

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.nightly, pytest.mark.timeout(900)]


@pytest.mark.parametrize("version", ["2.1.1", "2.2.0"])
def test_a_fast_bounce_is_missed_before_kip_380_and_handled_from_it(tmp_path, version):  # noqa: ANN001
    from harness.cli import main

    fetch_kafka(version)
    store = tmp_path / "store"
    assert main(["repro", "KAFKA-7235-fast-bounce", "--kafka", version, "--store", str(store), "--no-timeline"]) == 0
    (run_dir,) = [d for d in store.glob(f"repro-KAFKA-7235-fast-bounce-kafka-{version}/*")
                  if d.is_dir() and not d.is_symlink()]
    results = json.loads((run_dir / "results.json").read_text())
    events = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if line.strip()]
    regs: dict[int, list[int]] = {}
    for e in events:
        if e["src"].startswith("agent:") and e["f"] == "register" and e["type"] == "ok":
            regs.setdefault(e["value"]["broker_id"], []).append(e["value"]["epoch"])
    (b,) = [n for n, epochs in regs.items() if len(epochs) == 2]  # B: the one broker that bounced (not the controller)
    e1, e2 = regs[b]
    assert e2 > e1, regs[b]  # the bounce happened: E1 → E2
    held = [e for e in events if e["src"] == "zkproxy" and e["f"] == "hold_released"]
    assert held, "the controller's notifications were held and released"
    changes = [e["value"] for e in events if e["f"] == "broker_change"]
    to_b = {(e["value"]["kind"], e["value"]["broker_epoch"]) for e in events
            if e["f"] == "control_send" and e["value"]["target"] == b}
    if version == "2.1.1":
        assert results["checkers"]["bounce_handling"]["valid"] is False
        assert all(c["bounced_logged"] is None for c in changes)  # a 2.1 controller has no bounced class
        assert ("LeaderAndIsr", e2) not in to_b
    else:
        assert results["checkers"]["bounce_handling"]["valid"] is True
        assert any(c["bounced_logged"] == [b] for c in changes)
        assert ("LeaderAndIsr", e2) in to_b and ("UpdateMetadata", e2) in to_b
