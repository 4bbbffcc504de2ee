"""The ``--sizes`` flag every scaling bench takes: comma-separated counts, ``1e6`` notation allowed."""

from __future__ import annotations

import sys


def parse_sizes(text: str) -> list[int]:
    """``"1e6,1e7"`` → ``[1000000, 10000000]``; anything else ends the bench with one line, exit 254."""
    try:
        sizes = [int(float(s)) for s in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(n <= 0 for n in sizes):
        print(f"--sizes: expected positive numbers like 1e6,1e7, got {text!r}", file=sys.stderr)
        raise SystemExit(254)
    return sizes
