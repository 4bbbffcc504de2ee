"""Salvage a run whose control process died: the events each source wrote so far become the run's
``history.jsonl``, so ``harness check`` gives the cut-short run a verdict.

The run engine does this itself on SIGINT/SIGTERM; after a SIGKILL of the control node it is
``harness teardown`` that calls ``salvage`` with what the run recorded in its state file (the run
directory, each agent's event file on its node, each real Kafka broker's log files, which are
parsed into its events as the engine parses them at a run's end) and a way to copy a file from a node.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.store import sources_of
from history import EventWriter, has_torn_tail, merge, write_history

SALVAGED = "the control process died; events salvaged by harness teardown"


def salvage(state: dict[str, Any], fetch: Callable[[str, str, Path], bool]) -> int | None:
    """Copy the agents' event files into the run directory and merge its history; the number of
    events, or None when there is nothing to salvage (no run recorded, or its history was written).
    ``fetch(node, remote_path, local_path)`` copies one file from a node, False when it cannot."""
    run_dir = Path(state["run_dir"]) if state.get("run_dir") else None
    if run_dir is None or not run_dir.is_dir() or (run_dir / "history.jsonl").exists():
        return None
    events = run_dir / "events"
    events.mkdir(exist_ok=True)
    for node, (remote_path, local_name) in sorted(state.get("agent_events", {}).items()):
        fetch(node, remote_path, events / local_name)
    for node, (broker_id, timeout_ms, log_paths) in sorted(state.get("kafka_logs", {}).items()):
        _salvage_kafka_log(node, int(broker_id), timeout_ms, log_paths, fetch, run_dir, state.get("run_id", ""))
    harness = events / "harness.jsonl"
    if harness.exists() and has_torn_tail(harness):
        _drop_torn_tail(harness)  # the line the dying process was writing
    with EventWriter(harness, "harness", state.get("run_id", "")) as w:
        w.emit("run_interrupted", reason=SALVAGED)
    return write_history(merge(sources_of(events, state.get("run_id", ""))), run_dir / "history.jsonl")


def _salvage_kafka_log(node: str, broker_id: int, timeout_ms: int | None, log_paths: list[str],
                       fetch: Callable[[str, str, Path], bool], run_dir: Path, run_id: str) -> None:
    from base.kafkalog import broker_events, write_events

    (run_dir / "logs").mkdir(exist_ok=True)
    local = [run_dir / "logs" / f"{node}-kafka-{i}.log" for i in range(len(log_paths))]
    fetched = [dest if fetch(node, remote, dest) else None for remote, dest in zip(log_paths, local, strict=True)]
    events = broker_events(fetched, broker_id, timeout_ms, run_id)
    if events is not None:
        write_events(events, run_dir / "events" / f"kafka-{broker_id}.jsonl")


def _drop_torn_tail(path: Path) -> None:
    data = path.read_bytes()
    with open(path, "r+b") as fh:
        fh.truncate(data.rfind(b"\n") + 1)
        os.fsync(fh.fileno())
