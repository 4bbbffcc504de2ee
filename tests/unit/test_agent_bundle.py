"""The shipped agent is self-contained, and the control node uses only its public interface.

- The bundle, tarred exactly as the harness ships it (``base.components.agent.build_agent_bundle``), imports
  in a fresh interpreter that cannot import any control-node package.
- The control node imports only ``agent.config``, ``agent.client`` and ``agent.znodes``.

Import cycles and module sizes are held repo-wide by ``tests/unit/test_architecture.py``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from base.components.agent import AGENT_PACKAGES, REPO_ROOT, build_agent_bundle

CONTROL_NODE = ("harness", "base", "nemesis", "workloads", "checkers", "scenarios")
AGENT_PUBLIC = {"agent.config", "agent.client", "agent.znodes"}

# Runs in the fresh interpreter: argv[1] = the extracted bundle, argv[2] = JSON list of blocked
# top-level packages. Prints a JSON report.
PROBE = r"""
import importlib, json, os, runpy, sys

root, blocked = sys.argv[1], set(json.loads(sys.argv[2]))
sys.path.insert(0, root)


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"control-node package {name!r} imported from the agent bundle")
        return None


sys.meta_path.insert(0, Blocker())
imported, outside = [], []
for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
    for fn in sorted(filenames):
        if not fn.endswith(".py") or fn == "__main__.py":  # __main__ runs the program: below
            continue
        rel = os.path.relpath(os.path.join(dirpath, fn), root)[:-3].split(os.sep)
        name = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
        mod = importlib.import_module(name)
        imported.append(name)
        if not os.path.abspath(mod.__file__).startswith(os.path.abspath(root) + os.sep):
            outside.append(f"{name}: {mod.__file__}")

sys.argv = ["agent", "--help"]  # the entry point the nodes run, as far as it goes without a config
try:
    runpy.run_module("agent", run_name="__main__", alter_sys=True)
    help_exit = None
except SystemExit as e:
    help_exit = e.code
print(json.dumps({"imported": imported, "outside": outside, "help_exit": help_exit,
                  "control_node_loaded": sorted(m for m in sys.modules if m.split(".")[0] in blocked)}))
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("bundle")
    tarball = tmp / "agent-code.tar.gz"
    build_agent_bundle(tarball)  # what every broker node receives
    code = tmp / "code"
    code.mkdir()
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
        tar.extractall(code, filter="data")
    return code, names


def test_bundle_is_agent_zkwire_history_only(bundle: tuple[Path, list[str]]) -> None:
    _, names = bundle
    assert set(AGENT_PACKAGES) == {"agent", "zkwire", "history"}
    assert {n.split("/")[0] for n in names} == {"agent", "zkwire", "history"}


def test_bundle_imports_alone_in_a_clean_interpreter(bundle: tuple[Path, list[str]]) -> None:
    code, _ = bundle
    # -I: no PYTHONPATH, no user site, no current directory; -B: leave the tree as extracted.
    proc = subprocess.run([sys.executable, "-I", "-B", "-c", PROBE, str(code), json.dumps(CONTROL_NODE)],
                          capture_output=True, text=True, cwd=code, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = {".".join(p.relative_to(code).with_suffix("").parts).removesuffix(".__init__")
                for p in code.rglob("*.py") if p.name != "__main__.py"}
    assert set(report["imported"]) == expected
    assert {"agent.broker", "agent.cli", "zkwire.codec", "history.events"} <= expected
    assert report["outside"] == []  # every module came from the extracted bundle
    assert report["help_exit"] == 0  # `python -m agent --help` runs from the bundle
    assert report["control_node_loaded"] == []


# -- static checks over the repository ------------------------------------------------------------


def _modules(*packages: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in packages:
        for p in sorted((REPO_ROOT / pkg).rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            name = ".".join(p.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
            out[name] = p
    return out


def _imports(path: Path, is_package: bool, module: str) -> list[tuple[str, list[str]]]:
    """Every import anywhere in the file (top level, in functions, under TYPE_CHECKING), as
    (absolute module, imported names); relative imports are resolved."""
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parent = parts if is_package else parts[:-1]
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join(parent + ([node.module] if node.module else []))
            out.append((base, [a.name for a in node.names]))
    return out


def test_control_node_imports_only_the_agent_public_modules() -> None:
    packages = [p for p in CONTROL_NODE if (REPO_ROOT / p).is_dir()]
    assert "harness" in packages
    bad = []
    for name, path in _modules(*packages).items():
        for mod, names in _imports(path, path.name == "__init__.py", name):
            if mod == "agent" and names:
                used = {f"agent.{n}" for n in names}
            elif mod == "agent" or mod.startswith("agent."):
                used = {mod}
            else:
                continue
            bad += [f"{path.relative_to(REPO_ROOT)}: {u}" for u in sorted(used - AGENT_PUBLIC)]
    assert bad == []
