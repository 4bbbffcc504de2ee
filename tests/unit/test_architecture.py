"""The shape of the code, held by tests: the data path's packages import each other without cycles,
each layer imports only from the layers below it (``LAYERS``), the system under test imports nothing
from the control node, and no module grows past ~600 lines.

Every import counts: module-level, function-level and ``TYPE_CHECKING`` ones, because a cycle
anywhere means two modules that cannot be read, tested or changed apart. So does a module named by
a string: ``importlib.import_module``/``__import__`` with a literal, and any string literal that is
a project module's dotted name (a table of modules to load, a ``python -m`` child), because a cycle
through ``importlib`` is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "base", "agent", "zkwire", "history", "nemesis", "workloads", "scenarios", "checkers")
SHIPPED = ("agent", "zkwire", "history")  # what a broker node gets
# The layers, lowest first: a module imports from its own layer or one below, never above. A module
# belongs to the layer of the longest prefix naming it (the CLI sits above the scenarios, which sit
# above the run engine they hand tests to, though all three are harness's).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("shipped", SHIPPED),  # the system under test and its event record
    ("base", ("base",)),  # errors, waiting, ports, local state, TOML, SSH, inventory, components
    ("checkers", ("checkers",)),  # what Spark executors get (checkers.ship), with what they import below
    ("faults and load", ("nemesis", "workloads")),
    ("control node", ("harness",)),  # the run engine, cluster, campaign, analysis, report
    ("scenarios", ("scenarios",)),  # JIRA stories, built on the run engine
    ("commands", ("harness.cli", "harness.commands")),  # the CLI: its table loads the commands
)
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


def _dynamic(node: ast.AST, known: dict[str, Path]) -> list[str]:
    """Modules ``node`` names by a string: ``import_module("x")``/``__import__("x")``, or a string
    literal that is a project module's dotted name (``("pkg.a", "pkg.b")`` handed to importlib)."""
    if isinstance(node, ast.Call) and node.args and isinstance(arg := node.args[0], ast.Constant) \
            and isinstance(arg.value, str):
        f = node.func
        called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if called in ("import_module", "__import__"):
            return [arg.value]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
            and node.value in known:
        return [node.value]
    return []


def imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """Project modules ``path`` imports (a package import names the package's __init__)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = _dynamic(node, known)
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


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of the longest prefix naming ``module``."""
    best, depth = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and p.count(".") > depth:
                best, depth = i, p.count(".")
    if best < 0:
        raise LookupError(f"{module} is in no layer: add its package to LAYERS")
    return best


def upward(g: dict[str, set[str]]) -> list[str]:
    """Every import of a module in a higher layer than the importer's, one line each."""
    out = []
    for m in sorted(g):
        for d in sorted(g[m]):
            if (lm := layer_of(m)) < (ld := layer_of(d)):
                out.append(f"{m} (layer {lm}, {LAYERS[lm][0]}) imports {d} (layer {ld}, {LAYERS[ld][0]})")
    return out


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


def test_every_package_is_in_a_layer() -> None:
    assert sorted(p for p in PACKAGES if not any(p in prefixes for _, prefixes in LAYERS)) == []


def test_no_module_imports_from_a_higher_layer() -> None:
    assert upward(graph()) == []


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


def test_an_import_from_a_higher_layer_is_named() -> None:
    g = {"checkers.x": {"harness.cli", "base.errors"}, "harness.engine": {"checkers.x"}, "base.errors": set(),
         "harness.cli": {"harness.commands.check"}, "harness.commands.check": {"harness.engine"}}
    assert upward(g) == ["checkers.x (layer 2, checkers) imports harness.cli (layer 6, commands)"]
    assert layer_of("harness.commands.check") == 6 and layer_of("harness.cds") == 4


def test_modules_named_to_importlib_are_edges(tmp_path: Path) -> None:
    # The cycle the old harness.cli and checkers.command made: a table of names the CLI loads with
    # importlib, and a command importing the CLI back.
    (tmp_path / "cli.py").write_text("import importlib\nMODULES = ('cmds.check',)\n"
                                     "def build():\n    for n in MODULES:\n        importlib.import_module(n)\n")
    (tmp_path / "cmds").mkdir()
    (tmp_path / "cmds" / "__init__.py").write_text("")
    (tmp_path / "cmds" / "check.py").write_text("from cli import build\n")
    (tmp_path / "dyn.py").write_text("m = __import__('cli')\nimport importlib\nimportlib.import_module('cmds')\n"
                                     "print('cmds.check is named in prose, not loaded')\n")
    known = {"cli": tmp_path / "cli.py", "cmds": tmp_path / "cmds" / "__init__.py",
             "cmds.check": tmp_path / "cmds" / "check.py", "dyn": tmp_path / "dyn.py"}
    g = {n: imports(p, n, known) for n, p in known.items()}
    assert g == {"cli": {"cmds.check"}, "cmds": set(), "cmds.check": {"cli"}, "dyn": {"cli", "cmds"}}
    assert cycles(g) == [["cli", "cmds.check"]]
