"""The Kafka proxy's frames mapped onto the agents' control-plane kinds (``base.kafkawire``), from
plain events: requests as control_send, answers as control_recv with the broker's own epoch from its
log, rejections with their error codes, ControlledShutdown as an op; and the checkers a real-broker
run feeds (``checkers.kafka_feeds``) as docs/checking.md's table says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from base.kafkawire import error_code, wire_events
from checkers.kafka_feeds import fed, kafka_feeds
from checkers.project import CHECKER_NAMES
from history import Event
from history.kinds import KINDS, WRITTEN

ROOT = Path(__file__).resolve().parents[2]


def frame(seq: int, t: float, **value: Any) -> Event:
    return Event("r", "kafkaproxy", seq, t, 0, "event", "kafka_frame", None, {"decoded": True, **value})


def register(broker: int, t: float, epoch: int) -> Event:
    return Event("r", f"agent:{broker}", 1, t, 0, "ok", "register", broker, {"broker_id": broker, "epoch": epoch})


LAI = {"api": "LeaderAndIsr", "controller_id": 1, "dst_broker": 2, "src_broker": 1}
PARTS = [{"topic": "queue", "partition": 0, "leader": 2, "leader_epoch": 3, "isr": [2, 3]}]


def test_a_control_request_and_its_answer_are_a_send_and_an_applied_receive() -> None:
    out = wire_events([
        frame(1, 10.0, dir="c2s", kind="request", conn=4, correlation_id=7, controller_epoch=5, broker_epoch=200,
              partitions=PARTS, **LAI),
        frame(2, 10.5, dir="s2c", kind="response", conn=4, correlation_id=7, req_seq=1, **LAI),
    ], [register(2, 1.0, 100), register(2, 9.0, 200), register(2, 11.0, 300)], run="r")
    send, recv = out
    assert (send.src, send.seq, send.f, send.t_wall) == ("kafkawire", 1, "control_send", 10.0)
    assert send.value == {"broker_id": 1, "request_id": "4:7", "kind": "LeaderAndIsr", "target": 2,
                          "controller_epoch": 5, "broker_epoch": 200, "max_broker_epoch": None, "epoch_map": None,
                          "full": None, "partitions": PARTS}
    assert recv.f == "control_recv" and recv.t_wall == 10.5 and recv.process == 2
    assert recv.value | {"partitions": None} == {
        "broker_id": 2, "request_id": "4:7", "kind": "LeaderAndIsr", "from": 1, "controller_epoch": 5,
        "broker_epoch": 200, "max_broker_epoch": None, "own_epoch": 200,  # the registration current at 10.5
        "max_controller_epoch_seen": None, "outcome": "applied", "error_code": 0, "full": None,
        "partitions": None, "partition_errors": None}
    for e in out:  # every field the contract says every writer writes is there
        assert all(not n.missing({"type": e.type, "value": e.value}) for n in WRITTEN if n.kind == e.f)
        assert set(e.value) <= set(KINDS[e.f].fields) and "kafkawire" in KINDS[e.f].sources


def test_a_rejection_keeps_its_error_code_and_an_unanswered_request_says_nothing_of_the_broker() -> None:
    um = {**LAI, "api": "UpdateMetadata"}
    out = wire_events([
        frame(3, 2.0, dir="c2s", kind="request", conn=1, correlation_id=1, controller_epoch=5, broker_epoch=90, **um),
        frame(5, 2.1, dir="s2c", kind="response", conn=1, correlation_id=1, req_seq=3, error="STALE_BROKER_EPOCH",
              errors=["STALE_BROKER_EPOCH"], **um),
        frame(6, 3.0, dir="c2s", kind="request", conn=1, correlation_id=2, controller_epoch=5, broker_epoch=100,
              action="drop", **um),  # dropped: no answer
        frame(7, 3.5, dir="c2s", kind="request", conn=1, correlation_id=3, decoded=False, parse_error="x", **um),
    ], [register(2, 1.0, 100)])
    assert [(e.f, e.value.get("outcome"), e.value.get("error_code")) for e in out] == [
        ("control_send", None, None), ("control_recv", "rejected", 77), ("control_send", None, None)]
    assert out[1].value["own_epoch"] == 100 and out[1].value["broker_epoch"] == 90


def test_frames_are_mapped_in_the_proxys_order_and_other_apis_are_left_out() -> None:
    fetch = {"api": "Fetch", "src_broker": 3, "dst_broker": 2}
    out = wire_events([
        frame(9, 5.0, dir="s2c", kind="response", conn=2, correlation_id=1, req_seq=8, **LAI),
        frame(8, 4.0, dir="c2s", kind="request", conn=2, correlation_id=1, controller_epoch=1, **LAI),
        frame(10, 5.0, dir="c2s", kind="request", conn=3, correlation_id=1, **fetch),
        frame(11, 5.1, dir="s2c", kind="response", conn=9, correlation_id=1, req_seq=99, **LAI),  # no request seen
    ])
    assert [(e.seq, e.f) for e in out] == [(1, "control_send"), (2, "control_recv")]
    assert out[1].value["own_epoch"] is None  # no registration in the log (before 2.2: none has an epoch)


def test_a_controlled_shutdown_is_an_op_of_the_broker_that_asked() -> None:
    cs = {"api": "ControlledShutdown", "src_broker": 3, "dst_broker": 1}
    out = wire_events([
        frame(1, 1.0, dir="c2s", kind="request", conn=5, correlation_id=0, broker_epoch=300, **cs),
        frame(2, 1.2, dir="s2c", kind="response", conn=5, correlation_id=0, req_seq=1, error="STALE_BROKER_EPOCH",
              partitions=[{"topic": "t", "partition": 1}], **cs),
    ])
    assert [(e.f, e.type, e.value["broker_id"]) for e in out] == [("controlled_shutdown", "invoke", 3),
                                                                   ("controlled_shutdown", "fail", 3)]
    assert out[1].value["error_code"] == 77 and out[1].value["remaining_partitions"] == [{"topic": "t", "partition": 1}]


def test_error_names_are_kafkas_codes() -> None:
    from kio.schema.errors import ErrorCode

    from nemesis.kafkaproxy.codec import error_name

    assert [error_code(n) for n in (None, "STALE_BROKER_EPOCH", "STALE_CONTROLLER_EPOCH", "UNKNOWN_ERROR_999")] == [
        0, 77, 11, 999]
    assert all(error_code(error_name(c.value)) == c.value for c in ErrorCode)  # every name the proxy writes


def test_every_checker_is_fed_or_unknown_with_a_reason() -> None:
    feeds = kafka_feeds("3.9.1", kafkaproxy=True, zkproxy=False, queue=False)
    assert list(feeds) == list(CHECKER_NAMES)
    assert all((f.fed_from is None) != (f.unknown is None) for f in feeds.values())
    assert fed(feeds) == ("registration_epochs", "registration_liveness", "control_request_epochs",
                          "controller_epochs", "bounce_handling", "isr_expansion")
    # before 2.7 a leader writes its ISR itself: no AlterIsr on the wire
    assert kafka_feeds("2.6.3", kafkaproxy=True, zkproxy=False, queue=False)["isr_expansion"].fed_from is None
    assert fed(kafka_feeds("3.9.1", kafkaproxy=False, zkproxy=False, queue=False)) == (
        "registration_epochs", "registration_liveness")
    assert feeds["partition_states"].as_dict()["valid"] == "unknown"


def docs_table() -> dict[str, dict[str, str]]:
    text = (ROOT / "docs" / "checking.md").read_text()
    table = text.split("## Checkers on real Kafka brokers", 1)[1].split("\n## ", 1)[0]
    lines = table.splitlines()
    start = next(i for i, r in enumerate(lines) if r.startswith("| checker |"))
    rows = [r for r in lines[start:] if r.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    out = {}
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        (name,) = re.findall(r"`(\w+)`", cells[0])
        out[name] = dict(zip(header[1:], cells[1:], strict=True))
    return out


@pytest.mark.parametrize("column, version", [("2.0–2.1", "2.1.1"), ("2.2–3.9", "3.9.1")])
def test_the_docs_table_says_what_the_code_selects(column: str, version: str) -> None:
    """docs/checking.md's table is for a run with both proxies and the queue workload."""
    table = docs_table()
    assert sorted(table) == sorted(CHECKER_NAMES), "a row per checker"
    feeds = kafka_feeds(version, kafkaproxy=True, zkproxy=True, queue=True)
    wrong = [f"{n}: docs say {table[n][column][:30]!r}" for n, f in feeds.items()
             if table[n][column].startswith("fed") != (f.fed_from is not None)
             or not table[n][column].startswith(("fed", "unknown"))]
    assert not wrong, wrong


