"""The ISR expansion's account from the Kafka proxy's frames (``base.kafkawire.isr_events``, plain
data): a replica's answered fetches, a leader's AlterPartition with the fetch it rests on, the
controller's answer; topic ids named; merged and numbered with the control plane's events. And the
observer's partition states (``harness.observer``), from a state znode's data and stat."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from base.kafkalog import write_events
from base.kafkawire import isr_events, map_run_frames, merged, topic_names, wire_events
from harness.observer import BrokerObserver
from history import Event, read_events
from history.kinds import KINDS, WRITTEN

TID = "3ad1a3ab-ef40-4320-9281-71391401c905"
E1, E2 = 4294967385, 4294967402  # B's epochs (czxids) before and after its restart with an empty disk


def frame(seq: int, t: float, **value: Any) -> Event:
    return Event("r", "kafkaproxy", seq, t, 0, "event", "kafka_frame", None,
                 {"decoded": True, "action": "forward", **value})


def lai(seq: int, t: float, dst: int) -> Event:
    """The controller (2)'s LeaderAndIsr naming the topic both ways."""
    return frame(seq, t, api="LeaderAndIsr", kind="request", conn=1, correlation_id=seq, controller_id=2,
                 dst_broker=dst, src_broker=2, partitions=[{"topic": "t14139", "topic_id": TID, "partition": 0,
                                                            "leader": 1, "leader_epoch": 1, "isr": [1]}])


def fetch(seq: int, t: float, offset: int, epoch: int | None = E1, version: int = 17, conn: int = 27,
          action: str = "forward") -> Event:
    extra = {"replica_epoch": epoch} if epoch is not None else {}
    return frame(seq, t, api="Fetch", api_version=version, kind="request", conn=conn, correlation_id=seq,
                 src_broker=3, dst_broker=1, replica_id=3, action=action,
                 partitions=[{"topic": TID, "partition": 0, "leader_epoch": 1, "fetch_offset": offset}], **extra)


def answer(seq: int, t: float, req: Event, **value: Any) -> Event:
    return frame(seq, t, api=req.value["api"], kind="response", conn=req.value["conn"],
                 correlation_id=req.value["correlation_id"], req_seq=req.seq, **value)


def alter(seq: int, t: float, action: str = "hold") -> Event:
    return frame(seq, t, api="AlterPartition", api_version=3, kind="request", conn=28, correlation_id=0,
                 src_broker=1, dst_broker=2, broker_epoch=4294967359, action=action,
                 partitions=[{"topic": TID, "partition": 0, "leader_epoch": 1, "isr": [1, 3], "isr_epochs": [-1, -1],
                              "partition_epoch": 1}])


def story() -> list[Event]:
    """KAFKA-14139 as the proxy saw it on 3.9.1: B (3) fetches from A (1) with its epoch E1 and catches
    up; A's expansion is held; a fetch of the new B is dropped; the held request is answered."""
    f1, f2 = fetch(2, 10.0, 0), fetch(4, 10.1, 5)
    ap = alter(6, 10.2)
    dropped = fetch(7, 15.0, 0, epoch=E2, conn=29, action="drop")
    return [lai(1, 9.0, 1), f1, answer(3, 10.05, f1), f2, answer(5, 10.15, f2), ap, dropped,
            answer(8, 20.5, ap, partitions=[{"topic": TID, "partition": 0, "leader": 1, "leader_epoch": 1,
                                             "isr": [1, 3], "partition_epoch": 2}])]


def test_a_held_expansion_rests_on_the_replicas_last_answered_fetch_and_its_answer_is_the_commit() -> None:
    out = isr_events(story(), "r")
    assert [(e.id, e.f) for e in out] == [("kafkawire/1", "fetch"), ("kafkawire/2", "fetch"),
                                          ("kafkawire/3", "alter_partition"),
                                          ("kafkawire/4", "alter_partition_handled")]
    f = out[1].value
    assert f == {"broker_id": 1, "topic": "t14139", "partition": 0, "replica": 3, "replica_epoch": E1,
                 "fetch_offset": 5, "leader": 1, "leader_epoch": 1, "request_id": "27:4"}
    ap = out[2].value
    assert ap["based_on_fetch"] == {"3": "kafkawire/2"} and ap["held"] is True and ap["topic"] == "t14139"
    assert ap["new_isr_with_epochs"] == [{"id": 1, "epoch": -1}, {"id": 3, "epoch": -1}]
    assert (ap["request_id"], ap["broker_epoch"], ap["partition_epoch"]) == ("28:0", 4294967359, 1)
    hd = out[3]
    assert hd.process == 2 and hd.t_wall == 20.5  # the controller's account, when it answered
    assert {k: hd.value[k] for k in ("request_id", "leader", "broker_epoch", "outcome", "error_code", "isr",
                                     "partition_epoch", "live")} == {
        "request_id": "28:0", "leader": 1, "broker_epoch": 4294967359, "outcome": "accepted", "error_code": 0,
        "isr": [1, 3], "partition_epoch": 2, "live": None}
    # every field the event contract says every writer writes, present (null where the wire has none)
    for e in out:
        for need in WRITTEN:
            if need.kind == e.f:
                assert not need.missing({"type": e.type, "value": e.value}), (e.f, need)
        assert set(e.value) <= set(KINDS[e.f].fields), e.f


