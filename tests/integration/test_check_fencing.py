"""Every project-history checker (invariants 1-11, the zxid sweep and the queue checkers): for each, a
hand-built history that breaks it and one that does not.

All histories are checked together (one read, one Spark job for the plans) and each test reads its
verdict. Each checker is also run alone, on a frame projected to exactly what it declares it reads
(``Checker.reads``): it must reach the same verdicts, so a kind or field it uses but does not
declare fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from base.errors import UsageError
from checkers.project import CHECKER_NAMES, check_histories
from checkers.testing import EventLog

pytestmark = pytest.mark.integration
S1, S2 = 0x100, 0x101
E1, E2 = 0x200000005, 0x20000000A


def registered(log: EventLog, b: int = 1, epoch: int = E1, sess: int = S1, owner: int | None = None) -> None:
    a = f"agent:{b}"
    log.emit(a, "agent_start", process=b, broker_id=b, pid=10 + b, toggles={}, session_timeout_ms=6000)
    log.emit(a, "session", process=b, state="connected", session_id=sess)
    log.emit(a, "register", "invoke", b, broker_id=b, attempt=1, mode="3x", session_id=sess)
    log.emit(a, "register", "ok", b, broker_id=b, epoch=epoch, czxid=epoch, session_id=sess,
             recorded_session=None, owner=sess if owner is None else owner, path_existed=False)


def observed(log: EventLog, b: int, epoch: int, owner: int, final: bool = False) -> None:
    log.emit("observer", "broker_znode", process=b, broker_id=b, exists=True, czxid=epoch, owner=owner, mzxid=epoch,
             final=final)


def c1(log: EventLog, bad: bool) -> None:
    registered(log)
    observed(log, 1, E1, S1)
    a = "agent:1"
    log.emit(a, "session", process=1, state="expired", session_id=S1)
    log.emit(a, "session", process=1, state="connected", session_id=S2)
    log.emit(a, "register", "invoke", 1, broker_id=1, session_id=S2)
    ep = E1 - 1 if bad else E2
    log.emit(a, "register", "ok", 1, broker_id=1, epoch=ep, czxid=ep, session_id=S2, owner=S2)
    observed(log, 1, ep, S2)


def c2(log: EventLog, bad: bool) -> None:
    registered(log, owner=S2 if bad else S1)


def c2b(log: EventLog, bad: bool) -> None:
    """A second session claims broker 1: with a new epoch (a re-registration) or with the first
    claim's own epoch (two registrants of one znode)."""
    registered(log)
    log.emit("agent:1", "session", process=1, state="expired", session_id=S1)
    log.emit("agent:1", "session", process=1, state="connected", session_id=S2)
    log.emit("agent:1", "register", "invoke", 1, broker_id=1, attempt=2, mode="3x", session_id=S2)
    epoch = E1 if bad else E2
    log.emit("agent:1", "register", "ok", 1, broker_id=1, epoch=epoch, czxid=epoch, session_id=S2,
             recorded_session=None, owner=S2, path_existed=False)


def c3(log: EventLog, bad: bool) -> None:
    registered(log)
    log.t += 10  # past T + margin after the agent started: the timed form decides too
    log.emit("observer", "broker_znode", broker_id=1, exists=not bad, czxid=E1, owner=S1, mzxid=E1, final=True)
    log.emit("harness", "run_end", live_brokers=[1])


def c4(log: EventLog, bad: bool) -> None:
    registered(log)
    recv = dict(kind="LeaderAndIsr", outcome="applied", error_code=0, own_epoch=E2, max_broker_epoch=-1)
    log.emit("agent:1", "control_recv", process=1, request_id="1", controller_epoch=3, broker_epoch=E2,
             max_controller_epoch_seen=0, **recv)
    log.emit("agent:1", "control_recv", process=1, request_id="2", controller_epoch=2 if bad else 3,
             broker_epoch=E2, max_controller_epoch_seen=3, **recv)


def c4b(log: EventLog, bad: bool) -> None:
    """KAFKA-9839: rejecting a request newer than the broker's own epoch (its registration reply not
    read yet) is the bug; rejecting one older than its own is KIP-380 fencing."""
    if not bad:
        registered(log, epoch=E2)
    log.emit("agent:1", "control_recv", process=1, request_id="1", kind="LeaderAndIsr", outcome="rejected",
             controller_epoch=3, max_controller_epoch_seen=3, max_broker_epoch=-1,
             **(dict(error_code=-1, broker_epoch=E2, own_epoch=None) if bad else
                dict(error_code=77, broker_epoch=E1, own_epoch=E2)))
    if bad:  # the registration's reply arrives after the request
        registered(log, epoch=E2)


