"""bench/fuzz.py stays runnable (issue 46.5): its table lists every surface, a small run of the pure
surfaces prints the table and exits 0, and ``Tally.judge`` files each outcome where it belongs.
No timing is asserted; the 10,000-input runs are the bench's, not the tests'."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from fuzzlib import Tally, WrongAcceptance  # noqa: E402


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "fuzz.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_list_names_every_surface() -> None:
    out = bench("--list").stdout
    names = [line.split("  ")[0].strip() for line in out.splitlines()]
    assert names[:3] == ["zkwire decode", "zkproxy live", "control API"]
    assert {"flags:run", "flags:campaign", "schedules", "campaigns", "inventories", "edn"} <= set(names[3:])


def test_a_small_run_prints_the_table_and_passes() -> None:
    p = bench("--inputs", "150", "--seed", "3", "--only", "zkwire decode", "--only", "control API")
    assert p.returncode == 0, p.stdout + p.stderr
    head, rule, *rows = p.stdout.splitlines()[1:]
    assert [c.strip() for c in head.split("|")] == ["surface", "inputs", "accepted", "clean refusals", "crashes",
                                                    "hangs", "wrong acceptances"]
    assert [[c.strip() for c in r.split("|")][:2] for r in rows] == [["zkwire decode", "150"], ["control API", "150"]]


def test_an_unknown_surface_is_a_usage_error() -> None:
    p = bench("--only", "nope")
    assert p.returncode == 2 and "unknown surface 'nope'" in p.stderr


@pytest.mark.parametrize(("fn", "outcome"), [
    (lambda: "accepted", "accepted"), (lambda: "refused", "refused"),
    (lambda: (_ for _ in ()).throw(WrongAcceptance("x")), "wrong"),
    (lambda: [][1], "crash"), (lambda: "maybe", "crash"),
])
def test_judge_files_each_outcome(fn, outcome: str) -> None:  # noqa: ANN001
    t = Tally()
    assert t.judge("input", fn) == outcome and t.counts[outcome] == 1 and t.inputs == 1
    assert (t.failures == 1) is (outcome in ("crash", "wrong"))
