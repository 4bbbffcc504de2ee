"""The shape of the code, held by tests: the data path's packages import each other without cycles,
the system under test imports nothing from the control node, and no module grows past ~600 lines.

Every import counts: module-level, function-level and ``TYPE_CHECKING`` ones, because a cycle
anywhere means two modules that cannot be read, tested or changed apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "agent", "zkwire", "history", "nemesis", "workloads", "scenarios", "checkers")
SHIPPED = ("agent", "zkwire", "history")  # what a broker node gets
MAX_LINES = 600
# Declarative tables may be longer: a row per entry reads better than a split.
TABLES: set[str] = set()


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """Project modules ``path`` imports (a package import names the package's __init__)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, base] if base else pkg)
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, name, known) for name, path in known.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_the_module_graph_has_no_import_cycle() -> None:
    # A package __init__ that re-exports its modules imports them, and they import siblings through
    # the package; that is not a cycle between modules, so edges into a package's own __init__ from
    # its members are ignored.
    g = graph()
    pruned = {m: {t for t in deps if not (m.startswith(t + ".") and t in g)} for m, deps in g.items()}
    assert cycles(pruned) == []


@pytest.mark.parametrize("pkg", SHIPPED)
def test_the_shipped_packages_import_nothing_from_the_control_node(pkg: str) -> None:
    g = graph()
    control = [p for p in PACKAGES if p not in SHIPPED]
    bad = {m: sorted(d for d in deps if d.split(".")[0] in control)
           for m, deps in g.items() if m.split(".")[0] == pkg}
    assert {m: d for m, d in bad.items() if d} == {}


def test_no_module_is_over_600_lines() -> None:
    long = {name: n for name, path in modules().items()
            if name not in TABLES and (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_type_checking_and_function_level_imports_are_edges(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n")
    known = {"a": tmp_path / "a.py", "b": tmp_path / "b.py"}
    g = {n: imports(p, n, known) for n, p in known.items()}
    assert g == {"a": {"b"}, "b": {"a"}} and cycles(g) == [["a", "b"]]


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
