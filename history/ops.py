"""Client operations in a history: which events are a client's invoke and completion, and how an
invoke pairs with its completion.

The run report (timeline scatter, throughput) and the cross-run latency table read operations the
same way, so both use this one definition. Jepsen's rule: a process has one operation in flight,
so an invoke pairs with the next ``ok``/``fail``/``info`` of the same source and process; a second
invoke before a completion means the first never completed (it stays open).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import TypeVar

from history.kinds import HARNESS, KAFKAPROXY, NEMESIS, OBSERVER, ZKPROXY

COMPLETIONS = ("ok", "fail", "info")
# Every source but these and the agents (``agent:<id>``) is a client: a client may write under its own name.
NOT_CLIENTS = (NEMESIS, HARNESS, OBSERVER, ZKPROXY, KAFKAPROXY)

E = TypeVar("E")


def is_client_event(src: str, type_: str) -> bool:
    return type_ in ("invoke", *COMPLETIONS) and not src.startswith("agent:") and src not in NOT_CLIENTS


def pair_operations(events: Iterable[E], process: Callable[[E], Hashable],
                    type_: Callable[[E], str]) -> Iterator[tuple[E, E | None]]:
    """``(invoke, completion)`` for every client operation of ``events`` (client events only, in
    the order each process wrote them); ``completion`` is None for an operation that never
    completed. A completion without its invoke (a torn history) is skipped."""
    open_: dict[Hashable, E] = {}
    for e in events:
        key = process(e)
        if type_(e) == "invoke":
            if key in open_:
                yield open_[key], None
            open_[key] = e
        elif key in open_:
            yield open_.pop(key), e
    yield from ((inv, None) for inv in open_.values())
