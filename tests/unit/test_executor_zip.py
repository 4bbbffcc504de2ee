"""The code shipped to Spark executors is the checkers and what they import, nothing of the control node.

- The zip ``checkers.ship`` adds to a cluster's executors holds no module of ``harness``, ``nemesis``,
  ``workloads``, ``scenarios`` nor of the brokers' code, and of the base layer exactly the modules
  the checkers import (found by the architecture test's import graph, ``importlib`` included).
- Every module in it imports in a fresh interpreter from the zip alone, with the control node's
  packages blocked (this project is installed in the venv, so without the block they would load).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from checkers.ship import ROOT, SHIPPED, build_zip
from tests.unit.test_architecture import graph

CONTROL_NODE = ("harness", "nemesis", "workloads", "scenarios", "agent", "zkwire")
WHOLE = ("checkers", "history")  # shipped as packages; of the rest, module by module

# Runs in the fresh interpreter: argv[1] = the zip, argv[2] = JSON list of blocked top-level
# packages, argv[3] = JSON list of the modules to import. Prints a JSON report.
PROBE = r"""
import importlib, json, os, sys

zip_path, blocked, names = sys.argv[1], set(json.loads(sys.argv[2])), json.loads(sys.argv[3])
sys.path.insert(0, zip_path)


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"control-node package {name!r} imported from the executors' zip")
        return None


sys.meta_path.insert(0, Blocker())
for name in names:
    importlib.import_module(name)
ours = ("checkers", "history", "base", *blocked)
print(json.dumps({
    "outside": sorted(f"{m}: {mod.__file__}" for m, mod in sys.modules.items()
                      if m.split(".")[0] in ours and not (getattr(mod, "__file__", "") or "").startswith(zip_path)),
    "control_node_loaded": sorted(m for m in sys.modules if m.split(".")[0] in blocked)}))
"""


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    z = build_zip(tmp_path_factory.mktemp("pyfiles"))
    return z, {module_name(n) for n in zipfile.ZipFile(z).namelist()}


def checkers_closure() -> set[str]:
    """The checkers' modules and every project module they import, transitively, with the packages
    holding them (importing ``base.errors`` runs ``base/__init__.py``)."""
    g = graph()
    seen, todo = set(), [m for m in g if m.split(".")[0] == "checkers"]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += g[m]
    return seen | {".".join(m.split(".")[:i]) for m in seen for i in range(1, m.count(".") + 1)}


def test_the_zip_holds_no_control_node_module(shipped: tuple[Path, set[str]]) -> None:
    _, names = shipped
    assert sorted(n for n in names if n.split(".")[0] in CONTROL_NODE) == []
    assert {n.split(".")[0] for n in names} == {"checkers", "history", "base"}


def test_the_zip_holds_what_the_checkers_import_and_no_more(shipped: tuple[Path, set[str]]) -> None:
    _, names = shipped
    need = checkers_closure()
    assert sorted(need - names) == []  # an executor would fail to import these
    # Whole packages may carry a module no checker imports; the base layer ships only what they do.
    assert sorted(n for n in names - need if n.split(".")[0] not in WHOLE) == []
    assert all((ROOT / s).exists() for s in SHIPPED)


def test_every_shipped_module_imports_from_the_zip_alone(shipped: tuple[Path, set[str]]) -> None:
    z, names = shipped
    # -I: no PYTHONPATH, no user site, no current directory; -B: write no bytecode anywhere.
    proc = subprocess.run([sys.executable, "-I", "-B", "-c", PROBE, str(z), json.dumps(CONTROL_NODE),
                           json.dumps(sorted(names))], capture_output=True, text=True, cwd=z.parent, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"outside": [], "control_node_loaded": []}
