"""The broker's one high-watermark checkpoint file per log directory (agent.hwcheckpoint)."""

import pytest

from agent.hwcheckpoint import (
    CHECKPOINT_FILE,
    HighWatermarkCheckpoint,
    dropped_partitions,
    format_checkpoint,
    parse_checkpoint,
)


def test_format_is_kafkas_offset_checkpoint_file():
    text = format_checkpoint({("t", 1): 7, ("a", 0): 3})
    assert text == "0\n2\na 0 3\nt 1 7\n"
    assert parse_checkpoint(text) == {("a", 0): 3, ("t", 1): 7}
    assert parse_checkpoint(format_checkpoint({})) == {}


@pytest.mark.parametrize(("text", "where"), [
    ("", "line 1"),
    ("1\n0\n", "line 1: unsupported checkpoint version '1'"),
    ("0\nx\n", "line 2: count 'x'"),
    ("0\n2\nt 0 1\n", "line 2: count 2 but 1 entries"),
    ("0\n1\nt 0\n", "line 3: expected"),
    ("0\n1\nt zero 1\n", "line 3: partition and offset must be integers"),
])
def test_malformed_text_names_the_line(text, where):
    with pytest.raises(ValueError, match=where):
        parse_checkpoint(text)


def test_dropped_partitions_are_those_a_rewrite_leaves_out():
    before = {("t", 0): 5, ("t", 1): 2}
    assert dropped_partitions(before, {("t", 1): 2}) == [("t", 0)]
    assert dropped_partitions(before, {("t", 0): 6, ("t", 1): 2, ("u", 0): 0}) == []


def test_a_rewrite_holds_exactly_the_partitions_given(tmp_path):
    cp = HighWatermarkCheckpoint(tmp_path / "logs")
    assert cp.read() == {}  # no file yet: every partition starts at 0
    cp.write({("t", 0): 5, ("t", 1): 2})
    assert cp.read() == {("t", 0): 5, ("t", 1): 2}
    # a restarted broker that holds only t-1 so far: t-0's high watermark is gone from the file
    cp.write({("t", 1): 2})
    assert cp.read() == {("t", 1): 2}
    assert (tmp_path / "logs" / CHECKPOINT_FILE).read_text() == "0\n1\nt 1 2\n"


def test_holding_nothing_writes_nothing_and_garbage_reads_as_empty(tmp_path):
    cp = HighWatermarkCheckpoint(tmp_path)
    cp.write({("t", 0): 5})
    cp.write({})
    assert cp.read() == {("t", 0): 5}
    cp.path.write_text("0\n3\nt 0 5\n")
    assert cp.read() == {}
