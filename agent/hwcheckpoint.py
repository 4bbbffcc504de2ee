"""The broker's high-watermark checkpoint: ONE file per log directory,
``<data_dir>/logs/replication-offset-checkpoint``, holding the high watermark of every partition
the broker currently holds, as Kafka 2.x keeps it (``ReplicaManager.checkpointHighWatermarks``,
``kafka.server.checkpoints.OffsetCheckpointFile``).

Where it follows Kafka:

* the format: a version line ``0``, a count line, then one ``<topic> <partition> <offset>`` line
  per partition, written to a temporary file and moved over the old one;
* the file is rewritten from the partitions the broker holds **in memory** (``allPartitions``),
  never merged with what the file held before: a freshly restarted broker that has been sent a
  LeaderAndIsr for only some of its partitions writes a file without the others (KIP-380: "the
  broker will overwrite the high watermark checkpoint file and may cause incorrect truncation");
* a broker that holds no partition writes nothing (Kafka groups the replicas by log directory and
  writes only the directories that have some);
* a partition's high watermark is read from the file when the broker (re)creates the partition;
  a partition absent from the file starts at high watermark 0 (``Partition.getOrCreateReplica``:
  ``offsetMap.getOrElse(topicPartition, 0L)``), capped at the log end offset.

Where it differs: Kafka rewrites the file every ``replica.high.watermark.checkpoint.interval.ms``
(5 s by default; the first run right after the first LeaderAndIsr) and at shutdown. The agent
rewrites it at each of those moments' stand-ins: after every applied LeaderAndIsr or deleting
StopReplica, whenever a held partition's high watermark changes, and at stop. So its file is never
older than Kafka's would be, which only narrows the window in which a crash loses a high watermark.
A malformed file reads as empty here (every high watermark 0); Kafka takes the log directory
offline instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

TP = tuple[str, int]
CHECKPOINT_FILE = "replication-offset-checkpoint"
VERSION = 0


def format_checkpoint(hws: Mapping[TP, int]) -> str:
    """Kafka's OffsetCheckpointFile text for ``hws``, partitions in sorted order."""
    lines = [str(VERSION), str(len(hws))]
    lines += [f"{topic} {part} {int(hw)}" for (topic, part), hw in sorted(hws.items())]
    return "\n".join(lines) + "\n"


def parse_checkpoint(text: str) -> dict[TP, int]:
    """The partitions and high watermarks in a checkpoint file's text; ValueError naming the line
    when it is not one (wrong version, count or entry)."""
    lines = text.splitlines()
    if len(lines) < 2:
        raise ValueError("line 1: expected a version line and a count line")
    if lines[0].strip() != str(VERSION):
        raise ValueError(f"line 1: unsupported checkpoint version {lines[0].strip()!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise ValueError(f"line 2: count {lines[1]!r} is not an integer") from None
    entries = lines[2:]
    if len(entries) != count:
        raise ValueError(f"line 2: count {count} but {len(entries)} entries")
    out: dict[TP, int] = {}
    for n, line in enumerate(entries, start=3):
        parts = line.split()
        if len(parts) != 3:
            raise ValueError(f"line {n}: expected '<topic> <partition> <offset>', got {line!r}")
        try:
            out[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            raise ValueError(f"line {n}: partition and offset must be integers: {line!r}") from None
    return out


def dropped_partitions(before: Mapping[TP, int], after: Mapping[TP, int]) -> list[TP]:
    """Partitions the previous file held that a rewrite leaves out: their high watermark now reads
    back as 0."""
    return sorted(tp for tp in before if tp not in after)


class HighWatermarkCheckpoint:
    """The checkpoint file of one log directory."""

    def __init__(self, log_dir: str | os.PathLike[str]) -> None:
        self.path = Path(log_dir) / CHECKPOINT_FILE
        self._lock = threading.Lock()

    def read(self) -> dict[TP, int]:
        with self._lock:
            try:
                text = self.path.read_text(encoding="utf-8")
            except FileNotFoundError:
                return {}
        try:
            return parse_checkpoint(text)
        except ValueError:
            return {}  # Kafka would take the log directory offline; see the module docstring

    def write(self, hws: Mapping[TP, int]) -> None:
        """Replace the file with exactly ``hws`` (nothing when ``hws`` is empty)."""
        if not hws:
            return
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(CHECKPOINT_FILE + ".tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                # no fsync (Kafka syncs): the agent's logs are not synced either, and a kill
                # loses nothing the page cache holds
                fh.write(format_checkpoint(hws))
            os.replace(tmp, self.path)
