"""The tests' poll-until helper: ``base.wait.wait_until`` that fails the test on timeout."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from base.wait import wait_until

T = TypeVar("T")


def wait_for(fn: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    value = wait_until(fn, timeout, interval)
    if not value:
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")
    return value
