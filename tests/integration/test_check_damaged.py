"""Damaged histories never become verdicts (issue 46): on a real SparkSession, each class of damage
the issue named is refused by ``harness check`` with one ``FILE:LINE`` line (exit 254), or with
``--skip-damaged`` left out and counted, and the verdict unknown. A field that is missing where a
checker needs it is ``unknown`` citing the event, never an anomaly, and never hides one: a sample of
bench/fuzz_fields.py's deletions from every checker's holding and breaking history (the bench runs
all of them). A property test
damages lines of intact histories: the outcome is the refusal, or (skipped) an unknown verdict
whose checkers each say what they say of the history without that line: never a flip."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from base.errors import UsageError
from checkers.project import check_histories
from checkers.testing import EventLog
from harness.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import fuzz_fields  # noqa: E402

pytestmark = pytest.mark.integration
S1, E1 = 0x100, 0x200000005


def registered(log: EventLog, **drop: bool) -> None:
    """Broker 1 starts, registers and is still registered at the end (valid for every checker)."""
    log.emit("agent:1", "agent_start", process=1, broker_id=1, pid=11, toggles={}, session_timeout_ms=6000)
    log.emit("agent:1", "session", process=1, broker_id=1, state="connected", session_id=S1)
    log.emit("agent:1", "register", "invoke", 1, broker_id=1, attempt=1, mode="3x", session_id=S1)
    ok = dict(broker_id=1, epoch=E1, czxid=E1, session_id=S1, owner=S1, path_existed=False)
    log.emit("agent:1", "register", "ok", 1, **{k: v for k, v in ok.items() if not drop.get(k)})
    log.t += 10  # past T + margin: the timed liveness form decides
    log.emit("observer", "broker_znode", broker_id=1, exists=True, czxid=E1, owner=S1, mzxid=E1, final=True)
    log.emit("harness", "run_end", live_brokers=[1])


def queue(log: EventLog, bad: bool = False) -> None:
    """Three sends and two polls of one consumer (bad: the second poll skips offset 2)."""
    for offset, v in enumerate("abc"):
        log.emit("client", "send", "invoke", 0, topic="q", partition=0, value=v, acks="all")
        log.emit("client", "send", "ok", 0, topic="q", partition=0, value=v, acks="all", offset=offset, leader=1)
    for recs in ([(0, "a"), (1, "b")], [(4 if bad else 2, "c")]):
        log.emit("client", "poll", "invoke", 1, topic="q", partition=0, consumer=1, offset=recs[0][0])
        log.emit("client", "poll", "ok", 1, topic="q", partition=0, consumer=1, offset=recs[0][0],
                 offsets=[o for o, _ in recs], values=[v for _, v in recs], hw=3, leader=1, leader_epoch=0)


def lines_of(build: Callable[[EventLog], None]) -> list[str]:
    log = EventLog()
    build(log)
    return [json.dumps(e) for e in log.events]


def write(path: Path, lines: list[str]) -> str:
    path.write_bytes("".join(x + "\n" for x in lines).encode("utf-8", "surrogatepass"))
    return str(path)


def edit(line: str, change: Callable[[dict[str, Any]], None]) -> str:
    d = json.loads(line)
    change(d)
    return json.dumps(d)


DAMAGE: dict[str, Callable[[list[str]], list[str]]] = {
    "numeric src": lambda ls: [*ls[:2], edit(ls[2], lambda d: d.update(src=1)), *ls[3:]],
    "string t_mono": lambda ls: [*ls[:2], edit(ls[2], lambda d: d.update(t_mono="1")), *ls[3:]],
    "string value": lambda ls: [*ls[:2], edit(ls[2], lambda d: d.update(value="x")), *ls[3:]],
    "byte-order mark": lambda ls: ["\ufeff" + ls[0], *ls[1:]],
    "epoch a string": lambda ls: [*ls[:3], edit(ls[3], lambda d: d["value"].update(epoch="8589934597")), *ls[4:]],
    "epoch NaN": lambda ls: [*ls[:3], ls[3].replace(f'"epoch": {E1}', '"epoch": NaN'), *ls[4:]],
    "czxid beyond int64": lambda ls: [*ls[:4], edit(ls[4], lambda d: d["value"].update(czxid=2**64 + E1)), *ls[5:]],
    "a duplicated line": lambda ls: [*ls[:4], ls[3], *ls[4:]],
}
DAMAGED_LINE = {"byte-order mark": 1, "numeric src": 3, "string t_mono": 3, "string value": 3,
                "epoch a string": 4, "epoch NaN": 4, "czxid beyond int64": 5, "a duplicated line": 5}


def test_the_intact_history_is_valid(spark, tmp_path: Path) -> None:  # noqa: ANN001
    p = write(tmp_path / "h.jsonl", lines_of(registered))
    assert check_histories([p], spark=spark)[p]["valid"] is True


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_harness_check_refuses_the_damaged_line(tmp_path: Path, capsys, damage: str) -> None:  # noqa: ANN001
    p = write(tmp_path / "history.jsonl", DAMAGE[damage](lines_of(registered)))
    assert main(["check", "--no-server", p]) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"harness: {p}:{DAMAGED_LINE[damage]}: not a valid event: "), err


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_skipping_damage_is_unknown(tmp_path: Path, capsys, damage: str) -> None:  # noqa: ANN001
    p = write(tmp_path / "history.jsonl", DAMAGE[damage](lines_of(registered)))
    assert main(["check", "--no-server", "--skip-damaged", "--json", p]) == 2
    row = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert row["valid"] == "unknown" and row["stats"]["damaged_lines"] == 1
    assert row["stats"]["damaged"][0].startswith(f"{p}:{DAMAGED_LINE[damage]}: not a valid event: ")


def test_the_plain_reader_refuses_what_spark_refuses(tmp_path: Path) -> None:
    for damage in DAMAGE:
        p = write(tmp_path / f"{damage}.jsonl", DAMAGE[damage](lines_of(registered)))
        with pytest.raises(UsageError, match=f"^{p}:{DAMAGED_LINE[damage]}: "):
            check_histories([p], local=True, names=["registration_liveness", "registration_epochs"])


def test_a_duplicate_is_refused_as_one_and_skipped_is_unknown_with_its_anomalies(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """One duplicated line made queue_poll_order invalid: now it is a duplicate. Skipped, the verdict
    is unknown, and what the checkers found among the events read is still said."""
    ls = lines_of(lambda log: queue(log, bad=True))
    p = write(tmp_path / "h.jsonl", [*ls, ls[0]])  # the first send twice
    r = check_histories([p], spark=spark, skip_damaged=True)[p]
    assert r["valid"] == "unknown" and r["checkers"]["queue_poll_order"]["valid"] is False and r["anomalies"]
    assert r["stats"]["damaged"] == [f"{p}:{len(ls) + 1}: not a valid event: duplicate event id client/1, first at line 1"]
    ok = write(tmp_path / "ok.jsonl", [*(ls := lines_of(queue)), ls[-1]])  # a duplicated poll is no reordering
    with pytest.raises(UsageError, match="duplicate event id client/10"):
        check_histories([ok], spark=spark)
    r = check_histories([ok], spark=spark, skip_damaged=True)[ok]
    assert r["valid"] == "unknown" and r["checkers"]["queue_poll_order"]["valid"] is True  # never an anomaly


@pytest.mark.parametrize("field", ["epoch", "session_id"])
def test_a_registration_missing_its_epoch_is_unknown_citing_it(spark, tmp_path: Path, field: str) -> None:  # noqa: ANN001
    """Missing is allowed by the contract (every value field is optional): never "registered with epoch None"."""
    p = write(tmp_path / "h.jsonl", lines_of(lambda log: registered(log, **{field: True})))
    for r in (check_histories([p], spark=spark)[p], check_histories([p], local=True, names=[
            "registration_liveness", "registration_epochs"])[p]):
        for name in ("registration_liveness", "registration_epochs"):
            c = r["checkers"][name]
            assert c["valid"] == "unknown" and any("agent:1/4" in u for u in c["stats"]["undecided"]), (name, c)
    assert check_histories([p], spark=spark)[p]["checkers"]["single_registrant"]["valid"] == "unknown"


def test_an_observation_missing_its_czxid_is_unknown_not_an_unclaimed_znode(spark, tmp_path: Path) -> None:  # noqa: ANN001
    ls = lines_of(registered)
    p = write(tmp_path / "h.jsonl", [*ls[:4], edit(ls[4], lambda d: d["value"].pop("czxid")), *ls[5:]])
    r = check_histories([p], spark=spark)[p]
    sr = r["checkers"]["single_registrant"]
    assert sr["valid"] == "unknown" and sr["stats"]["unknown_reasons"][0]["event_ids"] == ["observer/1"]
    assert r["checkers"]["registration_liveness"]["valid"] == "unknown" and r["valid"] == "unknown"


def test_a_missing_field_never_flips_a_verdict(spark, tmp_path: Path) -> None:  # noqa: ANN001
    cuts = fuzz_fields.inputs(random.Random(46), 240, fuzz_fields.intact())
    changes = fuzz_fields.sweep(tmp_path, cuts, spark=spark)
    flips = [c for c in changes if c[2] == "flip"]
    assert not flips, flips[:5]
    assert any(c[2] == "unknown" for c in changes)  # the deletions were read: some checker could not decide


def test_an_event_lacking_a_needed_field_is_cited() -> None:
    """The local reader (no Spark) says the same: the registration checkers cite the event and its field."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        ls = lines_of(registered)
        p = write(Path(d) / "h.jsonl", [*ls[:3], edit(ls[3], lambda x: x["value"].pop("czxid")), *ls[4:]])
        r = check_histories([p], local=True, names=["registration_epochs"])[p]["checkers"]["registration_epochs"]
    assert r["valid"] == "unknown", r
    assert r["stats"]["lacking"] == ["agent:1/4 (register ok, line 4) lacks czxid"], r


