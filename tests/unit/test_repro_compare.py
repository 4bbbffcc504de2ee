"""The side-by-side of `harness repro ID --compare kafka:VERSION` (``scenarios.compare``), on plain
events shaped like the two variants' histories of KAFKA-14845."""

from __future__ import annotations

import pytest

from scenarios.compare import Side, compare_rows, judged_by_one, same_verdict, story_facts

ORPHAN, S1, S3 = 0x1000, 0x2000, 0x3000


def ev(src: str, f: str, type_: str = "event", **value) -> dict:
    return {"src": src, "f": f, "type": type_, "value": value}


def history(refused_owner: int | None) -> list[dict]:
    """Broker 2 registered under S1; a session whose reply the proxy dropped; then broker 2 either
    refused (owner ``refused_owner``) or registered again; the final snapshot; run_end."""
    out = [ev("agent:1", "register", "ok", epoch=10, session_id=0x10),
           ev("agent:2", "register", "ok", epoch=11, session_id=S1),
           ev("zkproxy", "session_established", session_id=ORPHAN, forwarded_to_client=False),
           ev("zkproxy", "session_established", session_id=S3, forwarded_to_client=True)]
    if refused_owner is not None:
        out.append(ev("agent:2", "register", "fail", error="NODEEXISTS", owner=refused_owner, session_id=S3))
    else:
        out.append(ev("agent:2", "register", "ok", epoch=20, session_id=S3))
    out += [ev("observer", "broker_znode", broker_id=1, exists=True, owner=0x10, final=True),
            ev("observer", "broker_znode", broker_id=2, exists=refused_owner is None,
               owner=S3 if refused_owner is None else None, final=True),
            ev("harness", "run_end", live_brokers=[1, 2])]
    return out


def test_story_facts_name_the_refusal_by_a_dropped_reply_session():
    facts = story_facts(history(ORPHAN))
    assert facts == {
        "sessions whose reply was dropped": "0x1000",
        "broker 1 registrations": "ok epoch 10",
        "broker 2 registrations": "ok epoch 11; NODEEXISTS owner 0x1000 (a dropped-reply session)",
        "final /brokers/ids/1": "owner 0x10",
        "final /brokers/ids/2": "absent",
        "live brokers at the end": "[1, 2]",
    }


def test_rows_put_both_variants_side_by_side():
    agents = Side("agents", {"registration_liveness": False}, True, True, events=history(ORPHAN))
    kafka = Side("kafka 3.9.1 (netty)", {"registration_liveness": False}, True, True, events=history(ORPHAN))
    rows = compare_rows(agents, kafka)
    assert rows[:3] == [("checker registration_liveness", "INVALID", "INVALID"), ("reproduced", "yes", "yes"),
                        ("as expected", "yes", "yes")]
    assert ("final /brokers/ids/2", "absent", "absent") in rows
    assert same_verdict(agents, kafka)


def test_a_disagreement_shows_in_the_verdict_the_facts_and_the_error_row():
    agents = Side("agents", {"registration_liveness": False}, True, True, events=history(ORPHAN))
    kafka = Side("kafka 3.9.1 (nio)", {"registration_liveness": True}, False, False, error=None,
                 events=history(None))
    rows = dict((r[0], r[1:]) for r in compare_rows(agents, kafka))
    assert rows["checker registration_liveness"] == ("INVALID", "valid")
    assert rows["as expected"] == ("yes", "NO")
    assert rows["broker 2 registrations"] == ("ok epoch 11; NODEEXISTS owner 0x1000 (a dropped-reply session)",
                                              "ok epoch 11; ok epoch 20")
    assert rows["final /brokers/ids/2"] == ("absent", "owner 0x3000")
    assert "run error" not in rows
    assert not same_verdict(agents, kafka)
    crashed = Side("kafka 3.9.1", {}, False, False, error="TimeoutError: brokers [2] not registered", events=[])
    rows = dict((r[0], r[1:]) for r in compare_rows(agents, crashed))
    assert rows["checker registration_liveness"] == ("INVALID", "unknown")
    assert rows["run error"] == ("-", "TimeoutError: brokers [2] not registered")
    assert rows["broker 2 registrations"][1] == "-" and rows["live brokers at the end"][1] == "-"


@pytest.mark.parametrize(("given", "used"), [
    ({}, ("netty", 3)),
    ({"zk_socket": "nio"}, ("nio", None)),
    ({"zk_hosts": 1}, (None, 1)),
])
def test_kafka_runs_the_client_the_jira_reported_unless_a_flag_says_otherwise(given, used) -> None:  # noqa: ANN001
    import argparse

    from harness.commands.repro import as_reported
    from scenarios import scenarios

    args = argparse.Namespace(kafka="3.9.1", zk_socket=None, zk_hosts=None)
    for k, v in given.items():
        setattr(args, k, v)
    assert as_reported(args, scenarios()["KAFKA-14845"]) is (not given)
    assert (args.zk_socket, args.zk_hosts) == used


def test_a_checker_one_side_never_ran_is_said_apart_not_counted_as_a_disagreement():
    # KAFKA-7235-lost-write judges its real-broker run by queue_lost_write alone (kafka_checkers)
    agents = Side("agents", {"control_request_epochs": False, "queue_lost_write": False}, True, True, events=[])
    kafka = Side("kafka 2.1.1 (nio)", {"queue_lost_write": False}, True, True, events=[])
    assert same_verdict(agents, kafka)
    assert judged_by_one(agents, kafka) == {"agents": ["control_request_epochs"]}
    assert dict((r[0], r[1:]) for r in compare_rows(agents, kafka))["checker control_request_epochs"] == (
        "INVALID", "unknown")
    assert not same_verdict(agents, Side("kafka 2.1.1 (nio)", {"queue_lost_write": True}, False, False, events=[]))
    crashed = Side("kafka 2.1.1", {}, False, False, error="TimeoutError", events=[])
    assert not same_verdict(agents, crashed) and judged_by_one(agents, crashed) == {}
