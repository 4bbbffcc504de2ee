"""The history: the one event record every source writes (agents, clients, nemesis, observer,
the ZooKeeper wire proxy), and the merge of per-source files into ``history.jsonl``.

This package is shipped to broker nodes with the agent (it imports nothing from the control
node), so agents and the control node write the same line format with the same code.
``history.kinds`` is the event contract: every kind and value field, declared once.
"""

from history.events import OP_TYPES, Event, EventWriter, merge, read_events, write_history
from history.kinds import Need
from history.validate import (
    HistoryFormatError,
    Lacking,
    Scan,
    has_torn_tail,
    parse_record,
    read_records,
    scan_file,
    scan_lines,
)

__all__ = [
    "OP_TYPES", "Event", "EventWriter", "HistoryFormatError", "Lacking", "Need", "has_torn_tail", "merge", "parse_record", "read_events",
    "read_records", "Scan", "scan_file", "scan_lines", "write_history",
]
