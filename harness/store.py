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


def sources_of(events_dir: Path, run_id: str) -> list[Any]:
    """A run's per-source event files (``events/*.jsonl``), each read lazily, for ``history.merge``,
    as a finished run and `harness teardown`'s salvage collect them: a Kafka proxy's frames first
    written as the agents' kinds (``base.kafkawire.map_run_frames``: ``kafkawire.jsonl``), and a real
    broker's registrations that its log gives without an epoch completed from the ZooKeeper wire
    proxy's events, when the run has them (``base.kafkalog.with_wire_registrations``); a real
    controller's views of the live brokers then get their epochs (``base.kafkalog.with_view_epochs``)."""
    from base.kafkalog import with_view_epochs, with_wire_registrations
    from base.kafkawire import map_run_frames
    from history import read_events

    map_run_frames(events_dir, run_id)
    files = sorted(events_dir.glob("*.jsonl"))
    wire = events_dir / "zkproxy.jsonl"
    sources = [read_events(p) for p in files]
    if wire in files:
        sources = with_wire_registrations(sources, read_events(wire))
    brokers = [i for i, p in enumerate(files) if p.name.startswith("kafka-")]
    return with_view_epochs(sources, brokers) if brokers else sources
