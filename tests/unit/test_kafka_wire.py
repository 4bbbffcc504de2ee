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


def test_what_a_broker_saw_before_a_request_is_the_answers_that_came_back_before_it_went_out() -> None:
    """A broker answers requests from different connections in any order (3.9.1 under load: a new
    controller's UpdateMetadata answered just before an older one's LeaderAndIsr, which it had handled
    first): only an answer that reached the proxy before the request went out was handled before it."""
    old = {**LAI, "controller_id": 2}
    new = {**LAI, "api": "UpdateMetadata"}
    out = wire_events([
        frame(1, 1.0, dir="c2s", kind="request", conn=29, correlation_id=15, controller_epoch=1, broker_epoch=100,
              partitions=PARTS, **old),
        frame(2, 5.0, dir="c2s", kind="request", conn=39, correlation_id=0, controller_epoch=2, broker_epoch=100, **new),
        frame(3, 5.1, dir="s2c", kind="response", conn=39, correlation_id=0, req_seq=2, **new),
        frame(4, 5.2, dir="s2c", kind="response", conn=29, correlation_id=15, req_seq=1, **old),
        frame(5, 6.0, dir="c2s", kind="request", conn=29, correlation_id=16, controller_epoch=1, broker_epoch=100,
              partitions=PARTS, **old),
        frame(6, 6.1, dir="s2c", kind="response", conn=29, correlation_id=16, req_seq=5, **old),
    ], [register(2, 0.5, 100)])
    recvs = [(e.value["request_id"], e.value["controller_epoch"], e.value["max_controller_epoch_seen"])
             for e in out if e.f == "control_recv"]
    assert recvs == [("39:0", 2, None), ("29:15", 1, None), ("29:16", 1, 2)]


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
                                                                   ("controlled_shutdown", "fail", 3),
                                                                   ("controlled_shutdown_handled", "event", 3)]
    assert out[1].value["error_code"] == 77 and out[1].value["remaining_partitions"] == [{"topic": "t", "partition": 1}]
    handled = out[2]
    assert handled.process == 1 and handled.t_wall == 1.2  # the controller's account, at its answer
    assert handled.value == {"broker_id": 3, "request_id": "5:0", "broker_epoch": 300, "cached_epoch": None,
                             "outcome": "rejected", "error_code": 77, "leader_moves": [], "stop_replicas": [],
                             "remaining_leaders": ["t-1"]}


SR = {"api": "StopReplica", "controller_id": 1, "src_broker": 1, "dst_broker": 2}
CS = {"api": "ControlledShutdown", "src_broker": 2, "dst_broker": 1}
T0 = [{"topic": "t", "partition": 0}]


def test_a_pre_kip_380_request_is_built_for_the_registration_current_when_it_was_first_sent() -> None:
    """StopReplica v0 names no broker epoch: a request sent while B's registration was E1 = 100 is
    for E1, and so is its replay (the same bytes) after B re-registered as E2 = 200, which B applied:
    the stale request control_request_epochs catches. The registrations are the ZooKeeper proxy's
    creates; the broker's own epoch its (wire-completed) register ok events."""
    created = {2: [(1.0, 100), (5.0, 200)]}
    out = wire_events([
        frame(1, 3.0, dir="c2s", kind="request", conn=2, correlation_id=9, controller_epoch=1, partitions=T0,
              action="capture", **SR),
        frame(2, 3.1, dir="s2c", kind="response", conn=2, correlation_id=9, req_seq=1, **SR),
        frame(3, 8.0, dir="c2s", kind="request", conn=7, correlation_id=9, controller_epoch=1, partitions=T0,
              action="replay", replay_of=1, **SR),
        frame(4, 8.1, dir="s2c", kind="response", conn=7, correlation_id=9, req_seq=3, action="replay", replay_of=1,
              **SR),
    ], [register(2, 1.1, 100), register(2, 5.2, 200)], created=created)
    recvs = [e.value for e in out if e.f == "control_recv"]
    assert [(r["request_id"], r["broker_epoch"], r["own_epoch"], r["outcome"]) for r in recvs] == [
        ("2:9", 100, 100, "applied"), ("7:9", 100, 200, "applied")]
    assert all(r["broker_epoch_from"] == "registration at send" for r in recvs)
    sends = [e.value for e in out if e.f == "control_send"]
    assert [s["broker_epoch"] for s in sends] == [100, 100] and "broker_epoch_from" in sends[1]
    # a request sent after the create: for the new incarnation (never older than the creation says)
    (late,) = [e.value for e in wire_events([frame(1, 5.05, dir="c2s", kind="request", conn=2, correlation_id=1,
                                                   controller_epoch=1, **SR)], created=created)]
    assert late["broker_epoch"] == 200
    # a 2.2+ request's own epoch is taken as it is; no registration known: null, not a guess
    (own,) = wire_events([frame(1, 3.0, dir="c2s", kind="request", conn=2, correlation_id=1, broker_epoch=150,
                                **SR)], created=created)
    assert own.value["broker_epoch"] == 150 and "broker_epoch_from" not in own.value
    (none,) = wire_events([frame(1, 0.5, dir="c2s", kind="request", conn=2, correlation_id=1, **SR)], created=created)
    assert none.value["broker_epoch"] is None and "broker_epoch_from" not in none.value


