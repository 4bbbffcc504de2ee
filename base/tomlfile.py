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
    except OSError as e:
        raise error(f"{p}: cannot read {what}: {e.strerror or e}") from e
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        where = f"{p}:{m.group(1)}" if m else str(p)
        raise error(f"{where}: invalid TOML: {str(e).split(' (at line')[0]}") from e