def c4c(log: EventLog, bad: bool) -> None:
    """A real broker's answers (``base.kafkawire``) come back in any order across connections: an
    older controller's LeaderAndIsr answered after a newer one's UpdateMetadata was handled first
    unless it reached the broker after that answer (``max_controller_epoch_seen``; seen on 3.9.1)."""
    recv = dict(process=3, broker_id=3, outcome="applied", error_code=0, broker_epoch=E1, own_epoch=E1,
                max_broker_epoch=None)
    log.emit("kafkawire", "control_recv", request_id="39:0", kind="UpdateMetadata", controller_epoch=2,
             max_controller_epoch_seen=None, **recv)
    log.emit("kafkawire", "control_recv", request_id="29:15", kind="LeaderAndIsr", controller_epoch=1,
             max_controller_epoch_seen=2 if bad else None, **recv)


def c5(log: EventLog, bad: bool) -> None:
    log.emit("agent:1", "controller_elected", process=1, broker_id=1, controller_epoch=1, epoch_zk_version=0)
    log.emit("agent:2", "controller_elected", process=2, broker_id=2, controller_epoch=2, epoch_zk_version=1)
    log.emit("agent:1", "control_send", process=1, request_id="7", kind="UpdateMetadata", target=2,
             controller_epoch=2 if bad else 1, broker_epoch=E1, epoch_map={}, full=True, partitions=[])


def c6(log: EventLog, bad: bool) -> None:
    log.emit("agent:1", "controller_elected", process=1, broker_id=1, controller_epoch=4, epoch_zk_version=3)
    log.emit("agent:1", "controller_zk_write", "ok", 1, controller_epoch=4, checked_version=2 if bad else 3,
             op="set", path="/x", zxid=0x30000001, error=None)


def c7(log: EventLog, bad: bool) -> None:
    a = "agent:1"
    log.emit(a, "broker_change", process=1, controller_epoch=1, live={"2": E2}, new=[], dead=[], bounced=[2])
    log.emit(a, "control_send", process=1, request_id="1", kind="UpdateMetadata", target=2, controller_epoch=1,
             broker_epoch=E2, epoch_map={"2": E2}, full=True, partitions=[])
    if not bad:
        log.emit(a, "control_send", process=1, request_id="2", kind="LeaderAndIsr", target=2, controller_epoch=1,
                 broker_epoch=E2, epoch_map={"2": E2}, full=False, partitions=[["t", 0]])


def c8(log: EventLog, bad: bool) -> None:
    log.emit("agent:1", "controlled_shutdown_handled", process=1, request_id="5", broker_id=2, broker_epoch=E1,
             cached_epoch=E2, outcome="rejected" if not bad else "handled", error_code=0,
             leader_moves=[["t", 0, 3]] if bad else [], stop_replicas=[])


def c7b(log: EventLog, bad: bool) -> None:
    """A pre-KIP-380 controller never lists the bounce: judged from broker 2's own re-registration."""
    registered(log, b=2, epoch=E1)
    a = "agent:1"
    log.emit(a, "broker_change", process=1, controller_epoch=1, live={"2": E1}, new=[2], dead=[], bounced=[])
    for kind in ("UpdateMetadata", "LeaderAndIsr"):
        log.emit(a, "control_send", process=1, request_id=kind, kind=kind, target=2, controller_epoch=1,
                 broker_epoch=E1, epoch_map={"2": E1}, full=True, partitions=[])
    registered(log, b=2, epoch=E2, sess=S2)
    log.emit(a, "broker_change", process=1, controller_epoch=1, live={"2": E1 if bad else E2}, new=[], dead=[],
             bounced=[] if bad else [2])
    if not bad:
        for kind in ("UpdateMetadata", "LeaderAndIsr"):
            log.emit(a, "control_send", process=1, request_id=kind + "2", kind=kind, target=2, controller_epoch=1,
                     broker_epoch=E2, epoch_map={"2": E2}, full=True, partitions=[])
    log.t += 10
    log.emit("harness", "run_end", live_brokers=[1, 2])


