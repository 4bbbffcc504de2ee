"""The history: the one event record every source writes (agents, clients, nemesis, observer,
the ZooKeeper wire proxy), and the merge of per-source files into ``history.jsonl``.

This package is shipped to broker nodes with the agent (it imports nothing from the control
node), so agents and the control node write the same line format with the same code.
"""

from history.events import (
    OP_TYPES,
    Event,
    EventWriter,
    HistoryFormatError,
    merge,
    read_events,
    write_history,
)

__all__ = ["OP_TYPES", "Event", "EventWriter", "HistoryFormatError", "merge", "read_events", "write_history"]
