"""The queue workload's checkers (``checkers/queue.py``) on hand-built histories, on a real local
SparkSession: one clean history, and for each anomaly kind a history that shows it, with the
operation ids the anomaly must cite."""

from __future__ import annotations

from typing import Any

import pytest

from checkers.project import CHECKER_NAMES, check_histories
from checkers.testing import EventLog

pytestmark = pytest.mark.integration
QUEUE = [n for n in CHECKER_NAMES if n.startswith("queue_")]
T = "queue"


class Q(EventLog):
    """Queue operations as the runner records them: an invoke, then its completion; returns the
    completion's id (what anomalies cite)."""

    def send(self, p: int, part: int, value: str, ok: str = "ok", offset: int | None = None, leader: int = 1,
             acks: str = "all") -> str:
        self.emit("client", "send", "invoke", p, topic=T, partition=part, value=value, acks=acks)
        done: dict[str, Any] = {"offset": offset, "leader": leader} if ok == "ok" else {"error_code": 6}
        return self.emit("client", "send", ok, p, topic=T, partition=part, value=value, acks=acks, **done)

    def poll(self, p: int, part: int, offset: int, recs: list[tuple[int, str]]) -> str:
        self.emit("client", "poll", "invoke", p, topic=T, partition=part, consumer=p, offset=offset)
        return self.emit("client", "poll", "ok", p, topic=T, partition=part, consumer=p, offset=offset,
                         offsets=[o for o, _ in recs], values=[v for _, v in recs], hw=offset + len(recs),
                         leader=1, leader_epoch=0)

    def final(self, part: int, recs: list[tuple[int, str]], ok: str = "ok") -> str:
        self.emit("client", "final_read", "invoke", "final", topic=T, partition=part)
        if ok != "ok":
            return self.emit("client", "final_read", ok, "final", topic=T, partition=part, error="no leader")
        return self.emit("client", "final_read", "ok", "final", topic=T, partition=part,
                         offsets=[o for o, _ in recs], values=[v for _, v in recs], hw=len(recs), leader=1,
                         leader_epoch=0)


def clean() -> Q:
    h = Q()
    h.send(0, 0, "p0-0", offset=0)
    h.send(1, 0, "p1-0", offset=1)
    h.poll(2, 0, 0, [(0, "p0-0")])
    h.poll(2, 0, 1, [(1, "p1-0")])
    h.final(0, [(0, "p0-0"), (1, "p1-0")])
    return h


def lost_write() -> tuple[Q, list[str]]:
    h = Q()
    h.emit("agent:1", "register", "ok", 1, broker_id=1, epoch=0x100000005)
    h.emit("agent:2", "register", "ok", 2, broker_id=2, epoch=0x100000007)
    s0 = h.send(0, 0, "p0-0", offset=0, leader=1)
    lost = h.send(1, 0, "p1-0", offset=1, leader=1)
    ps = h.emit("agent:1", "partition_state", "event", 1, broker_id=1, topic=T, partition=0, leader=2, leader_epoch=1,
                isr=[2])
    fid = h.final(0, [(0, "p0-0")])
    h.events[-1]["value"]["leader"] = 2
    return h, [s0, lost, ps, fid]


def inconsistent() -> tuple[Q, list[str]]:
    h = Q()
    a = h.send(0, 0, "p0-0", offset=0)
    r = h.poll(1, 0, 0, [(0, "p9-9")])
    f = h.final(0, [(0, "p0-0")])
    return h, [a, r, f]


def duplicated() -> tuple[Q, list[str]]:
    h = Q()
    a = h.send(0, 0, "p0-0", offset=0)
    f = h.final(0, [(0, "p0-0"), (1, "p0-0")])
    return h, [a, f]


def aborted() -> tuple[Q, list[str]]:
    h = Q()
    s = h.send(0, 0, "p0-0", ok="fail")
    r = h.poll(1, 0, 0, [(0, "p0-0")])
    return h, [s, r]


def skip() -> tuple[Q, list[str]]:
    h = Q()
    r1 = h.poll(1, 0, 0, [(0, "a"), (1, "b")])
    r2 = h.poll(1, 0, 2, [(4, "e")])
    return h, [r1, r2]


def backwards() -> tuple[Q, list[str]]:
    h = Q()
    r1 = h.poll(1, 0, 0, [(0, "a"), (1, "b")])
    r2 = h.poll(1, 0, 2, [(1, "b")])
    return h, [r1, r2]


def unseen() -> tuple[Q, list[str]]:
    h = Q()
    s = h.send(0, 0, "p0-0", offset=0)
    h.final(0, [], ok="info")  # the final read could not run: unseen is reported, not fatal
    return h, [s]


@pytest.fixture(scope="module")
def verdicts(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], list[str]]]:
    root = tmp_path_factory.mktemp("queue")
    cases: dict[str, tuple[Q, list[str]]] = {
        "clean": (clean(), []), "lost_write": lost_write(), "inconsistent": inconsistent(),
        "duplicate": duplicated(), "aborted": aborted(), "skip": skip(), "backwards": backwards(),
        "unseen": unseen()}
    paths = {name: str(h.write(root / name / "history.jsonl")) for name, (h, _) in cases.items()}
    out = check_histories(list(paths.values()), spark=spark, names=QUEUE)
    return {name: (out[p], cases[name][1]) for name, p in paths.items()}