# --- property: damage a line of an intact history ----------------------------------------------------
def _damage(kind: str, line: str) -> list[str]:
    d = json.loads(line)
    fields = [k for k, v in d["value"].items() if isinstance(v, int) and not isinstance(v, bool)]
    if kind == "duplicate":
        return [line, line]
    if kind == "bom":
        return ["\ufeff" + line]
    if kind == "truncate":
        return [line[: len(line) // 2]]
    if kind == "bad utf-8":
        return [line[:5] + "\udcff" + line[5:]]  # written with surrogatepass: not UTF-8
    if kind == "envelope type":
        d["t_wall"] = str(d["t_wall"])
    elif kind == "int as string" and fields:
        d["value"][fields[0]] = str(d["value"][fields[0]])
    elif kind == "int beyond int64" and fields:
        d["value"][fields[0]] = d["value"][fields[0]] + 2**64
    else:
        d["value"] = [d["value"]]
    return [json.dumps(d)]


HISTORIES = {"registered": registered, "queue": queue, "queue bad": lambda log: queue(log, bad=True)}
KINDS = ["duplicate", "bom", "truncate", "bad utf-8", "envelope type", "int as string", "int beyond int64", "value"]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(HISTORIES)), kind=st.sampled_from(KINDS), at=st.integers(0, 10**6))
def test_damage_is_refused_or_never_flips_the_verdict(spark, tmp_path: Path, name: str, kind: str,  # noqa: ANN001
                                                      at: int) -> None:
    ls = lines_of(HISTORIES[name])
    i = at % len(ls)
    damaged = [*ls[:i], *_damage(kind, ls[i]), *ls[i + 1:]]
    bad_line = i + (2 if kind == "duplicate" else 1)
    p = write(tmp_path / f"{name}-{kind}-{i}.jsonl", damaged)
    with pytest.raises(UsageError, match=f"^{p}:{bad_line}: not a valid event: "):
        check_histories([p], spark=spark)
    rest = write(tmp_path / f"{name}-{kind}-{i}-rest.jsonl", ls if kind == "duplicate" else [*ls[:i], *ls[i + 1:]])
    got = check_histories([p, rest], spark=spark, skip_damaged=True)
    for checker, c in got[p]["checkers"].items():
        assert c["valid"] == got[rest]["checkers"][checker]["valid"], (checker, c, got[rest]["checkers"][checker])
    assert got[p]["valid"] == "unknown" and got[p]["stats"]["damaged_lines"] == 1
