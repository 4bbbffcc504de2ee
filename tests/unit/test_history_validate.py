"""The one reading of a history (``history.validate``) on plain data: every class of damage the
issue named is one ``FILE:LINE`` refusal (or, skipping, a counted line), never data; what the
contract allows is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from history import HistoryFormatError, Scan, parse_record, read_events, read_records, scan_file, scan_lines
from history.validate import check_record

REG = {"run": "r", "src": "agent:1", "seq": 2, "id": "agent:1/2", "t_wall": 1.5, "t_mono": 7, "type": "ok",
       "f": "register", "process": 1, "index": 1,
       "value": {"broker_id": 1, "epoch": 2**40, "czxid": 2**40, "session_id": 256, "owner": 256}}


def line(**changes: Any) -> str:
    d = {**REG, **changes}
    return json.dumps({k: v for k, v in d.items() if v is not ...})


def value(**changes: Any) -> str:
    return line(value={**REG["value"], **changes})


FIRST = line(seq=1, id="agent:1/1", index=0)

DAMAGED = {
    "numeric src": line(src=5, id="5/2"),
    "string t_mono": line(t_mono="7"),
    "string value": line(value="epoch=5"),
    "byte-order mark": "\ufeff" + line(),
    "NaN t_wall": line().replace('"t_wall": 1.5', '"t_wall": NaN'),
    "huge t_wall": line().replace('"t_wall": 1.5', '"t_wall": 1e400'),
    "seq beyond int64": line(seq=2**63, id=f"agent:1/{2**63}"),
    "bool seq": line(seq=True, id="agent:1/True"),
    "unknown type": line(type="done"),
    "id not src/seq": line(id="agent:1/9"),
    "negative index": line(index=-1),
    "list process": line(process=[1]),
    "epoch missing as string": value(epoch="5"),
    "epoch NaN": value(epoch=float("nan")),  # json.dumps writes NaN: not JSON
    "epoch NaN as the writer spells it": value(epoch="NaN"),
    "czxid beyond int64": value(czxid=2**64 + 5),
    "czxid a float": value(czxid=5.0),
    "session a bool": value(session_id=True),
    "lone surrogate": line(run="\ud800"),
    "carriage return inside": line().replace(", ", ",\r", 1),
    "not an object": "[1, 2]",
    "truncated mid-line": line()[:40],
}


def write(tmp_path: Path, *lines: str, end: str = "\n") -> Path:
    p = tmp_path / "h.jsonl"
    p.write_bytes((("\n".join(lines)) + end).encode("utf-8", "surrogatepass"))
    return p


def test_an_intact_register_line_is_an_event() -> None:
    assert parse_record(line())["value"]["epoch"] == 2**40
    # the contract's optional parts: no t_mono, id, index, run, process or value at all
    assert parse_record('{"src":"a","seq":1,"t_wall":1,"type":"event","f":"x"}')["f"] == "x"
    # a float field may hold the writer's spelling of a non-finite float (read as null)
    assert parse_record(line(f="frame", src="zkproxy", id="zkproxy/2", value={"latency_ms": "NaN"}))
    # a kind the contract does not declare: its value fields are nobody's to judge
    assert parse_record(line(f="not_a_kind", value={"epoch": "x"}))


@pytest.mark.parametrize("name", list(DAMAGED))
def test_each_damage_is_one_refusal_naming_file_and_line(tmp_path: Path, name: str) -> None:
    p = write(tmp_path, FIRST, DAMAGED[name], line(seq=3, id="agent:1/3", index=2))
    with pytest.raises(HistoryFormatError) as e:
        list(read_records(p))
    assert str(e.value).startswith(f"{p}:2: not a valid event: ") and "\n" not in str(e.value)
    scan = scan_file(p)  # skipping instead: the line is counted, never read
    assert (scan.events, scan.damaged_total, [d.line for d in scan.damaged]) == (2, 1, [2])


def test_the_same_line_twice_is_a_duplicate_not_a_second_event(tmp_path: Path) -> None:
    p = write(tmp_path, FIRST, line(), line(seq=3, id="agent:1/3", index=2), line())
    with pytest.raises(HistoryFormatError, match=rf"^{p}:4: not a valid event: duplicate event id agent:1/2, "
                                                 "first at line 2$"):
        list(read_records(p))
    # out of seq order too (a source's events are in order: the slow path)
    p = write(tmp_path, line(seq=5, id="agent:1/5"), FIRST, line(seq=3, id="agent:1/3"), FIRST)
    assert [d.reason for d in scan_file(p).damaged] == ["duplicate event id agent:1/1, first at line 2"]
    # the same seq of two sources is two events
    assert scan_file(write(tmp_path, FIRST, line(src="agent:2", seq=1, id="agent:2/1"))).events == 2


def test_a_torn_tail_is_dropped_but_a_complete_damaged_last_line_is_damage(tmp_path: Path) -> None:
    p = write(tmp_path, FIRST, line()[:30], end="")
    scan = scan_file(p)
    assert (scan.events, scan.torn, scan.damaged_total) == (1, True, 0)
    assert [r["seq"] for r in read_records(p)] == [1]
    p = write(tmp_path, FIRST, value(epoch="5"), end="")  # whole JSON: not a crash mid-write
    assert scan_file(p).damaged_total == 1 and not scan_file(p).torn


def test_skipping_keeps_a_copy_of_exactly_the_events(tmp_path: Path) -> None:
    p = write(tmp_path, FIRST, DAMAGED["string t_mono"], line(seq=3, id="agent:1/3"), FIRST)
    copy = tmp_path / "copy.jsonl"
    with open(copy, "wb") as out:
        got = [n for n, _ in scan_lines(p, Scan(str(p)), skip=True, keep=out)]
    assert got == [1, 3] and [r["seq"] for r in read_records(copy)] == [1, 3]


def test_collecting_a_source_file_keeps_every_line_the_check_will_judge(tmp_path: Path) -> None:
    """The run engine merges per-source files with ``read_events``: envelope only, repeats allowed,
    so a writer's mistyped field reaches the merged history, where the check names it."""
    p = write(tmp_path, FIRST, value(epoch="5"), FIRST)
    assert [e.seq for e in read_events(p)] == [1, 2, 1]
    with pytest.raises(HistoryFormatError):
        list(read_records(p))


def test_envelope_only_check_leaves_value_fields_alone() -> None:
    assert check_record(json.loads(value(epoch="x")), values=False)["value"]["epoch"] == "x"
    with pytest.raises(ValueError, match="value.epoch of a register event must be a 64-bit integer"):
        check_record(json.loads(value(epoch="x")))


def test_a_map_may_hold_a_null_entry_but_not_a_wrong_typed_one() -> None:
    """``based_on_fetch`` names no fetch for a replica the leader has not heard from: a null entry the
    agents write (found by the fixed agent's nightly, where it was refused as damage)."""
    ap = {**REG, "f": "alter_partition", "type": "event", "value": {"request_id": "b1-alter-1", "based_on_fetch":
                                                                     {"2": None, "3": "agent:1/9"}}}
    assert check_record(ap)["value"]["based_on_fetch"] == {"2": None, "3": "agent:1/9"}
    with pytest.raises(ValueError, match="based_on_fetch of a alter_partition event must be an object of strings"):
        check_record({**ap, "value": {"based_on_fetch": {"2": 5}}})
