"""Invariants 1 and 3 (``registration_epochs``, ``registration_liveness``) on hand-built histories,
through the local driver (``check_histories(local=True)``: no Spark). Each check has a breaking and
a passing history; tests/integration/test_registration_rows.py holds the Spark driver to the same
verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkers.project import check_histories
from checkers.testing import EventLog

T = 3000
S1, S2 = 0x100, 0x200
NAMES = ["registration_epochs", "registration_liveness"]


class H(EventLog):
    def at(self, t: float, src: str, f: str, type: str = "event", **value: Any) -> str:
        self.t = 1000.0 + t - 0.001  # emit adds 1 ms
        process = value.get("broker_id") if src != "nemesis" else "nemesis"
        return self.emit(src, f, type, process, **value)


def healthy(reregister: bool = True, epoch2: int = 20, observed_czxid2: int | None = None) -> H:
    h = H()
    h.at(0.0, "agent:1", "agent_start", broker_id=1, session_timeout_ms=T)
    h.at(0.05, "agent:1", "session", broker_id=1, state="connected", session_id=S1)
    h.at(0.1, "agent:1", "register", "ok", broker_id=1, epoch=10, czxid=10, session_id=S1)
    h.at(0.2, "observer", "broker_znode", broker_id=1, exists=True, czxid=10, owner=S1, final=False)
    h.at(1.0, "nemesis", "isolate", "info", phase="start", stage="complete", targets=["b1"])
    h.at(4.5, "agent:1", "session", broker_id=1, state="lost", session_id=S1)
    h.at(4.5, "agent:1", "deregistered", broker_id=1, epoch=10, session_id=S1)
    h.at(4.6, "observer", "broker_znode", broker_id=1, exists=False, final=False)
    h.at(8.0, "nemesis", "isolate", "info", phase="stop", stage="complete", targets=["b1"])
    h.at(8.4, "agent:1", "session", broker_id=1, state="connected", session_id=S2)
    if reregister:
        h.at(8.5, "agent:1", "register", "ok", broker_id=1, epoch=epoch2, czxid=epoch2, session_id=S2)
        czxid = observed_czxid2 if observed_czxid2 is not None else epoch2
        h.at(8.6, "observer", "broker_znode", broker_id=1, exists=True, czxid=czxid, owner=S2, final=False)
        h.at(16.0, "observer", "broker_znode", broker_id=1, exists=True, czxid=czxid, owner=S2, final=True)
    else:
        h.at(8.5, "agent:1", "register_skipped", broker_id=1, session_id=S2, reason="reregister_on_expiry=false")
        h.at(16.0, "observer", "broker_znode", broker_id=1, exists=False, final=True)
    h.at(16.0, "harness", "run_end", live_brokers=[1])
    return h


def check(h: EventLog, tmp_path: Path, **kw: Any) -> dict[str, Any]:
    p = str(h.write(tmp_path / "history.jsonl"))
    return check_histories([p], names=NAMES, local=True, spark=lambda: pytest.fail("local=True started Spark"),
                           **kw)[p]


def drop(h: EventLog, pred: Any) -> EventLog:
    h.events = [e for e in h.events if not pred(e)]
    return h


def test_healthy_history_is_valid(tmp_path: Path) -> None:
    r = check(healthy(), tmp_path)
    assert r["valid"] is True, r["anomalies"]
    assert set(r["checkers"]) == set(NAMES) and r["stats"]["events"] == 14


def test_missing_reregistration_is_a_liveness_anomaly_naming_the_broker(tmp_path: Path) -> None:
    r = check(healthy(reregister=False), tmp_path)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert a["checker"] == "registration_liveness" and a["broker"] == 1
    assert "nemesis/2" in a["event_ids"] and "not registered" in a["message"]


def test_epoch_that_does_not_grow_is_an_anomaly(tmp_path: Path) -> None:
    r = check(healthy(epoch2=10, observed_czxid2=10), tmp_path)
    assert any(a["checker"] == "registration_epochs" and "strictly increase" in a["message"] for a in r["anomalies"])


def test_epoch_differing_from_zookeepers_czxid_is_an_anomaly(tmp_path: Path) -> None:
    r = check(healthy(epoch2=20, observed_czxid2=21), tmp_path)
    assert any(a["checker"] == "registration_epochs" and "reported czxid 21" in a["message"] for a in r["anomalies"])


def test_epoch_differing_from_the_czxid_the_agent_read_is_an_anomaly(tmp_path: Path) -> None:
    h = healthy()
    reg = next(e for e in h.events if e["f"] == "register" and e["value"]["epoch"] == 20)
    reg["value"]["czxid"] = 19
    r = check(h, tmp_path)
    assert any(a["checker"] == "registration_epochs" and "znode czxid is 19" in a["message"] for a in r["anomalies"])


def test_history_ending_before_the_liveness_deadline_is_unknown_not_valid(tmp_path: Path) -> None:
    h = healthy()
    h.events[-1]["t_wall"] = 1012.0  # heal at 8.0 + T 3 s + margin 3 s = 14.0
    assert check(h, tmp_path)["valid"] == "unknown"
    assert check(h, tmp_path, margin_ms=0)["valid"] is True  # the margin is the caller's


def test_history_without_run_end_is_unknown(tmp_path: Path) -> None:
    r = check(drop(healthy(), lambda e: e["f"] == "run_end"), tmp_path)
    assert r["valid"] == "unknown"


def test_registration_the_observer_never_saw_is_unknown(tmp_path: Path) -> None:
    r = check(drop(healthy(), lambda e: e["src"] == "observer" and e["value"].get("czxid") == 10), tmp_path)
    assert r["valid"] == "unknown"
    assert r["checkers"]["registration_epochs"]["stats"]["unconfirmed_registrations"] == 1


def test_agent_believing_it_is_registered_while_zookeeper_disagrees_is_an_anomaly(tmp_path: Path) -> None:
    h = healthy()
    h.events[-2]["value"].update(exists=False, czxid=None, owner=None)
    r = check(h, tmp_path)
    assert r["valid"] is False
    assert any("ZooKeeper shows no znode" in a["message"] for a in r["anomalies"])


def test_end_of_run_form_judges_without_run_end(tmp_path: Path) -> None:
    """No run_end: the timed form cannot decide, but a CONNECTED agent whose final znode is owned by
    another session (KAFKA-14845's orphan) is still an anomaly, decided with no clock."""
    h = drop(healthy(), lambda e: e["f"] == "run_end")
    h.events[-1]["value"]["owner"] = 0x999
    r = check(h, tmp_path)
    assert r["valid"] is False
    (a,) = [a for a in r["anomalies"] if a["checker"] == "registration_liveness"]
    assert "CONNECTED session 0x200" in a["message"] and "owner=0x999" in a["message"]


def test_broker_not_listed_live_at_the_end_is_not_judged(tmp_path: Path) -> None:
    h = healthy(reregister=False)
    h.events[-1]["value"]["live_brokers"] = []
    assert check(h, tmp_path)["checkers"]["registration_liveness"]["valid"] is True


def test_a_missing_epoch_is_unknown_never_valid(tmp_path: Path) -> None:
    h = healthy()
    del next(e for e in h.events if e["f"] == "register")["value"]["epoch"]
    r = check(h, tmp_path)
    assert r["checkers"]["registration_epochs"]["valid"] == "unknown"
    assert "carries no epoch" in r["checkers"]["registration_epochs"]["stats"]["undecided"][0]


def test_timings_name_the_load_and_every_checker_in_order_and_leave_the_verdict_alone(tmp_path: Path) -> None:
    """``check_histories(timings=...)`` (what bench/check_latency.py reads) records each step, and
    asking for it changes nothing in the result."""
    timings: dict[str, float] = {}
    plain = check(healthy(reregister=False), tmp_path)
    timed = check(healthy(reregister=False), tmp_path, timings=timings)
    assert timed == plain
    assert list(timings) == ["load", *NAMES]
    assert all(isinstance(s, float) and s >= 0 for s in timings.values())


def test_once_cancelled_the_checkers_not_begun_are_skipped(tmp_path: Path) -> None:
    """``cancelled`` (a warm-up that a run's check overtook) is asked before each checker: the one
    running finishes, the rest are not begun."""
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 1

    r = check(healthy(), tmp_path, cancelled=cancelled)
    assert list(r["checkers"]) == NAMES[:1] and len(asked) == 2
    assert list(check(healthy(), tmp_path, cancelled=lambda: False)["checkers"]) == NAMES


def test_a_noop_heal_ends_no_fault_so_the_window_counts_from_the_last_real_one(tmp_path: Path) -> None:
    """The engine's final heal undid nothing (``noop``) at 14.5 s: the window runs from the isolation's
    stop at 8.0 s, so a run_end at 16.0 s decides it; a heal that did undo something moves it."""
    h = healthy()
    h.at(14.5, "nemesis", "heal", "info", phase="stop", stage="complete", reason="final", noop=True, sigcont=["b1"])
    h.events.sort(key=lambda e: e["t_wall"])
    r = check(h, tmp_path)
    assert r["valid"] is True, r
    assert r["checkers"]["registration_liveness"]["stats"]["last_heal"] == "nemesis/2"
    del next(e for e in h.events if e["f"] == "heal")["value"]["noop"]
    assert check(h, tmp_path)["valid"] == "unknown"  # 14.5 + T + margin is after run_end
