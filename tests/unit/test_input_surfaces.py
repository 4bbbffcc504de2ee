"""Every input surface refuses before it starts anything (issue 46): random argv for each command's
parser, random schedules, campaigns, inventories and EDN texts are either accepted with finite,
bounded values or refused with the project's one-line error (exit 254) — never a traceback, never
a hang. Small Hypothesis budgets here; ``bench/fuzz_inputs.py`` runs 10,000 inputs per surface.
The issue's own examples run as commands in a subprocess, each refused in one line.

Tests assert no timings: the issue's 2 s bound per input is the bench's (``fuzz_inputs.HANG_S``,
printed as its hang count); here an input counts as a hang only past ``HANG_S_HERE``, which no
load on a shared machine reaches and a real hang (an endless loop) always does."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import fuzz_inputs
from bench.fuzz_values import NUM_TEXTS, STR_TEXTS

REPO = Path(__file__).resolve().parents[2]
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HANG_S_HERE = 30.0


@pytest.fixture(autouse=True)
def _hang_is_not_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz_inputs, "HANG_S", HANG_S_HERE)


def _clean(c: fuzz_inputs.Counts) -> None:
    assert (c.crashes, c.hangs, c.wrong) == (0, 0, 0), c.examples


@pytest.mark.parametrize("command", ["run", "hunt", "campaign", "doctor", "setup", "check", "check-server", "serve",
                                     "repro"])
@FAST
@given(seed=st.integers(0, 2**32))
def test_random_flags_parse_to_bounded_values_or_exit_254(command: str, seed: int) -> None:
    _clean(fuzz_inputs.SURFACES[f"flags:{command}"](random.Random(seed), 5))


@FAST
@given(values=st.lists(st.sampled_from(NUM_TEXTS + STR_TEXTS) | st.text(max_size=30), min_size=1, max_size=4),
       flags=st.lists(st.sampled_from(["--time-limit", "--interval", "--rate", "--concurrency", "--margin-ms",
                                       "--seed", "--target", "--faults", "--zk", "--zk-hosts"]), min_size=1, max_size=4))
def test_run_flags_from_any_text(values: list[str], flags: list[str]) -> None:
    argv = [x for pair in zip(flags, values, strict=False) for x in pair]
    c = fuzz_inputs.Counts("run")
    fuzz_inputs._judge(c, str(argv), lambda: fuzz_inputs._flags_once("run", argv), (fuzz_inputs.UsageError,))
    _clean(c)


@pytest.mark.parametrize("surface", ["schedules", "campaigns", "inventories", "edn"])
@FAST
@given(seed=st.integers(0, 2**32))
def test_random_files_are_accepted_sound_or_refused_in_one_line(surface: str, seed: int) -> None:
    _clean(fuzz_inputs.SURFACES[surface](random.Random(seed), 5))


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list('[](){}#_":\\u0123456789abcdefzZ ,;\n')), max_size=60))
def test_any_edn_text_reads_or_is_a_file_line_error(text: str) -> None:
    from checkers.edn import EdnError, read_all

    try:
        read_all(text, "h.edn")
    except EdnError as e:
        assert str(e).startswith("h.edn:") and "\n" not in str(e)


@pytest.mark.parametrize("argv, says", [
    (["run", "--faults", "kill", "--interval", "1e-9"], "argument --interval: expected a number of seconds in [0.1, "),
    (["run", "--time-limit", "nan"], "argument --time-limit"),
    (["run", "--time-limit", "inf"], "argument --time-limit"),
    (["run", "--interval", "nan"], "argument --interval"),
    (["doctor", "--timeout", "nan"], "argument --timeout"),
    (["hunt", "--time-limit", "inf"], "argument --time-limit"),
    (["run", "--faults", ","], "argument --faults: expected a comma list of names"),
    (["run", "--seed", "9" * 400], "argument --seed"),
])
def test_the_issues_examples_exit_254_in_one_line(argv: list[str], says: str) -> None:
    out = _harness(*argv)  # a hang is the subprocess's timeout
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 254 and len(lines) == 1 and says in lines[0], out.stderr


def _harness(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True, env=env,
                          timeout=60, cwd=REPO)


@pytest.mark.parametrize("text, says", [
    ("seeds = 10000000\n", "seeds: a count: expected an integer of seeds in [1, 10000], got 10000000"),
    ("[matrix]\nworkloads = [[\"none\"]]\n", "matrix.workloads[0]: no workload"),
])
def test_a_campaign_of_absurd_size_is_refused_before_planning(tmp_path: Path, text: str, says: str) -> None:
    from harness.campaign import CampaignError, load_campaign

    p = tmp_path / "c.toml"
    p.write_text(text)
    with pytest.raises(CampaignError, match=r"c\.toml:\d+: ") as e:
        load_campaign(p)
    assert says in str(e.value)


STEP = '[[step]]\nat = 1\nfault = "{fault}"\ntargets = {targets}\n{extra}'


@pytest.mark.parametrize("fault, targets, extra, says", [
    ('kill"\nfault = ["kill"', '"b1"', "", "invalid TOML"),
    ("cut", '"b1"', 'params = { links = ["b1->zk9"] }', "params.links: no link 'b1->zk9' in this inventory"),
    ("cut", '"b1"', 'params = { links = ["b1=>zk1"] }', "params.links: 'b1=>zk1' is not a link"),
    ("cut", '"b1"', "", "params.links: required for the start of cut"),
    ("delay_request", '"controller"', 'params = { kind = "Teleport", to = "b2" }', "params.kind: must be one of"),
    ("delay_request", '"controller"', 'params = { kind = "StopReplica", to = "b9" }', "params.to: 'b9' is not a broker"),
    ("zk_rules", '"all-zk"', 'params = { rules = [{ action = "teleport" }] }', "params.rules: rule 0"),
    ("kill", '["b1", "zk9"]', "", "targets: ['zk9'] not in the inventory"),
    ("latency", '"b1"', "params = { latency_ms = nan }", "params.latency_ms: expected a number in [0, "),
    ("latency", '"b1"', "params = { latency_ms = 1" + "0" * 300 + " }", "params.latency_ms: expected a number"),
    ("kill", '"b1"', "duration = inf", "duration: expected a number of seconds in (0, 86400], got inf"),
    ("kill", '"b1"', "at = [" * 3000 + "]" * 3000, "invalid TOML"),
])
def test_a_schedule_is_judged_whole_before_a_cluster_starts(tmp_path: Path, fault: str, targets: str, extra: str,
                                                           says: str) -> None:
    from base.inventory import load_inventory
    from nemesis.scripted import ScheduleError, Topology, load_schedule

    p = tmp_path / "s.toml"
    p.write_text(STEP.format(fault=fault, targets=targets, extra=extra + "\n"))
    with pytest.raises(ScheduleError, match=r"s\.toml:\d+") as e:
        load_schedule(p, Topology.of(load_inventory(None)))
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_schedule_with_zk_rules_needs_the_wire_proxy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    p = tmp_path / "s.toml"
    p.write_text(STEP.format(fault="zk_rules", targets='"all-zk"', extra='params = { rules = [{ action = "close" }] }\n'))
    assert main(["run", "--schedule", str(p), "--store", str(tmp_path / "store")]) == 254
    assert "zk_rules steps need the ZooKeeper wire proxy (--zkproxy)" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_every_numeric_flag_has_a_bounded_type() -> None:
    """No command takes a bare int or float: each numeric flag's type says its bounds."""
    import argparse

    from harness.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [f"{name} {'/'.join(a.option_strings)}" for name, p in sub.choices.items() for a in p._actions
            if a.type in (int, float)]
    assert not bare, f"numeric flags without bounds (use base.bounds.finite_float/bounded_int): {bare}"