def c9(log: EventLog, bad: bool, fetch_id: str | None = None) -> None:
    """Broker 3 restarted (E1 -> E2) before the commit; the expansion's fetch (an event id) is by E1 or E2."""
    ps = dict(topic="t", partition=0, controller_epoch=1, leader=2, leader_epoch=1)
    log.emit("agent:1", "partition_state", process=1, isr=[2], zk_version=1, zxid=E1 - 1, **ps)
    registered(log, b=3, epoch=E1)
    f = log.emit("agent:2", "fetch", process=2, topic="t", partition=0, replica=3, replica_epoch=E1 if bad else E2,
                 fetch_offset=10, leader=2, leader_epoch=1, request_id="b3-fetch-1")
    registered(log, b=3, epoch=E2, sess=S2)
    log.emit("agent:2", "alter_partition", process=2, request_id="b2-alter-1", topic="t", partition=0, leader=2,
             leader_epoch=1, partition_epoch=1, new_isr_with_epochs=[{"id": 2, "epoch": -1}, {"id": 3, "epoch": -1}],
             based_on_fetch={"3": fetch_id or f}, broker_epoch=E1, broker_id=2)
    log.emit("agent:1", "partition_state", process=1, isr=[2, 3], zk_version=2, zxid=E2 + 1, **ps)
    log.emit("agent:1", "alter_partition_handled", process=1, request_id="b2-alter-1", topic="t", partition=0,
             leader=2, broker_epoch=E1, new_isr_with_epochs=[{"id": 2, "epoch": -1}, {"id": 3, "epoch": -1}],
             outcome="accepted", error_code=0, isr=[2, 3], leader_epoch=1, partition_epoch=2, live={"2": E1, "3": E2})


def c9e(log: EventLog, bad: bool) -> None:
    """A fetch with replica_epoch -1 (sent before the process read its registration reply) is its process's:
    good, broker 3's second process fetches, registers E2, and is expanded in; bad, its first process fetched
    and broker 3 restarted before the commit."""
    ps = dict(topic="t", partition=0, controller_epoch=1, leader=2, leader_epoch=1)
    log.emit("agent:1", "partition_state", process=1, isr=[2], zk_version=1, zxid=E1 - 1, **ps)

    def start(b: int) -> None:
        log.emit(f"agent:{b}", "agent_start", process=b, broker_id=b, pid=20, toggles={}, session_timeout_ms=6000)

    def fetch() -> str:
        return log.emit("agent:2", "fetch", process=2, topic="t", partition=0, replica=3, replica_epoch=-1,
                        fetch_offset=10, leader=2, leader_epoch=1, request_id="b3-fetch-1")

    def reg(epoch: int, sess: int) -> None:
        log.emit("agent:3", "session", process=3, state="connected", session_id=sess)
        log.emit("agent:3", "register", "invoke", 3, broker_id=3, attempt=1, mode="3x", session_id=sess)
        log.emit("agent:3", "register", "ok", 3, broker_id=3, epoch=epoch, czxid=epoch, session_id=sess,
                 recorded_session=None, owner=sess, path_existed=False)

    start(3)
    if bad:
        f = fetch()
    reg(E1, S1)
    start(3)
    if not bad:
        f = fetch()
    reg(E2, S2)
    log.emit("agent:2", "alter_partition", process=2, request_id="b2-alter-1", topic="t", partition=0, leader=2,
             leader_epoch=1, partition_epoch=1, new_isr_with_epochs=[{"id": 2, "epoch": -1}, {"id": 3, "epoch": -1}],
             based_on_fetch={"3": f}, broker_epoch=E1, broker_id=2)
    log.emit("agent:1", "partition_state", process=1, isr=[2, 3], zk_version=2, zxid=E2 + 1, **ps)
    log.emit("agent:1", "alter_partition_handled", process=1, request_id="b2-alter-1", topic="t", partition=0,
             leader=2, broker_epoch=E1, new_isr_with_epochs=[{"id": 2, "epoch": -1}, {"id": 3, "epoch": -1}],
             outcome="accepted", error_code=0, isr=[2, 3], leader_epoch=1, partition_epoch=2, live={"2": E1, "3": E2})


def c9_unresolved(log: EventLog, bad: bool) -> None:
    """based_on_fetch names a fetch request id (not an event id): undecidable, so unknown, never valid."""
    c9(log, False, fetch_id="b3-fetch-1")


def c10(log: EventLog, bad: bool) -> None:
    ps = dict(topic="t", partition=0, controller_epoch=1)
    log.emit("agent:1", "partition_state", process=1, leader=1, leader_epoch=2, isr=[1, 2], zk_version=2, zxid=10, **ps)
    log.emit("agent:1", "partition_state", process=1, leader=3 if bad else 2, leader_epoch=3, isr=[2], zk_version=3,
             zxid=11, **ps)


def c10b(log: EventLog, bad: bool) -> None:
    ps = dict(topic="t", partition=1, controller_epoch=1, leader=1, isr=[1])
    log.emit("agent:1", "partition_state", process=1, leader_epoch=5, zk_version=5, zxid=20, **ps)
    log.emit("agent:1", "partition_state", process=1, leader_epoch=4 if bad else 6, zk_version=6, zxid=21, **ps)


