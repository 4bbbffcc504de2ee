"""`harness repro KAFKA-7235-lost-write`: with broker_epoch_check=off the fast-bounced broker applies
a stale LeaderAndIsr as its first request, rewrites its high-watermark checkpoint without the
partition holding acknowledged records, truncates them and is elected leader: the final read
lacks every acknowledged send. With KIP-380 the same story loses nothing. The verdicts come from
the checkers over each recorded history; this test reads them and the history's own events."""

from __future__ import annotations

import json
import re

import pytest

from scenarios import scenarios
from tests.runs import explain, run_on

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

SID = "KAFKA-7235-lost-write"


def _history(run_dir):
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if line.strip()]


def test_bug_loses_every_acknowledged_send_and_names_ops_and_epochs(warm_engine, tmp_path):
    r = run_on(warm_engine, tmp_path / "store", scenarios()[SID].spec(False))
    assert r.error is None, r.error
    assert r.matched and r.reproduced, explain(r)
    hist = _history(r.run_dir)
    acked = {e["id"]: e["value"]["value"] for e in hist if e["f"] == "send" and e["type"] == "ok"}
    assert len(acked) == 5
    final = next(e["id"] for e in hist if e["f"] == "final_read" and e["type"] == "ok")
    # B: the broker whose checkpoint rewrite dropped the partition; both its epochs are cited
    b_src = next(e["src"] for e in hist if e["f"] == "hw_checkpoint" and "t7235lw-0" in (e["value"].get("dropped") or []))
    epochs = {e["value"]["epoch"] for e in hist if e["f"] == "register" and e["type"] == "ok" and e["src"] == b_src}
    assert len(epochs) == 2
    lost = [a for a in r.anomalies if a["checker"] == "queue_lost_write"]
    # one anomaly per acknowledged send, citing that send's op, the final read and the epochs
    assert sorted(re.search(r"send of (\S+) at", a["message"]).group(1) for a in lost) == sorted(acked.values())
    for a in lost:
        value = re.search(r"send of (\S+) at", a["message"]).group(1)
        sid = next(i for i, v in acked.items() if v == value)
        assert sid in a["event_ids"] and final in a["event_ids"], a
        assert "missing in the final read" in a["message"]
        assert all(f": {ep}" in a["message"] for ep in epochs), (epochs, a["message"])
    # the cause is in the history too: B applied a LeaderAndIsr carrying its previous epoch,
    # its checkpoint dropped t7235lw-0, and it truncated the acknowledged records
    assert any(a["checker"] == "control_request_epochs" for a in r.anomalies)
    assert any(e["f"] == "truncate" and e["value"].get("topic") == "t7235lw" and e["value"].get("dropped") == 5
               for e in hist)


def test_fixed_loses_nothing(warm_engine, tmp_path):
    r = run_on(warm_engine, tmp_path / "store", scenarios()[SID].spec(True))
    assert r.error is None, r.error
    assert r.matched and not r.reproduced, explain(r)
    assert r.verdicts["queue_lost_write"] is True and r.verdicts["control_request_epochs"] is True
    hist = _history(r.run_dir)
    final = [e for e in hist if e["f"] == "final_read" and e["type"] == "ok"]
    assert final and final[-1]["value"]["offsets"] == [0, 1, 2, 3, 4]
    assert not any(e["f"] == "truncate" and e["value"].get("topic") == "t7235lw" for e in hist)
