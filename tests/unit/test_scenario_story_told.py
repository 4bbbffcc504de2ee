"""What the registration stories read to know whether their race went their way (plain data): the
sessions whose creating reply the wire proxy dropped (KAFKA-14845), and whether a re-registration
met the znode of the revived session (KAFKA-6584)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from history import EventWriter
from scenarios.kafka_6584 import met_revived
from scenarios.kafka_14845 import ORPHAN_RULE, dropped_sessions

S1, S2 = 0x20002B822BA0001, 0x10002B822BA0000


def test_the_dropped_sessions_are_the_orphan_rules_connect_responses(tmp_path: Path) -> None:
    events = tmp_path / "zkproxy.jsonl"
    assert dropped_sessions(events) == []  # the proxy has written nothing yet
    proxy = EventWriter(events, "zkproxy", "r")
    proxy.emit("frame", kind="connect_resp", session_id=S1, action="forward")  # no rule: a session the broker learnt
    proxy.emit("frame", kind="connect_resp", session_id=S2, rule_id=ORPHAN_RULE["id"], action="drop_then_blackhole")
    proxy.emit("frame", kind="reply", session_id=S1, rule_id="another-rule")
    proxy.emit("blackhole", rule_id=ORPHAN_RULE["id"], session_id=S2)
    proxy.close()
    with events.open("a") as fh:
        fh.write('{"src": "zkproxy", "f": "frame", "value": {"kind": "connect_')  # a line still being written
    assert dropped_sessions(events) == [S2]


def test_a_re_registration_met_the_revived_znode_when_refused_or_deleting_for_s1() -> None:
    def ev(seq: int, f: str, type_: str, **value: object) -> SimpleNamespace:
        return SimpleNamespace(seq=seq, f=f, type=type_, value=value)

    first = ev(4, "register", "ok", owner=S1)
    refused = ev(12, "register", "fail", error="NODEEXISTS", owner=S1)
    deleted = ev(12, "register_delete", "event", owner=S1, result="OK")
    fresh = ev(12, "register", "ok", owner=S2, path_existed=False)
    assert met_revived([first, refused], 4, S1)  # before 2.2: NODEEXISTS, owner S1
    assert met_revived([first, deleted, fresh], 4, S1)  # KAFKA-7165: deleted S1's znode first
    assert not met_revived([first, fresh], 4, S1)  # S1 had expired again: a fresh registration
    assert not met_revived([first], 0, S1)  # the first registration is not a re-registration's meeting
    assert not met_revived([first, ev(12, "register", "fail", owner=S2)], 4, S1)  # another owner
