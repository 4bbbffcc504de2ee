"""docs/events.md describes exactly the event contract (``history.kinds``): the same kinds, and for
each the value fields the contract declares (a subset for kinds writers may extend)."""

from __future__ import annotations

import re
from pathlib import Path

from history.kinds import KINDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def documented() -> dict[str, set[str]]:
    """{kind: value fields} from every table row ``| `kind` | type | value | notes |`` below the envelope."""
    text = DOC.read_text(encoding="utf-8").split("## Agent events", 1)[1]
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`(\w+)`", cells[0]) if len(cells) >= 3 else None
        if m:
            assert m.group(1) not in out, f"{m.group(1)} documented twice"
            out[m.group(1)] = set(re.findall(r"`(\w+)`", cells[2]))
    return out


def test_the_doc_lists_exactly_the_contracts_kinds() -> None:
    docs = documented()
    assert set(docs) == set(KINDS), (sorted(set(KINDS) - set(docs)), sorted(set(docs) - set(KINDS)))


def test_each_documented_kind_has_the_contracts_fields() -> None:
    for kind, fields in documented().items():
        declared = set(KINDS[kind].fields)
        if KINDS[kind].open:
            assert fields <= declared, (kind, sorted(fields - declared))
        else:
            assert fields == declared, (kind, sorted(fields ^ declared))
