"""The run's live progress line: its text, the trailing ops/s, and one plain line every few
seconds when stdout is not a terminal (a fake clock: no sleeping, no timing asserted)."""

from __future__ import annotations

import io

from rich.console import Console

from harness.progress import LiveLine, OpsRate, progress_line


def test_the_line_shows_faults_and_only_then_client_counts() -> None:
    assert progress_line(3.04, 20, [], {"ok": 0, "fail": 0, "info": 0}, 0.0) == "run   3.0/20s · active faults: none"
    line = progress_line(12.3, 20, ["isolate b1", "kill zk2"], {"ok": 3021, "fail": 12, "info": 3}, 310.4)
    assert line == "run  12.3/20s · active faults: isolate b1, kill zk2 · 310 ops/s · ok 3021 fail 12 info 3"


def test_ops_per_second_is_over_the_trailing_window_so_a_stall_shows() -> None:
    r = OpsRate(window_s=5.0)
    assert r.add(0.0, 0) == 0.0
    for t in range(1, 11):  # 100 ops/s for 10 s
        rate = r.add(float(t), 100 * t)
    assert rate == 100.0
    for t in range(11, 17):  # then every client blocked: no completion for 6 s
        rate = r.add(float(t), 1000)
    assert rate == 0.0  # an average since the start would still say 62 ops/s


def test_a_non_terminal_gets_one_plain_line_every_interval() -> None:
    out = io.StringIO()
    now = [0.0]
    console = Console(file=out, force_terminal=False)
    with LiveLine(console, lambda: now[0], every=5.0).running("run") as live:
        for i in range(101):  # 10 s of updates every 0.1 s
            now[0] = i / 10
            live.update(f"run {now[0]:.1f} [isolate b1]")
    assert out.getvalue().splitlines() == ["run 0.0 [isolate b1]", "run 5.0 [isolate b1]", "run 10.0 [isolate b1]"]


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    with LiveLine(console, lambda: 0.0).running("run") as live:
        live.update("run 1.0")
        live.update("run 2.0")
    assert out.getvalue().count("\n") <= 1  # a status spinner, never one line per update


def test_a_long_plain_line_is_never_wrapped() -> None:
    out = io.StringIO()
    with LiveLine(Console(file=out, force_terminal=False, width=40), lambda: 0.0).running("run") as live:
        live.update("run 1.0/20s · active faults: " + ", ".join(f"partition b{i}" for i in range(9)))
    assert len(out.getvalue().splitlines()) == 1
