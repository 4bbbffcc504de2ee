"""The suite's own shape: tests/unit and tests/integration are not packages, so pytest imports every
test module under its basename alone, and two files of one name stop the whole suite at collection
(a fresh clone's CI ran no test at all when that happened)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_has_a_basename_of_its_own() -> None:
    by_name: defaultdict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        by_name[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: sorted(paths) for name, paths in by_name.items() if len(paths) > 1}
    assert clashes == {}, f"rename one of each: {clashes}"
