"""The history a run's background warm-up checks (``checkers/warm_up.jsonl``, ``checkers.project.warm_up``)
is a real, valid queue-workload run on which every checker decides: checked on a real local
SparkSession, as the warm-up checks it. A warm-up history that some checker found invalid or could
not decide would compile paths a valid run's check never takes, and leave cold the ones it does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from checkers.project import WARM_UP_HISTORY, check_histories

pytestmark = pytest.mark.integration


def test_the_warm_up_history_is_valid_and_every_checker_decides(spark: Any) -> None:
    r = check_histories([str(WARM_UP_HISTORY)], spark=spark)[str(WARM_UP_HISTORY)]
    assert r["valid"] is True, r["anomalies"]
    assert {name: c["valid"] for name, c in r["checkers"].items() if c["valid"] is not True} == {}
    kinds = {json.loads(line)["f"] for line in WARM_UP_HISTORY.read_text(encoding="utf-8").splitlines()}
    # what `make run` records: registrations, a broker isolated and healed, the queue workload, ISR changes
    assert {"register", "isolate", "heal", "send", "poll", "final_read", "alter_partition_handled",
            "control_send", "controlled_shutdown"} <= kinds
    assert r["checkers"]["queue_unseen"]["stats"]["client_ops"] > 100