def c11(log: EventLog, bad: bool) -> None:
    log.emit("agent:1", "control_send", process=1, request_id="9", kind="LeaderAndIsr", target=2, controller_epoch=1,
             broker_epoch=-1, max_broker_epoch=E2, epoch_map={"2": E1 if bad else E2}, full=False, partitions=[])
    log.emit("agent:2", "control_recv", process=2, request_id="9", kind="LeaderAndIsr", controller_epoch=1,
             broker_epoch=-1, max_broker_epoch=E2, own_epoch=E2, outcome="applied", error_code=0,
             max_controller_epoch_seen=0)


def c11b(log: EventLog, bad: bool) -> None:
    """Per-broker mode carries MaxBrokerEpoch -1: invariant 11 must not judge it (a real run's shape)."""
    mbe = E1 if bad else -1
    log.emit("agent:1", "control_send", process=1, request_id="10", kind="UpdateMetadata", target=2,
             controller_epoch=1, broker_epoch=E2, max_broker_epoch=mbe, epoch_map={"2": E2}, full=True, partitions=[])
    log.emit("agent:2", "control_recv", process=2, request_id="10", kind="UpdateMetadata", controller_epoch=1,
             broker_epoch=E2, max_broker_epoch=mbe, own_epoch=E2, outcome="applied", error_code=0,
             max_controller_epoch_seen=0)


def zr(log: EventLog, bad: bool) -> None:
    """A registration invoked after a controller write at zxid Z had responded must get a czxid > Z."""
    log.emit("agent:1", "controller_zk_write", "ok", 1, broker_id=1, controller_epoch=1, checked_version=0, op="set",
             path="/p", zxid=E1)
    log.t += 1  # beyond the clock-skew allowance
    log.emit("agent:2", "register", "invoke", 2, broker_id=2, session_id=S1)
    cz = E1 - 3 if bad else E2
    log.emit("agent:2", "register", "ok", 2, broker_id=2, epoch=cz, czxid=cz, session_id=S1, owner=S1)


def zp(log: EventLog, bad: bool) -> None:
    """The observer's read of /brokers/ids/2 returns what the last registration at or below its zxid wrote."""
    log.emit("agent:2", "register", "invoke", 2, broker_id=2, session_id=S1)
    log.emit("agent:2", "register", "ok", 2, broker_id=2, epoch=E1, czxid=E1, session_id=S1, owner=S1)
    observed(log, 2, E1, S2 if bad else S1)


def zs(log: EventLog, bad: bool) -> None:
    for z in (10, 9 if bad else 11):
        log.emit("zkproxy", "frame", conn=1, upstream="zk1", dir="s2c", kind="reply", session_id=S1, zxid=z)


def q_send(log: EventLog, value: str, offset: int, ok: str = "ok") -> None:
    log.emit("client", "send", "invoke", 0, topic="q", partition=0, value=value, acks="all")
    done = {"offset": offset, "leader": 1} if ok == "ok" else {"error_code": 19}
    log.emit("client", "send", ok, 0, topic="q", partition=0, value=value, acks="all", **done)


def q_read(log: EventLog, f: str, recs: list[tuple[int, str]], consumer: int = 1) -> None:
    who = {"consumer": consumer} if f == "poll" else {}
    log.emit("client", f, "invoke", consumer, topic="q", partition=0, **who)
    at = {"offset": recs[0][0] if recs else 0} if f == "poll" else {}  # the position it polled from
    log.emit("client", f, "ok", consumer, topic="q", partition=0, offsets=[o for o, _ in recs],
             values=[v for _, v in recs], hw=len(recs), leader=1, leader_epoch=0, **who, **at)


def qlw(log: EventLog, bad: bool) -> None:
    q_send(log, "v0", 0)
    q_read(log, "final_read", [] if bad else [(0, "v0")])


def qio(log: EventLog, bad: bool) -> None:
    q_send(log, "v0", 0)
    q_read(log, "poll", [(0, "vX" if bad else "v0")])


def qdup(log: EventLog, bad: bool) -> None:
    q_send(log, "v0", 0)
    q_read(log, "poll", [(0, "v0"), (1, "v0")] if bad else [(0, "v0")])


def qab(log: EventLog, bad: bool) -> None:
    q_send(log, "v0", 0, "fail" if bad else "ok")
    q_read(log, "poll", [(0, "v0")])


def qpo(log: EventLog, bad: bool) -> None:
    for offset, value in enumerate("abc"):
        q_send(log, value, offset)
    q_read(log, "poll", [(0, "a"), (1, "b")])
    q_read(log, "poll", [(4 if bad else 2, "c")])


def qlin(log: EventLog, bad: bool) -> None:
    """B is sent after A was acknowledged, yet (bad) gets the lower offset: every offset holds one
    value and the final read agrees, but no order of the operations explains it."""
    q_send(log, "A", 1 if bad else 0)
    q_send(log, "B", 0 if bad else 1)
    q_read(log, "final_read", [(0, "B"), (1, "A")] if bad else [(0, "A"), (1, "B")])


