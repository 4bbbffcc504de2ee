"""The one line validator (``history.read_records`` / ``has_torn_tail``) that both the plain reader
and the Spark loader use: which lines are events, and which last line is a torn one."""

from __future__ import annotations

from pathlib import Path

import pytest

from history import HistoryFormatError, has_torn_tail, read_records

GOOD = '{"src":"a","seq":1,"t_wall":1.5,"type":"event","f":"x"}'


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "h.jsonl"
    p.write_text(text, encoding="utf-8")
    return p


def test_a_torn_last_line_is_skipped_and_recognised(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD + "\n" + '{"src":"a","se')
    assert [r["seq"] for r in read_records(p)] == [1] and has_torn_tail(p)


def test_bytes_that_are_not_utf8_are_their_lines_error(tmp_path: Path) -> None:
    p = tmp_path / "h.jsonl"
    p.write_bytes(GOOD.encode() + b"\n" + b'{"src":"a\xff"}\n' + GOOD.encode() + b"\n")
    with pytest.raises(HistoryFormatError, match=f"^{p}:2: not a valid event: 'utf-8' codec can't decode byte 0xff"):
        list(read_records(p))
    p.write_bytes(GOOD.encode() + b"\n" + GOOD.encode()[:10] + b"\xe2\x82")  # a crash mid-character: torn
    assert [r["seq"] for r in read_records(p)] == [1] and has_torn_tail(p)


def test_a_complete_last_line_without_newline_is_an_event_not_a_torn_tail(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD + "\n" + GOOD.replace('"seq":1', '"seq":2'))
    assert [r["seq"] for r in read_records(p)] == [1, 2] and not has_torn_tail(p)
    assert not has_torn_tail(write(tmp_path, GOOD + "\n")) and not has_torn_tail(write(tmp_path, ""))


@pytest.mark.parametrize("bad", [
    '{"src":"a","seq":"1","t_wall":1,"type":"event","f":"x"}',  # seq must be an integer
    '{"src":"a","seq":1,"type":"event","f":"x"}',  # no t_wall
    '{"src":"a","seq":1,"t_wall":1,"type":"event","f":"x","value":[1]}',  # value must be an object
    '[1, 2]',
])
def test_a_bad_line_before_the_end_names_file_and_line(tmp_path: Path, bad: str) -> None:
    p = write(tmp_path, GOOD + "\n" + bad + "\n")
    with pytest.raises(HistoryFormatError, match=f"{p}:2: not a valid event"):
        list(read_records(p))
    assert not has_torn_tail(p)
