"""Reading the project's TOML inputs (inventories, campaigns) with one-line errors naming the file
and line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any


def read_toml(p: Path, what: str, error: type[Exception]) -> tuple[dict[str, Any], str]:
    """(parsed table, text) of ``p``; ``error("file:line: …")`` when it cannot be read or parsed."""
    try:
        text = p.read_text()
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path, or not UTF-8
        raise error(f"{p}: cannot read {what}: {getattr(e, 'strerror', None) or e}") from e
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        where = f"{p}:{m.group(1)}" if m else str(p)
        raise error(f"{where}: invalid TOML: {str(e).split(' (at line')[0]}") from e
    except (RecursionError, ValueError) as e:
        line, why = toml_failure(text, e)
        raise error(f"{p}:{line}: invalid TOML: {why}") from None


def toml_failure(text: str, e: Exception) -> tuple[int, str]:
    """(line, why) of a TOML text ``tomllib`` failed on without a ``TOMLDecodeError``: nested too
    deep (``RecursionError``) or an integer past Python's digit limit (``ValueError``)."""
    if isinstance(e, RecursionError):  # tomllib recurses per level: name the line that goes deepest
        depth, deepest, at = 0, 0, 1
        for i, line in enumerate(text.splitlines(), 1):
            depth += sum(line.count(c) for c in "[{") - sum(line.count(c) for c in "]}")
            if depth > deepest:
                deepest, at = depth, i
        return at, f"arrays or inline tables nested too deep ({deepest} levels)"
    for i, line in enumerate(text.splitlines(), 1):
        if re.search(r"\d[\d_]{4000,}", line):
            return i, "an integer of thousands of digits"
    return 1, " ".join(str(e).split())[:200]


def key_line(text: str, key: str) -> int | None:
    """The line of ``text`` that sets ``key`` — a path like ``agents.session_timeout_ms`` or
    ``nodes[2].name`` (the third ``[[nodes]]`` table) — or, when no line sets it, of its nearest
    table: an error on a value names the line it is on. None when nothing matches."""
    want = re.sub(r"\s+", "", key)
    table, counts, found = "", {}, {}
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if m := re.fullmatch(r"\[\[\s*([\w.-]+)\s*\]\]\s*(#.*)?", s):
            name = m.group(1)
            counts[name] = counts.get(name, -1) + 1
            table = f"{name}[{counts[name]}]"
        elif m := re.fullmatch(r"\[\s*([\w.-]+)\s*\]\s*(#.*)?", s):
            table = m.group(1)
        elif m := re.match(r"([\w.-]+)\s*=", s):
            found.setdefault(f"{table}.{m.group(1)}" if table else m.group(1), i)
            continue
        else:
            continue
        found.setdefault(table, i)
    while want:
        if want in found:
            return found[want]
        want = re.sub(r"(\.[\w-]+|\[\d+\])$", "", want) if re.search(r"(\.[\w-]+|\[\d+\])$", want) else ""
    return None
