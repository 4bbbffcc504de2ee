"""The event contract (``history.kinds``) against the writers: every ``emit`` whose kind is a
literal names a declared kind, with an event type and value fields that kind declares; the nemesis
faults are exactly the fault catalogue's. Read from the source with ``ast``, not run."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from history.kinds import FAULTS, KINDS

ROOT = Path(__file__).resolve().parents[2]
WRITERS = ("agent", "base", "harness", "nemesis", "workloads", "scenarios")
ENVELOPE_KWARGS = {"type", "process"}


def emits() -> Iterator[tuple[str, str, str | None, set[str]]]:
    """(where, kind, literal type or None, literal value fields) of every literal-kind emit."""
    for pkg in WRITERS:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "emit" and node.args and isinstance(node.args[0], ast.Constant)):
                    continue
                typ = next((k.value for k in node.keywords if k.arg == "type"), None)
                fields = {k.arg for k in node.keywords if k.arg is not None} - ENVELOPE_KWARGS
                yield (f"{path.relative_to(ROOT)}:{node.lineno}", node.args[0].value,
                       typ.value if isinstance(typ, ast.Constant) else None, fields)


def test_the_scan_finds_the_writers() -> None:
    kinds = {k for _, k, _, _ in emits()}
    assert {"register", "broker_znode", "run_end", "heal", "frame"} <= kinds


@pytest.mark.parametrize("where,kind,typ,fields", list(emits()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_emit_is_in_the_contract(where: str, kind: str, typ: str | None, fields: set[str]) -> None:
    assert kind in KINDS, f"{where}: kind {kind!r} is not in history/kinds.py"
    k = KINDS[kind]
    assert typ is None or typ in k.types, f"{where}: {kind} is not written with type {typ!r} ({k.types})"
    undeclared = fields - set(k.fields)
    assert k.open or not undeclared, f"{where}: {kind} writes undeclared fields {sorted(undeclared)}"


def contract_gaps(catalogue: Iterable[str], contract: Iterable[str]) -> list[str]:
    """What keeps the event contract's fault list from being the catalogue's, one sentence per fault.
    ``history`` is shipped to the brokers and imports nothing of the nemesis, so it keeps the names
    itself; this says which to add or remove, and where."""
    catalogue, contract = list(catalogue), list(contract)
    return ([f"fault {f} is in nemesis.registry.FAULTS but not in history.kinds.FAULTS: add it there"
             for f in catalogue if f not in contract]
            + [f"fault {f} is in history.kinds.FAULTS but not in nemesis.registry.FAULTS: add its FaultSpec "
               "or remove it from history/kinds.py" for f in contract if f not in catalogue])


def test_nemesis_faults_are_the_fault_catalogue() -> None:
    from nemesis.registry import FAULTS as CATALOGUE

    assert contract_gaps(CATALOGUE, FAULTS) == []
    assert all(f in KINDS and KINDS[f].sources == ("nemesis",) for f in FAULTS)


def test_a_fault_missing_from_the_contract_is_named() -> None:
    assert contract_gaps([*FAULTS, "gc_pause"], FAULTS) == [
        "fault gc_pause is in nemesis.registry.FAULTS but not in history.kinds.FAULTS: add it there"]