def test_unanswered_refused_and_consumer_fetches_say_nothing_and_a_rejection_is_rejected() -> None:
    f = fetch(2, 1.0, 3)
    refused = answer(3, 1.1, f, partitions=[{"topic": TID, "partition": 0, "error": "FENCED_LEADER_EPOCH"}])
    consumer = frame(4, 1.2, api="Fetch", api_version=17, kind="request", conn=5, correlation_id=1, replica_id=-1,
                     dst_broker=1, partitions=[{"topic": TID, "partition": 0}])
    unanswered = fetch(6, 1.3, 4)
    ap = alter(7, 2.0, action="forward")
    no = answer(8, 2.1, ap, partitions=[{"topic": TID, "partition": 0, "error": "INELIGIBLE_REPLICA"}])
    out = isr_events([lai(1, 0.5, 1), f, refused, consumer, answer(5, 1.25, consumer), unanswered, ap, no])
    assert [e.f for e in out] == ["alter_partition", "alter_partition_handled"]
    assert out[0].value["based_on_fetch"] == {} and out[0].value["held"] is False  # no fetch to rest on
    assert (out[1].value["outcome"], out[1].value["error_code"], out[1].value["isr"]) == ("rejected", 107, None)


def test_the_replica_epoch_by_fetch_version() -> None:
    """Before v15 a fetch carries no epoch (-1, as Kafka's own 'unknown'); a v15+ frame written
    without one says nothing (null: the checker says unknown)."""
    def epoch(f: Event) -> Any:
        return isr_events([f, answer(9, 1.0, f)])[0].value["replica_epoch"]

    assert epoch(fetch(2, 0.5, 1, epoch=None, version=12)) == -1
    assert epoch(fetch(2, 0.5, 1, epoch=None, version=17)) is None
    assert epoch(fetch(2, 0.5, 1, epoch=-1, version=17)) == -1


def test_topic_ids_are_named_from_the_frames_that_carry_both() -> None:
    assert topic_names(story()) == {TID: "t14139"}
    out = isr_events(story()[1:])  # no LeaderAndIsr: the id stays
    assert {e.value["topic"] for e in out} == {TID}


def test_merged_with_the_control_plane_in_time_order_and_the_fetch_ids_follow() -> None:
    frames = story()
    control = wire_events(frames, (), "r")
    assert [e.f for e in control] == ["control_send"]
    out = merged(control, isr_events(frames, "r"))
    assert [(e.seq, e.f) for e in out] == [(1, "control_send"), (2, "fetch"), (3, "fetch"), (4, "alter_partition"),
                                           (5, "alter_partition_handled")]
    assert out[3].value["based_on_fetch"] == {"3": "kafkawire/3"}
    assert merged(control, []) is control  # nothing of the ISR: the control plane's events as they were


def test_map_run_frames_writes_both_accounts(tmp_path: Any) -> None:
    write_events(story(), tmp_path / "kafkaproxy.jsonl")
    path = map_run_frames(tmp_path, "r")
    assert path is not None
    out = list(read_events(path))
    assert [e.f for e in out] == ["control_send", "fetch", "fetch", "alter_partition", "alter_partition_handled"]
    assert out[3].value["based_on_fetch"] == {"3": "kafkawire/3"}


class Emitted:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, f: str, **value: Any) -> None:
        self.events.append((f, value))


def test_the_observer_writes_a_state_znode_as_a_partition_state_with_its_version_and_zxid() -> None:
    obs = BrokerObserver.__new__(BrokerObserver)
    obs.events = Emitted()  # type: ignore[assignment]
    obs._lock = __import__("threading").Lock()
    on_change = obs._state_watcher("t14139", 0)
    on_change(None, None)  # not created yet
    on_change(b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":1,"isr":[1,3]}',
              SimpleNamespace(version=2, mzxid=4294967403))
    on_change(b"not json", SimpleNamespace(version=3, mzxid=1))
    assert obs.events.events == [("partition_state", {  # type: ignore[attr-defined]
        "broker_id": None, "topic": "t14139", "partition": 0, "leader": 1, "leader_epoch": 1, "isr": [1, 3],
        "controller_epoch": 1, "zk_version": 2, "zxid": 4294967403})]


def test_the_timeline_shows_the_held_request_and_the_controllers_answer() -> None:
    from scenarios.timeline import _line

    out = isr_events(story(), "r")
    lines = [_line({"f": e.f, "type": e.type, "value": e.value, "src": e.src, "process": e.process}) for e in out]
    assert lines[:2] == [None, None]  # fetches: too many to show
    assert "b1 AlterPartition 28:0 ISR [1, 3] [bold]held[/], based on fetch {'3': 'kafkawire/2'}" in (lines[2] or "")
    assert "controller b2 answers AlterPartition 28:0: accepted error 0, ISR [1, 3]" in (lines[3] or "")