# queue_unseen is informational (never invalid): tests/integration/test_check_queue.py covers it
def reg(log: EventLog, bad: bool) -> None:
    """A write completes through one server; a later read on another returns the old version (stale)."""
    log.emit("client", "reg_write", "invoke", 0, key="k0", value="a")
    log.emit("client", "reg_write", "ok", 0, key="k0", value="a", version=1, server="zk1")
    log.emit("client", "reg_read", "invoke", 1, key="k0", mode="plain")
    log.emit("client", "reg_read", "ok", 1, key="k0", mode="plain", server="zk2",
             **({"value": None, "version": 0} if bad else {"value": "a", "version": 1}))


INFORMATIONAL = {"queue_unseen"}
CASES: dict[str, tuple[str, Callable[[EventLog, bool], None]]] = {
    "1": ("registration_epochs", c1), "2": ("single_registrant", c2), "2b": ("single_registrant", c2b), "3": ("registration_liveness", c3),
    "4": ("control_request_epochs", c4), "4b": ("control_request_epochs", c4b),
    "4c": ("control_request_epochs", c4c), "5": ("controller_epochs", c5), "6": ("controller_write_fencing", c6),
    "7": ("bounce_handling", c7), "7b": ("bounce_handling", c7b), "8": ("controlled_shutdown_epochs", c8), "9": ("isr_expansion", c9), "9e": ("isr_expansion", c9e),
    "10": ("partition_states", c10), "10b": ("partition_states", c10b), "11": ("max_broker_epoch", c11),
    "11b": ("max_broker_epoch", c11b), "zr": ("zxid_realtime", zr), "zp": ("zxid_replay", zp),
    "zs": ("zxid_session", zs), "qlw": ("queue_lost_write", qlw), "qio": ("queue_inconsistent_offsets", qio),
    "qdup": ("queue_duplicate", qdup), "qab": ("queue_aborted_read", qab), "qpo": ("queue_poll_order", qpo),
    "qlin": ("queue_linearizable", qlin),
    "reg": ("register_linearizable", reg),
}


def build(d: Path, cases: list[str]) -> dict[tuple[str, bool], str]:
    paths = {}
    for case in cases:
        for bad in (False, True):
            log = EventLog(run=f"{case}-{bad}")
            CASES[case][1](log, bad)
            paths[(case, bad)] = str(log.write(d / f"{case}-{'bad' if bad else 'good'}.jsonl"))
    return paths


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], str]:
    return build(tmp_path_factory.mktemp("fencing"), list(CASES))


@pytest.fixture(scope="module")
def verdicts(spark, paths: dict[tuple[str, bool], str]) -> dict[tuple[str, bool], dict]:  # noqa: ANN001
    res = check_histories(list(paths.values()), spark=spark)
    return {k: res[p] for k, p in paths.items()}


@pytest.fixture(scope="module")
def alone(spark, paths: dict[tuple[str, bool], str]) -> dict[tuple[str, bool], dict]:  # noqa: ANN001
    """Each checker run by itself on its own cases: the loader projects only what it declares."""
    out = {}
    for name in {n for n, _ in CASES.values()}:
        mine = {k: p for k, p in paths.items() if CASES[k[0]][0] == name}
        res = check_histories(list(mine.values()), spark=spark, names=[name])
        out.update({k: res[p] for k, p in mine.items()})
    return out


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("bad", [False, True], ids=["holds", "broken"])
def test_invariant(verdicts, alone, case: str, bad: bool) -> None:  # noqa: ANN001
    name = CASES[case][0]
    res = verdicts[(case, bad)]
    mine = [a for a in res["anomalies"] if a["checker"] == name]
    if bad:
        assert res["checkers"][name]["valid"] is False, res
        assert mine and mine[0]["event_ids"], res
        assert all(i.count("/") == 1 for a in mine for i in a["event_ids"])
    else:
        assert res["checkers"][name]["valid"] is True, res
        broken = {k: [a for a in res["anomalies"] if a["checker"] == k] for k, v in res["checkers"].items()
                  if v["valid"] is False}
        assert not broken
    projected = alone[(case, bad)]
    assert list(projected["checkers"]) == [name]
    assert projected["checkers"][name] == res["checkers"][name]
    assert projected["anomalies"] == mine


def test_two_registrants_of_one_epoch_are_named(verdicts) -> None:  # noqa: ANN001
    """Both claims are cited: the plan finds the epoch by its smallest and largest session, then
    collects that epoch's claims."""
    mine = [a for a in verdicts[("2b", True)]["anomalies"] if a["checker"] == "single_registrant"]
    assert len(mine) == 1 and "2 sessions claim the same epoch" in mine[0]["message"], mine
    assert len(mine[0]["event_ids"]) == 2, mine


