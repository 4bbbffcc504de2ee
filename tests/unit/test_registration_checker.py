"""Registration checkers on hand-built rows: each check has a breaking and a passing history."""

from __future__ import annotations

from checkers.registration import check_rows

T = 3000
S1, S2 = 0x100, 0x200


class H:
    """Builds extracted rows the way load_relevant returns them."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.seq: dict[str, int] = {}

    def add(self, src: str, t: float, f: str, type: str = "event", broker=None, **v) -> str:
        self.seq[src] = self.seq.get(src, 0) + 1
        row = {"id": f"{src}/{self.seq[src]}", "src": src, "seq": self.seq[src], "t_wall": t, "type": type, "f": f,
               "broker": broker, "epoch": None, "czxid": None, "owner": None, "session_id": None,
               "session_timeout_ms": None, "exists": None, "final": None, "phase": None, "stage": None,
               "state": None, "live_brokers": None, "margin_ms": None, "reason": None}
        row.update(v)
        self.rows.append(row)
        return row["id"]


def healthy(reregister: bool = True, epoch2: int = 20, observed_czxid2: int | None = None) -> H:
    h = H()
    h.add("agent:1", 0.0, "agent_start", broker=1, session_timeout_ms=T)
    h.add("agent:1", 0.1, "register", "ok", broker=1, epoch=10, session_id=S1)
    h.add("observer", 0.2, "broker_znode", broker=1, exists="true", czxid=10, owner=S1, final="false")
    h.add("nemesis", 1.0, "isolate", "info", phase="start", stage="complete")
    h.add("agent:1", 4.5, "session", broker=1, state="lost", session_id=S1)
    h.add("agent:1", 4.5, "deregistered", broker=1, epoch=10, session_id=S1)
    h.add("observer", 4.6, "broker_znode", broker=1, exists="false", final="false")
    h.add("nemesis", 8.0, "isolate", "info", phase="stop", stage="complete")
    if reregister:
        h.add("agent:1", 8.5, "register", "ok", broker=1, epoch=epoch2, session_id=S2)
        czxid = observed_czxid2 if observed_czxid2 is not None else epoch2
        h.add("observer", 8.6, "broker_znode", broker=1, exists="true", czxid=czxid, owner=S2, final="false")
        h.add("observer", 16.0, "broker_znode", broker=1, exists="true", czxid=czxid, owner=S2, final="true")
    else:
        h.add("agent:1", 8.5, "register_skipped", broker=1, session_id=S2)
        h.add("observer", 16.0, "broker_znode", broker=1, exists="false", final="true")
    h.add("harness", 16.0, "run_end", live_brokers="[1]")
    return h


def test_healthy_history_is_valid():
    r = check_rows(healthy().rows)
    assert r["valid"] is True, r["anomalies"]


def test_missing_reregistration_is_a_liveness_anomaly_naming_the_broker():
    r = check_rows(healthy(reregister=False).rows)
    assert r["valid"] is False
    (a,) = r["anomalies"]
    assert a["checker"] == "registration-liveness" and a["broker"] == 1
    assert "nemesis/2" in a["event_ids"]


def test_epoch_that_does_not_grow_is_an_anomaly():
    r = check_rows(healthy(epoch2=10, observed_czxid2=10).rows)
    assert r["valid"] is False
    assert any(a["checker"] == "registration-epochs" and "strictly increase" in a["message"] for a in r["anomalies"])


def test_epoch_differing_from_zookeepers_czxid_is_an_anomaly():
    r = check_rows(healthy(epoch2=20, observed_czxid2=21).rows)
    assert r["valid"] is False
    assert any(a["checker"] == "registration-epochs" and "reported czxid 21" in a["message"] for a in r["anomalies"])


def test_history_ending_before_the_liveness_deadline_is_unknown_not_valid():
    h = healthy()
    for row in h.rows:
        if row["f"] == "run_end":
            row["t_wall"] = 9.0  # heal at 8.0 + T 3s + margin 3s = 14.0
    r = check_rows(h.rows)
    assert r["valid"] == "unknown"


def test_history_without_run_end_is_unknown():
    h = healthy()
    h.rows = [r for r in h.rows if r["f"] != "run_end"]
    assert check_rows(h.rows)["valid"] == "unknown"


def test_registration_the_observer_never_saw_is_unknown():
    h = healthy()
    h.rows = [r for r in h.rows if not (r["src"] == "observer" and r["czxid"] == 10)]
    r = check_rows(h.rows)
    assert r["valid"] == "unknown"
    assert r["checkers"]["registration-epochs"]["stats"]["unconfirmed_registrations"] == 1


def test_agent_believing_it_is_registered_while_zookeeper_disagrees_is_an_anomaly():
    h = healthy()
    final = next(r for r in h.rows if r["final"] == "true")
    final.update(exists="false", czxid=None, owner=None)
    r = check_rows(h.rows)
    assert r["valid"] is False
    assert any("ZooKeeper shows no znode" in a["message"] for a in r["anomalies"])
