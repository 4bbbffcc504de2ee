"""One row extraction, two drivers: the Spark loader (``checkers.events_df``) and the plain reader
(``checkers.rows``) give identical rows for every field any checker reads, skip the same lines with
wrong-typed values (``history.validate``: damage, never data), and the registration sweeps give
identical verdicts driven by Spark and locally."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import events_df
from checkers.checker import union
from checkers.project import check_histories, make_checkers
from checkers.rows import load_rows
from checkers.testing import EventLog

pytestmark = pytest.mark.integration
S1, S2 = 0x300000043230AC1, 0x300000043230AC2


def registration(log: EventLog, *, reregister: bool) -> None:
    log.emit("agent:1", "agent_start", process=1, broker_id=1, session_timeout_ms=3000, toggles={"x": True})
    log.emit("agent:1", "session", process=1, broker_id=1, state="connected", session_id=S1)
    log.emit("agent:1", "register", "ok", 1, broker_id=1, epoch=4294967302, czxid=4294967302, session_id=S1, owner=S1)
    log.emit("observer", "broker_znode", process=1, broker_id=1, exists=True, czxid=4294967302, owner=S1, final=False)
    log.emit("nemesis", "isolate", "info", "nemesis", phase="start", stage="complete", targets=["b1"])
    log.emit("agent:1", "session", process=1, broker_id=1, state="lost", session_id=S1)
    log.t += 5
    log.emit("nemesis", "heal", "info", "nemesis", phase="stop", stage="complete", reason="final")
    log.emit("agent:1", "session", process=1, broker_id=1, state="connected", session_id=S2)
    if reregister:
        log.emit("agent:1", "register", "ok", 1, broker_id=1, epoch=4294967400, czxid=4294967400, session_id=S2,
                 owner=S2)
    log.t += 10
    log.emit("observer", "broker_znode", process=1, broker_id=1, exists=reregister, czxid=4294967400, owner=S2,
             final=True)
    log.emit("harness", "run_end", live_brokers=[1, 2])
    log.emit("agent:1", "fetch", process=1, broker_id=1)  # a kind the registration checks do not read


def wrong_types(log: EventLog) -> None:
    """Every kind of mismatch the contract's types rule out (PERMISSIVE from_json would have turned each
    into null or JSON text), and what it allows (a null field, any JSON where it says ``json``)."""
    log.emit("agent:2", "register", "ok", 2, broker_id=2, epoch="12", czxid=1.5, session_id=2**63, owner=-(2**63))
    log.emit("observer", "broker_znode", process=2, broker_id=2, exists="true", final=1, owner=None, mzxid=True)
    log.emit("harness", "run_end", live_brokers=[1, "x"])
    log.emit("agent:1", "broker_change", process=1, controller_epoch=3, live={"1": "x", "2": 5}, dead="no",
             bounced=[None, 2], new=[])
    log.emit("agent:1", "control_send", process=1, request_id=7, kind=["LeaderAndIsr"], target=2, full="yes",
             epoch_map={"2": 9}, broker_epoch=4.0)
    log.emit("agent:1", "controlled_shutdown_handled", process=1, broker_id=2, leader_moves=[["t", 0, 3]],
             stop_replicas={"a": [1.25, None, True]}, cached_epoch=None)
    log.emit("agent:2", "alter_partition", process=2, request_id="b2-alter-1", based_on_fetch={"3": 7, "4": "x"},
             partition="0", topic=5)
    log.emit("agent:1", "partition_state", process=1, isr=[1, 2.5], topic="t", partition=0, zxid=-1)
    log.emit("zkproxy", "frame", dir="s2c", session_id=S1, zxid=12)
    log.emit("agent:3", "session", process=3, state=None)


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    d: Path = tmp_path_factory.mktemp("rows")
    out = []
    for name, build in {"good": lambda lg: registration(lg, reregister=True),
                        "bad": lambda lg: registration(lg, reregister=False), "types": wrong_types}.items():
        log = EventLog(run=name)
        build(log)
        out.append(str(log.write(d / f"{name}.jsonl")))
    return out


def test_spark_loader_and_plain_reader_extract_identical_rows(spark, histories: list[str]) -> None:  # noqa: ANN001
    reads = union(c.reads for c in make_checkers())

    def key(r: dict) -> tuple:
        return (r["hist"], r["src"], r["seq"])

    damaged: dict = {}
    plain, counts = load_rows(histories, reads, skip_damaged=True, damaged=damaged)
    loaded = events_df.load(spark, histories, reads, skip_damaged=True)
    try:
        on_spark = [r.asDict() for r in loaded.frame.collect()]
        assert loaded.counts == counts
        assert {p: s.problems() for p, s in loaded.damaged.items()} == {p: s.problems() for p, s in damaged.items()}
        assert list(damaged) == [histories[2]] and damaged[histories[2]].damaged_total == 7
    finally:
        loaded.release()
    plain.sort(key=key)
    on_spark.sort(key=key)
    assert [key(r) for r in on_spark] == [key(r) for r in plain]
    for s, p in zip(on_spark, plain, strict=True):
        assert s == p, {k: (s[k], p.get(k)) for k in s if s[k] != p.get(k)}
    reg = next(r for r in plain if r["f"] == "register" and r["hist"].endswith("good.jsonl"))
    assert reg["v_session_id"] == S1 and reg["v_epoch"] == 4294967302


def test_registration_sweeps_give_the_same_verdicts_on_spark_and_locally(spark, histories: list[str]) -> None:  # noqa: ANN001
    names = ["registration_epochs", "registration_liveness"]
    local = check_histories(histories, names=names, local=True, skip_damaged=True)
    on_spark = check_histories(histories, names=names, spark=spark, skip_damaged=True)
    assert on_spark == local
    assert [local[p]["valid"] for p in histories] == [True, False, "unknown"]