def test_every_checker_is_covered() -> None:
    covered = {name for name, _ in CASES.values()} | INFORMATIONAL
    missing = [n for n in CHECKER_NAMES if n not in covered]
    assert not missing, (f"checkers.project.make_checkers registers {', '.join(missing)} with no entry in CASES: "
                         "add a history that breaks it and one that holds")
    unknown = sorted(covered - set(CHECKER_NAMES))
    assert not unknown, f"CASES names {', '.join(unknown)}, not a checker of checkers.project.make_checkers"


def test_unresolvable_basis_is_unknown(spark, tmp_path) -> None:  # noqa: ANN001
    log = EventLog(run="9u")
    c9_unresolved(log, False)
    p = str(log.write(tmp_path / "9u.jsonl"))
    r = check_histories([p], spark=spark, names=["isr_expansion"])[p]["checkers"]["isr_expansion"]
    assert r["valid"] == "unknown", r
    assert "no fetch event" in r["stats"]["unknown_reasons"][0]["message"], r


def test_a_fetch_without_replica_epoch_and_no_start_before_it_is_unknown(spark, tmp_path) -> None:  # noqa: ANN001
    """replica_epoch -1 names no incarnation; without the replica's start before the fetch, its process is
    unknown too: the expansion cannot be judged (never valid)."""
    log = EventLog(run="9e-nostart")
    c9e(log, False)
    log.events = [e for e in log.events if e["f"] != "agent_start"]
    p = str(log.write(tmp_path / "9e-nostart.jsonl"))
    r = check_histories([p], spark=spark, names=["isr_expansion"])[p]["checkers"]["isr_expansion"]
    assert r["valid"] == "unknown", r
    assert "no start of the replica precedes it" in r["stats"]["unknown_reasons"][0]["message"], r


def test_a_fetch_id_naming_two_events_is_unknown(spark, tmp_path) -> None:  # noqa: ANN001
    """A malformed history where two fetch lines share the id based_on_fetch names: the loader refuses
    the second as a duplicate; skipped, the check cannot be valid. (The plan itself would say unknown
    and why, never pick one: a second line of one id never reaches it now.)"""
    log = EventLog(run="9d")
    c9(log, False)
    p = log.write(tmp_path / "9d.jsonl")
    lines = p.read_text().splitlines()
    fetch = next(ln for ln in lines if '"f":"fetch"' in ln.replace(" ", ""))
    p.write_text("\n".join([*lines, fetch.replace(str(E2), str(E1))]) + "\n")
    with pytest.raises(UsageError, match=f"{p}:{len(lines) + 1}: not a valid event: duplicate event id agent:"):
        check_histories([str(p)], spark=spark, names=["isr_expansion"])
    r = check_histories([str(p)], spark=spark, names=["isr_expansion"], skip_damaged=True)[str(p)]
    assert r["valid"] == "unknown" and r["stats"]["damaged_lines"] == 1, r


def test_expansion_without_its_request_is_unknown(spark, tmp_path) -> None:  # noqa: ANN001
    """A committed expansion whose alter_partition is missing stays unknown. The left join once dropped
    the handled event's own ``hist`` (one attribute on both sides), so its row matched no history and
    the checker said valid."""
    log = EventLog(run="9m")
    c9(log, False)
    log.emit("agent:1", "alter_partition_handled", process=1, request_id="b2-alter-9", topic="t", partition=0,
             leader=2, broker_epoch=E1, outcome="accepted", error_code=0, isr=[2, 3], leader_epoch=1,
             partition_epoch=2, live={"2": E1, "3": E2})
    p = str(log.write(tmp_path / "9m.jsonl"))
    r = check_histories([p], spark=spark, names=["isr_expansion"])[p]["checkers"]["isr_expansion"]
    assert r["valid"] == "unknown", r
    assert r["stats"]["unknown_reasons"][0]["message"].endswith("no alter_partition event for the request"), r


