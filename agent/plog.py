"""A partition's replica log: one JSON line per record in ``<data_dir>/logs/<topic>-<p>/log.jsonl``,
so wiping the data dir loses the data for real (KAFKA-14139). The high watermark lives in memory;
its durable copy is the broker's one checkpoint file per log directory (``agent.hwcheckpoint``),
which the owner passes in as ``hw`` on open and rewrites through ``on_hw`` when it changes."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


class PartitionLog:
    def __init__(self, data_dir: str | os.PathLike[str], topic: str, partition: int, hw: int = 0,
                 on_hw: Callable[[], None] | None = None) -> None:
        self.dir = Path(data_dir) / "logs" / f"{topic}-{partition}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "log.jsonl"
        self._lock = threading.RLock()
        self.records: list[dict[str, Any]] = []
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    self.records.append(json.loads(line))
                except json.JSONDecodeError:
                    break  # torn tail after a crash
            # Rewrite without a torn tail so later appends stay line-aligned.
            self._rewrite()
        # Kafka caps the checkpointed high watermark at the log end offset (Partition.getOrCreateReplica)
        self.hw = max(0, min(int(hw), len(self.records)))
        self._on_hw = on_hw
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    @property
    def leo(self) -> int:
        """Log end offset: the next offset to be written."""
        return len(self.records)

    def append(self, value: Any, leader_epoch: int) -> int:
        with self._lock:
            offset = len(self.records)
            rec = {"offset": offset, "value": value, "leader_epoch": leader_epoch}
            self.records.append(rec)
            self._fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            self._fh.flush()
            return offset

    def append_records(self, records: list[dict[str, Any]]) -> None:
        """Follower side: records fetched from the leader, which must start at our LEO."""
        with self._lock:
            for rec in records:
                if int(rec["offset"]) != len(self.records):
                    raise ValueError(f"fetched offset {rec['offset']} != log end {len(self.records)}")
                self.records.append(rec)
                self._fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
            self._fh.flush()

    def read(self, start: int, max_records: int = 500) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.records[start : start + max_records])

    def truncate(self, offset: int) -> int:
        """Drop everything at or above ``offset``; returns how many records were dropped."""
        with self._lock:
            if offset >= len(self.records):
                return 0
            dropped = len(self.records) - offset
            del self.records[offset:]
            self._fh.close()
            self._rewrite()
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            self.set_hw(min(self.hw, offset))
            return dropped

    def set_hw(self, hw: int) -> None:
        with self._lock:
            hw = min(hw, len(self.records))
            changed, self.hw = hw != self.hw, hw
        if changed and self._on_hw is not None:
            self._on_hw()  # the owner rewrites its checkpoint file

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for rec in self.records:
                fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
        os.replace(tmp, self.path)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "offsets": [r["offset"] for r in self.records],
                "values": [r["value"] for r in self.records],
                "hw": self.hw,
                "leo": len(self.records),
            }

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()