def anomalies(r: dict[str, Any], checker: str) -> list[dict[str, Any]]:
    return [a for a in r["anomalies"] if a["checker"] == checker]


def only(r: dict[str, Any], checker: str) -> dict[str, Any]:
    """The one anomaly of ``checker``, no other shape-specific checker's (``queue_linearizable``
    judges every case as a whole: its own test)."""
    assert r["valid"] is False, r
    assert {a["checker"] for a in r["anomalies"]} - {"queue_linearizable"} == {checker}, r["anomalies"]
    (a,) = anomalies(r, checker)
    return a


def test_clean_history_is_valid_and_counts_operations(verdicts: dict) -> None:
    r, _ = verdicts["clean"]
    assert r["valid"] is True, r["anomalies"]
    stats = r["checkers"]["queue_unseen"]["stats"]
    assert stats["unseen_total"] == 0
    assert stats["client_ops"] == 5 and stats["ops_by_kind"] == {"send_ok": 2, "poll_ok": 2, "final_read_ok": 1}


def test_lost_acknowledged_write_cites_the_send_final_read_and_leader_change(verdicts: dict) -> None:
    r, (kept, lost, ps, fid) = verdicts["lost_write"]
    a = only(r, "queue_lost_write")
    assert lost in a["event_ids"] and fid in a["event_ids"] and kept not in a["event_ids"]
    assert ps in a["event_ids"], "the partition state written between the ack and the final read explains it"
    assert "p1-0" in a["message"] and "0x" not in a["message"]
    assert str(0x100000005) in a["message"] and str(0x100000007) in a["message"], "the brokers' epochs"


def test_two_values_at_one_offset(verdicts: dict) -> None:
    r, (send, read, final) = verdicts["inconsistent"]
    a = only(r, "queue_inconsistent_offsets")
    assert set(a["event_ids"]) == {send, read, final} and "p0-0" in a["message"] and "p9-9" in a["message"]


def test_one_value_at_two_offsets_is_a_duplicate(verdicts: dict) -> None:
    r, (send, final) = verdicts["duplicate"]
    a = only(r, "queue_duplicate")
    assert set(a["event_ids"]) == {send, final} and "0, 1" in a["message"]


def test_read_of_a_failed_send_is_an_aborted_read(verdicts: dict) -> None:
    r, (send, read) = verdicts["aborted"]
    a = only(r, "queue_aborted_read")
    assert set(a["event_ids"]) == {send, read} and "send failed" in a["message"]


def test_poll_skip(verdicts: dict) -> None:
    r, (r1, r2) = verdicts["skip"]
    a = only(r, "queue_poll_order")
    assert set(a["event_ids"]) == {r1, r2} and "skipped from offset 1 to 4" in a["message"]


def test_non_monotonic_poll(verdicts: dict) -> None:
    r, (r1, r2) = verdicts["backwards"]
    a = only(r, "queue_poll_order")
    assert set(a["event_ids"]) == {r1, r2} and "non-monotonic" in a["message"]


def test_unseen_is_reported_not_fatal_and_lost_write_is_unknown_without_a_final_read(verdicts: dict) -> None:
    r, (send,) = verdicts["unseen"]
    stats = r["checkers"]["queue_unseen"]
    assert stats["valid"] is True
    assert stats["stats"]["unseen_total"] == 1 and stats["stats"]["unseen"][0]["event_ids"] == [send]
    assert r["checkers"]["queue_lost_write"]["valid"] == "unknown"
    assert r["valid"] == "unknown", "never valid when the final read could not run"


def test_queue_linearizable_judges_every_case_as_one_log_per_partition(verdicts: dict) -> None:
    lin = {name: r["checkers"]["queue_linearizable"] for name, (r, _) in verdicts.items()}
    assert {n for n, c in lin.items() if c["valid"] is True} == {"clean", "unseen"}, lin
    assert all(c["valid"] is False for n, c in lin.items() if n not in ("clean", "unseen"))
    assert lin["clean"]["stats"]["queue_log_ops"] == 5 and lin["clean"]["stats"]["keys"] == 1
    assert lin["unseen"]["stats"]["by_kind"] == {"send_ok": 1}, "a final read that did not run is left out"
    r, (kept, lost, _, fid) = verdicts["lost_write"]
    (a,) = anomalies(r, "queue_linearizable")
    assert a["message"].startswith("lost write: ") and "'p1-0'" in a["message"], a
    assert lost in a["event_ids"] and fid in a["event_ids"] and kept not in a["event_ids"]
    r, (send, read, _) = verdicts["inconsistent"]
    (a,) = anomalies(r, "queue_linearizable")
    assert "read 'p9-9' at offset 0" in a["message"] and {send, read} <= set(a["event_ids"]), a