def test_a_salvaged_run_maps_its_proxys_frames_as_a_finished_one_does(tmp_path: Path) -> None:
    """``harness teardown`` after a SIGKILL of the control node: the frames the proxy wrote so far
    are mapped like at a run's end (``map_run_frames``) before the history is merged."""
    from base.kafkalog import write_events
    from harness.salvage import salvage
    from history import read_events

    events = tmp_path / "run" / "events"
    events.mkdir(parents=True)
    write_events([frame(1, 1.0, dir="c2s", kind="request", conn=1, correlation_id=1, controller_epoch=2, **LAI),
                  frame(2, 1.1, dir="s2c", kind="response", conn=1, correlation_id=1, req_seq=1, **LAI)],
                 events / "kafkaproxy.jsonl")
    assert salvage({"run_dir": str(tmp_path / "run"), "run_id": "r"}, lambda *a: False) == 5
    merged = [(e.src, e.f) for e in read_events(tmp_path / "run" / "history.jsonl")]
    assert merged[:4] == [("kafkaproxy", "kafka_frame"), ("kafkawire", "control_send"),
                          ("kafkaproxy", "kafka_frame"), ("kafkawire", "control_recv")], merged


def test_harness_check_of_a_stored_kafka_run_counts_only_what_the_run_fed() -> None:
    """`harness check RUN_DIR` runs every checker; on a run of real brokers a checker given nothing
    finds nothing and says valid. Judged as the run was, those are left out of the verdict and listed
    as unknown with why; an agents' run is returned as it is."""
    from checkers.kafka_feeds import as_the_run_judged

    result = {"valid": False, "stats": {"events": 9},
              "checkers": {"registration_liveness": {"valid": True}, "bounce_handling": {"valid": False},
                           "queue_duplicate": {"valid": True}},
              "anomalies": [{"checker": "bounce_handling", "message": "m", "event_ids": []}]}
    run = {"kafka": {"version": "3.9.1", "zk_socket": "nio", "zk_hosts": None}, "kafkaproxy": False,
           "zkproxy": "off", "workload": "none"}
    got = as_the_run_judged(result, run)
    assert got["valid"] is True and list(got["checkers"]) == ["registration_liveness"] and got["anomalies"] == []
    assert got["feeds"]["bounce_handling"]["valid"] == "unknown" and got["feeds"]["bounce_handling"]["reason"]
    assert got["feeds"]["queue_duplicate"] == {"valid": "unknown", "reason": "no queue workload in this run "
                                                                             "(--workload queue)"}
    damaged = as_the_run_judged({**result, "stats": {"damaged_lines": 1}}, run)
    assert damaged["valid"] == "unknown"
    assert as_the_run_judged(result, {"kafka": None}) is result

