"""Store: ``store/<test>/<timestamp>/`` with run.json, history.jsonl, results.json, events/ and
logs/; ``store/latest`` and ``store/<test>/latest`` point at the newest run."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


def new_run_dir(store: Path, test: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime()) + f".{int(time.time() * 1000) % 1000:03d}"
    run_dir = store / test / stamp
    run_dir.mkdir(parents=True, exist_ok=False)
    for link, target in ((store / "latest", Path(test) / stamp), (store / test / "latest", Path(stamp))):
        tmp = link.with_name(link.name + ".tmp")
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        os.symlink(target, tmp)
        os.replace(tmp, link)
    return run_dir


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(path)
