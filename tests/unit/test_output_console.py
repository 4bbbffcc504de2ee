"""The commands' console: a log or a pipe gets tables at their own width, not folded at 80 columns."""

from __future__ import annotations

import io

import pytest
from rich.table import Table

from harness.terminal import LOG_WIDTH, output_console


def latency_table() -> Table:
    t = Table()
    for name in ("workload", "op", "ops", "ok", "fail", "info", "open", "p50_ms", "p90_ms", "p99_ms", "max_ms"):
        t.add_column(name)
    t.add_row("queue", "create_topic", "1", "1", "0", "0", "0", "248.9", "248.9", "248.9", "248.9")
    return t


def test_a_log_gets_whole_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()  # not a terminal: what cron's log or `| tee` is
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.delenv("COLUMNS", raising=False)
    console = output_console()
    assert console.width == LOG_WIDTH
    console.print(latency_table())
    assert "create_topic" in out.getvalue() and "p50_ms" in out.getvalue()


def test_columns_in_the_environment_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdout", io.StringIO())
    monkeypatch.setenv("COLUMNS", "100")
    assert output_console().width == 100
