"""Where a command writes, proved writable before it does any work.

A directory or file named by a flag (``--store``, ``--out``, ``--junit``, ``--parquet``) that cannot
be written is a one-line error naming the flag (exit 254) before a cluster starts or a check runs,
not a traceback after a run whose verdict then has nowhere to go. Judging leaves nothing behind: a
command that stops on another error has not created its output directories (the writers create them).
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from base.errors import UsageError


def writable_dir(path: str | Path, flag: str) -> Path:
    """``path``, proved writable: a file made and removed in it (created, with its parents, for the
    test and removed again if it was missing)."""
    d = Path(path)
    if _exists(d) and not _exists(d, is_dir=True):
        raise UsageError(f"{flag} {d}: is a file, not a directory")
    why = _unwritable(d)
    if why is not None:
        raise UsageError(f"{flag} {d}: cannot write there ({why})")
    return d


def writable_file(path: str | Path, flag: str) -> Path:
    """``path``'s directory as ``writable_dir``; ``path`` itself must not be a directory."""
    p = Path(path)
    if _exists(p, is_dir=True):
        raise UsageError(f"{flag} {p}: is a directory, not a file")
    why = _unwritable(p.parent)
    if why is not None:
        raise UsageError(f"{flag} {p}: cannot write in {p.parent} ({why})")
    return p


def _exists(p: Path, is_dir: bool = False) -> bool:
    """``p.exists()`` (``is_dir()``); False for a path no file can have (a name too long, a NUL):
    ``_unwritable`` then says why."""
    try:
        return p.is_dir() if is_dir else p.exists()
    except (OSError, ValueError):
        return False


def _unwritable(d: Path) -> str | None:
    """Why no file can be made in ``d`` (None: one can), leaving no directory made to find out."""
    try:
        made = [p for p in (d, *d.parents) if not p.exists()]  # deepest first
    except (OSError, ValueError) as e:  # a name too long, a NUL in it
        return getattr(e, "strerror", None) or str(e)
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=d):
            pass
    except OSError as e:
        return e.strerror or str(e)
    finally:
        for p in made:
            with contextlib.suppress(OSError):
                p.rmdir()
    return None
