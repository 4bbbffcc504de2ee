"""Helpers for tests of the checkers: hand-built project events and reference-corpus lookup."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ENV_SHARED = "HARNESS_SHARED_HISTORIES"


def shared_histories() -> Path | None:
    """The reference corpus: $HARNESS_SHARED_HISTORIES, else ../shared/histories next to the repo."""
    p = Path(os.environ.get(ENV_SHARED) or REPO.parent / "shared" / "histories")
    return p if (p / "VERDICTS.tsv").is_file() else None


class EventLog:
    """Builds a project history (docs/events.md) line by line for tests."""

    def __init__(self, run: str = "test") -> None:
        self.run = run
        self.events: list[dict[str, Any]] = []
        self.seqs: dict[str, int] = {}
        self.t = 1000.0

    def emit(self, src: str, f: str, type: str = "event", process: Any = None, **value: Any) -> str:
        seq = self.seqs.get(src, 0) + 1
        self.seqs[src] = seq
        self.t += 0.001
        ev = {
            "run": self.run, "src": src, "seq": seq, "id": f"{src}/{seq}", "t_wall": self.t,
            "t_mono": int(self.t * 1e9), "type": type, "f": f, "process": process, "value": value,
            "index": len(self.events),
        }
        self.events.append(ev)
        return ev["id"]

    def write(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(e) + "\n" for e in self.events), encoding="utf-8")
        return p
