"""The controller event thread (K37 ``controller/ControllerEventManager.scala``): one queue, one
thread, events processed one at a time in arrival order.

Registration after a session expiry, elections, broker and topic changes, AlterPartition and
ControlledShutdown all run here. ``hold``/``release`` pause the thread (a test hook: a slow or stuck
controller); events queued meanwhile wait.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from agent import errors

Process = Callable[[str, Any], None]


class ControllerEventManager:
    def __init__(self, stopping: threading.Event, process: Process) -> None:
        self.stopping = stopping
        self._process = process  # (name, payload): runs one event on this thread
        self.queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.held = threading.Event()
        self.busy = threading.Event()

    def put(self, name: str, payload: Any) -> None:
        self.queue.put((name, payload))

    def enqueue(self, name: str, fn: Callable[[], Any]) -> Future:
        """Queue ``fn`` as event ``name``; the future gets its result (or an error reply)."""
        fut: Future = Future()
        self.put(name, (fn, fut))
        return fut

    def call(self, name: str, fn: Callable[[], dict[str, Any]], timeout: float = 10.0) -> dict[str, Any]:
        """Run ``fn`` on the event thread and wait for its reply (a request handled by the controller)."""
        fut = self.enqueue(name, fn)
        try:
            return fut.result(timeout=timeout)
        except TimeoutError:
            return {"error_code": errors.REQUEST_TIMED_OUT, "error": f"{name} not processed in {timeout}s"}

    def qsize(self) -> int:
        return self.queue.qsize()

    def hold(self, timeout: float = 10.0) -> None:
        self.held.set()
        end = time.monotonic() + timeout
        while self.busy.is_set() and time.monotonic() < end:
            time.sleep(0.02)  # an event already running finishes first; nothing starts after

    def release(self) -> None:
        self.held.clear()

    def run(self, tick: Callable[[], None]) -> None:
        """Process events until ``stopping``; ``tick`` runs before each wait (even while held)."""
        while not self.stopping.is_set():
            tick()
            if self.held.is_set():
                time.sleep(0.05)
                continue
            try:
                name, payload = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            while self.held.is_set() and not self.stopping.is_set():
                time.sleep(0.05)  # held after this event was dequeued: it waits too
            if self.stopping.is_set():
                break
            self.busy.set()
            try:
                self._process(name, payload)
            finally:
                self.busy.clear()
