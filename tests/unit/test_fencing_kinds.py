"""`fencing.KINDS` is the row filter every checker's input passes through: a kind a checker filters
on but KINDS lacks would silently never be checked. Read the checkers' own filters and compare."""

from __future__ import annotations

import inspect
import re

from checkers import fencing


def test_every_kind_a_checker_filters_on_is_kept():
    src = "".join(inspect.getsource(fn) for fn in fencing.CHECKERS.values()) + inspect.getsource(fencing._applied_recv)
    kinds = set(re.findall(r'col\("f"\)\s*==\s*"(\w+)"', src))
    for args in re.findall(r'col\("f"\)\.isin\(([^)]*)\)', src):
        kinds |= set(re.findall(r'"(\w+)"', args))
    assert kinds and kinds <= set(fencing.KINDS), sorted(kinds - set(fencing.KINDS))