def test_malformed_fields_never_crash(spark, tmp_path) -> None:  # noqa: ANN001
    """Wrong-typed values are damage (refused, or skipped and counted), null ones are read as null
    (the 'null' -> BIGINT ANSI crash): never an exception, and an anomaly of intact events stands."""
    log = EventLog(run="junk")
    c9(log, True)
    log.emit("agent:1", "alter_partition_handled", process=1, request_id=None, topic="t", partition="zero",
             outcome="accepted", error_code=0, isr=None, partition_epoch="x", live={"3": "nope"})
    log.emit("agent:1", "broker_change", process=1, controller_epoch="1", live=None, bounced=["x"], dead=None)
    log.emit("agent:1", "control_send", process=1, kind="LeaderAndIsr", target="two", broker_epoch=None)
    log.emit("agent:1", "control_send", process=1, kind="LeaderAndIsr", target=None, broker_epoch=None)
    p = str(log.write(tmp_path / "junk.jsonl"))
    with pytest.raises(UsageError, match=f"{p}:"):
        check_histories([p], spark=spark)
    res = check_histories([p], spark=spark, skip_damaged=True)[p]
    assert res["checkers"]["isr_expansion"]["valid"] is False and res["stats"]["damaged_lines"] == 3, res
    assert res["valid"] == "unknown" and res["anomalies"], res


def test_each_plan_is_one_stage_on_run_sized_input(spark, paths) -> None:  # noqa: ANN001
    """On one partition no plan shuffles: every exchange is a stage of its own, and on a run's history
    those stages were most of the plans' run time (bounce_handling had 12, isr_expansion 24)."""
    from checkers import events_df, plans
    from checkers.checker import union
    from checkers.fencing import PLANS
    from checkers.queue import QUEUE_PLANS

    every = PLANS + QUEUE_PLANS
    loaded = events_df.load(spark, list(paths.values()), union(c.reads for c in every))
    try:
        assert loaded.small
        with plans.single_partition_conf(spark):
            shuffles = {c.name: plans.one_partition_job(plans.own_rows(loaded.frame, c), c)._jdf.queryExecution()
                        .executedPlan().toString().count("Exchange") for c in every}
    finally:
        loaded.release()
    assert shuffles == dict.fromkeys(shuffles, 0)


def test_one_job_on_large_input_agrees_with_per_plan_jobs(spark, paths, verdicts, monkeypatch) -> None:  # noqa: ANN001
    """The same histories read as large input (one union job over every plan, no ``one``) get the same
    verdicts and anomalies as the per-plan jobs on one partition. Compared as sets: on one partition
    a checker's first anomalies come in row order, on several they are sorted (plans._summary)."""
    import json

    from checkers import events_df

    def unordered(x: object) -> object:
        if isinstance(x, dict):
            return {k: unordered(v) for k, v in x.items()}
        if isinstance(x, list):
            return sorted((unordered(v) for v in x), key=lambda v: json.dumps(v, sort_keys=True))
        return x

    monkeypatch.setattr(events_df, "SMALL_BYTES", 0)
    res = check_histories(list(paths.values()), spark=spark)
    assert unordered({k: res[p] for k, p in paths.items()}) == unordered(verdicts)


