"""The one poll-until loop of the control node."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(pred: Callable[[], T], timeout: float, poll: float = 0.1) -> T:
    """Call ``pred`` until it returns something truthy or ``timeout`` seconds pass; returns its
    last value (falsy on timeout). ``pred`` runs at least once, and once more at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(max(0.0, min(poll, deadline - time.monotonic())))
