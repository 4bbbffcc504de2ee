"""Find processes by a marker in their command line (a run's scratch dir), for leak tests."""

from __future__ import annotations

from pathlib import Path


def processes_mentioning(marker: str) -> list[tuple[int, str]]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if marker in cmdline and ") Z" not in stat:
            found.append((int(proc.name), cmdline.strip()))
    return found