@pytest.mark.parametrize("large", [True, False])
def test_a_quick_session_generates_code_for_large_input_only(spark, paths, verdicts, monkeypatch,  # noqa: ANN001
                                                             large: bool) -> None:
    """A check server's session is quick (``QUICK_CONF``: expressions interpreted) and takes every check:
    on large input the load and the plans run with Spark's code generation, and the quick settings
    are back afterwards; run-sized input keeps them throughout. The verdicts are the same either way."""
    from checkers import events_df
    from checkers.spark import QUICK_CONF, session_conf

    seen = []
    load = events_df.load

    def spying_load(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.append({k: spark.conf.get(k, None) for k in QUICK_CONF})
        return load(*args, **kwargs)

    monkeypatch.setattr(events_df, "load", spying_load)
    if large:
        monkeypatch.setattr(events_df, "SMALL_BYTES", 0)
    with session_conf(spark, QUICK_CONF):
        res = check_histories(list(paths.values()), spark=spark)
        after = {k: spark.conf.get(k, None) for k in QUICK_CONF}
    assert seen == [dict.fromkeys(QUICK_CONF) if large else QUICK_CONF]
    assert after == QUICK_CONF
    assert {k: res[p]["valid"] for k, p in paths.items()} == {k: v["valid"] for k, v in verdicts.items()}


def test_anoms_is_the_union_of_its_cases_in_one_pass(spark) -> None:  # noqa: ANN001
    """``plans.anoms`` gives a row for every case that holds (two for a row where two hold, none where
    a condition is null), like a union of ``anom`` over each case's filter."""
    from pyspark.sql import functions as F

    from checkers.plans import Case, anom, anoms, fmt

    df = spark.createDataFrame([("h", 1, 5), ("h", 2, None), ("h", 3, -1), ("g", 4, 7)], "hist string, i int, v int")
    cases = [
        Case(F.col("v") > 4, fmt("%s is big", "v"), F.array(F.col("i").cast("string")), keys={"i": F.col("i")}),
        Case(F.col("i") % 2 == 0, fmt("%s is even", "i"), F.array(F.lit("x")), verdict="unknown"),
        Case(F.col("v") < 0, fmt("%s is negative", "v"), F.array(F.col("i").cast("string")), keys={"i": F.col("i")}),
    ]
    one_pass = anoms(df, *cases)
    union = [anom(df.filter(c.where), c.message, c.ids, verdict=c.verdict, **(c.keys or {})) for c in cases]
    expected = union[0].unionByName(union[1]).unionByName(union[2])
    rows = sorted(tuple(r) for r in one_pass.collect())
    assert rows == sorted(tuple(r) for r in expected.collect())
    assert sorted(m for _, m, *_ in rows) == ["-1 is negative", "2 is even", "4 is even", "5 is big", "7 is big"]
    assert one_pass._jdf.queryExecution().optimizedPlan().toString().count("LogicalRDD") == 1  # one read of df


def test_plans_on_large_input_read_and_sort_each_frame_once(spark, paths, monkeypatch) -> None:  # noqa: ANN001
    """On large input a plan whose anomalies come from one frame reads it once and sorts it once: a
    union of per-anomaly branches read, shuffled and sorted it once per branch, and an expression in
    a window's order (not a column) made each window function a sort of its own."""
    from checkers import events_df
    from checkers.checker import union
    from checkers.fencing import CONTROL_REQUEST_EPOCHS, PARTITION_STATES

    monkeypatch.setattr(events_df, "SMALL_BYTES", 0)
    loaded = events_df.load(spark, list(paths.values()), union([CONTROL_REQUEST_EPOCHS.reads, PARTITION_STATES.reads]))
    try:
        assert not loaded.small
        for c in (CONTROL_REQUEST_EPOCHS, PARTITION_STATES):
            plan = c.plan(loaded.frame)._jdf.queryExecution().executedPlan().toString()
            assert plan.count("InMemoryTableScan") == 1 and plan.count("Sort [") == 1, (c.name, plan)
    finally:
        loaded.release()


def test_max_broker_epoch_reads_no_request_it_cannot_pair_on_large_input(spark) -> None:  # noqa: ANN001
    """Outside max-broker-epoch mode no applied request carries a MaxBrokerEpoch: on large input the
    plan finds that first (``plans.settle``) and never reads the controller's sends, whose stage Spark
    would otherwise run beside the query and after its answer."""
    from checkers.fencing import MAX_BROKER_EPOCH

    # an agent's receive: the receiving broker is its node (a real broker's names it in broker_id)
    rows = [("h", "agent:2/1", "control_recv", 2, "r1", "applied", "LeaderAndIsr", None, 5, None, None, None),
            ("h", "agent:1/1", "control_send", 1, "r1", None, "LeaderAndIsr", None, None, 2, {"2": 5}, None)]
    schema = ("hist string, id string, f string, node long, v_request_id string, v_outcome string, v_kind string, "
              "v_max_broker_epoch long, v_own_epoch long, v_target long, v_epoch_map map<string,long>, "
              "v_broker_id long")
    frame = spark.createDataFrame(rows, schema)
    plan = MAX_BROKER_EPOCH.plan(frame)
    assert plan.count() == 0 and "control_send" not in plan._jdf.queryExecution().optimizedPlan().toString()
    stale = spark.createDataFrame([(*rows[0][:7], 4, *rows[0][8:]), rows[1]], schema)  # MaxBrokerEpoch 4 < own 5
    assert [r["message"] for r in MAX_BROKER_EPOCH.plan(stale).collect()] == [
        "broker 2 applied LeaderAndIsr with MaxBrokerEpoch 4 built from map epoch 5; its own epoch is 5"]


def test_plans_built_once_give_every_history_its_own_verdicts(spark, paths, monkeypatch) -> None:  # noqa: ANN001
    """A small check runs plans built once per process over a slot (``plans._run_on_slot``): each
    history, checked alone on plans that last ran on another (a breaking one after a holding one and
    back), gets what plans built for it give. A plan that kept the last history's rows (a shuffle's
    output, an intermediate result) would give the next history its verdict."""
    from checkers import plans
    from checkers.fencing import PLANS
    from checkers.queue import QUEUE_PLANS

    assert plans.slots_usable(spark)
    names = [c.name for c in PLANS + QUEUE_PLANS]
    order = [paths[(case, bad)] for case in ("2", "4", "5", "7", "9", "10", "11", "qlw", "qdup", "qpo")
             for bad in (True, False)]
    monkeypatch.setenv(plans.SLOTS_ENV, "off")
    built_for_each = check_histories(order, spark=spark, names=names)
    monkeypatch.delenv(plans.SLOTS_ENV)
    for p in order:
        assert check_histories([p], spark=spark, names=names)[p] == built_for_each[p], p
