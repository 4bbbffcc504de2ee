"""`harness repro` command line: listing and bad input (no cluster needed)."""

from __future__ import annotations

import pytest

from harness.cli import main

pytestmark = pytest.mark.integration


def test_list_names_every_scenario(capsys):
    assert main(["repro", "--list"]) == 0
    out = capsys.readouterr().out
    for sid in ("KAFKA-14845", "KAFKA-6584", "KAFKA-7235-fast-bounce", "KAFKA-7235-stale-stopreplica",
                "KAFKA-7235-stale-shutdown", "KAFKA-14139"):
        assert sid in out


@pytest.mark.parametrize("argv", [["repro"], ["repro", "KAFKA-0"], ["repro", "KAFKA-14845", "--runs", "0"],
                                  ["repro", "KAFKA-14845", "--bogus"]])
def test_bad_input_is_254(argv, capsys):
    with pytest.raises(SystemExit) as e:
        rc = main(argv)
        raise SystemExit(rc)
    assert e.value.code == 254