def test_a_replayed_controlled_shutdown_of_the_old_incarnation_that_the_controller_acted_on() -> None:
    """2.1.1: B (E1 = 100) shut down, re-registered as E2 = 200 and follows t-0 again (the controller's
    LeaderAndIsr to it is for E2); the replayed ControlledShutdown v1 of E1 is accepted and within the
    second after the answer the controller sends B a StopReplica and moves the leadership of t-1 off
    B: a stale shutdown acted on. The 2.2 answer STALE_BROKER_EPOCH with nothing sent is clean."""
    created = {2: [(1.0, 100), (5.0, 200)]}
    lai = {"api": "LeaderAndIsr", "controller_id": 1, "src_broker": 1}
    led = [{"topic": "t", "partition": 1, "leader": 2}]
    frames = [
        frame(1, 2.0, dir="c2s", kind="request", conn=3, correlation_id=1, controller_epoch=1, partitions=led,
              **lai, dst_broker=3),
        frame(2, 4.0, dir="c2s", kind="request", conn=4, correlation_id=5, action="capture", **CS),
        frame(3, 4.1, dir="s2c", kind="response", conn=4, correlation_id=5, req_seq=2, **CS),
        frame(4, 6.0, dir="c2s", kind="request", conn=8, correlation_id=1, controller_epoch=1, partitions=T0,
              **lai, dst_broker=2),
        frame(5, 9.0, dir="c2s", kind="request", conn=9, correlation_id=5, action="replay", replay_of=2, **CS),
        frame(6, 9.2, dir="s2c", kind="response", conn=9, correlation_id=5, req_seq=5, action="replay", **CS),
        frame(7, 9.5, dir="c2s", kind="request", conn=8, correlation_id=2, controller_epoch=1, partitions=T0, **SR),
        frame(8, 9.6, dir="c2s", kind="request", conn=3, correlation_id=2, controller_epoch=1,
              partitions=[{"topic": "t", "partition": 1, "leader": 3}], **lai, dst_broker=3),
        frame(9, 11.0, dir="c2s", kind="request", conn=8, correlation_id=3, controller_epoch=1, partitions=T0, **SR),
    ]
    out = wire_events(frames, created=created)
    first, replayed = [e.value for e in out if e.f == "controlled_shutdown_handled"]
    # the first: E1's own shutdown, the controller's last request to B (none yet): not judged
    assert (first["broker_epoch"], first["cached_epoch"]) == (100, None)
    assert replayed == {"broker_id": 2, "request_id": "9:5", "broker_epoch": 100,
                        "broker_epoch_from": "registration at send", "cached_epoch": 200,
                        "cached_epoch_from": "last control request", "outcome": "accepted", "error_code": 0,
                        "leader_moves": [{"partition": "t-1", "from": 2, "to": 3, "request_id": "3:2"}],
                        "stop_replicas": ["t-0"], "remaining_leaders": []}  # the StopReplica at 11.0 is too late
    fixed = [*frames[:4], frame(5, 9.0, dir="c2s", kind="request", conn=9, correlation_id=5, broker_epoch=100,
                                action="replay", replay_of=2, **CS),
             frame(6, 9.2, dir="s2c", kind="response", conn=9, correlation_id=5, req_seq=5, error="STALE_BROKER_EPOCH",
                   **CS)]
    stale = [e.value for e in wire_events(fixed, created=created) if e.f == "controlled_shutdown_handled"][-1]
    assert (stale["outcome"], stale["error_code"], stale["leader_moves"], stale["stop_replicas"]) == (
        "rejected", 77, [], [])
    assert "broker_epoch_from" not in stale and stale["cached_epoch"] == 200


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
                          "controller_epochs", "bounce_handling", "controlled_shutdown_epochs",
                          "isr_expansion")
    # before 2.7 a leader writes its ISR itself: no AlterIsr on the wire
    assert kafka_feeds("2.6.3", kafkaproxy=True, zkproxy=False, queue=False)["isr_expansion"].fed_from is None
    assert fed(kafka_feeds("3.9.1", kafkaproxy=False, zkproxy=False, queue=False)) == (
        "registration_epochs", "registration_liveness")
    assert feeds["partition_states"].as_dict()["valid"] == "unknown"
    # before KIP-380 the epochs a shutdown is judged by are inferred from the ZooKeeper proxy's creates
    assert "controlled_shutdown_epochs" in fed(kafka_feeds("2.1.1", kafkaproxy=True, zkproxy=True, queue=False))
    old = kafka_feeds("2.1.1", kafkaproxy=True, zkproxy=False, queue=False)
    assert "controlled_shutdown_epochs" not in fed(old) and "--zkproxy" in old["controlled_shutdown_epochs"].unknown
    assert "only the controller-epoch cases" in str(old["control_request_epochs"].fed_from)


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

