"""The workload protocol (Jepsen's client and generator), and the runner that records every
operation in the history.

* ``Op``: one client operation. The history gets an ``invoke`` event, then one completion:
  ``ok`` (it happened), ``fail`` (it certainly did not) or ``info`` (unknown: a timeout, a lost
  reply). Its fields go in the event's ``value``.
* ``Client``: ``open(ctx, process)`` binds a client to a logical process, ``invoke(op)`` performs
  one op and returns its completion, ``close()``. A client never writes events: the runner does.
* ``Generator``: ``next_op(process, elapsed)``: the next op for a process at a time since the start,
  or ``None`` when that process is done. It is called from every client thread at once (the runner
  runs one thread per process slot), so it is not pure: it owns its state (the ops it has handed
  each process, its throttle's bookings) and guards it with its own lock; ``OpCounter`` is that
  state for the shipped generators. A process's ops come in order and each is handed out once.
  No I/O, no clock: the runner passes the time in, so generators test on plain data. A ``sleep``
  op {s} throttles: the runner waits that long and records nothing.
* ``Workload``: a name, a client, a generator, how many processes run it, the checkers that
  read its operations, and ``setup``/``final`` ops run by one client (process ``"setup"`` before
  the processes start, ``"final"`` after the engine's recovery phase); ``kafka_client``, when the
  workload also runs on real Kafka brokers, does the same ops through a Kafka client.

A process whose op ends ``info`` may still have that op in flight, so it never issues another:
the runner retires it and continues with a new process number (``process + concurrency``), as
Jepsen does.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

OK, FAIL, INFO = "ok", "fail", "info"
SLEEP = "sleep"  # a generator's "nothing yet": the runner waits value["s"] seconds, records nothing


@dataclass(slots=True)
class Op:
    f: str
    value: dict[str, Any] = field(default_factory=dict)
    process: int | str | None = None
    type: str = "invoke"  # invoke | ok | fail | info

    def complete(self, type: str, **fields: Any) -> Op:
        """This op's completion, with ``fields`` added to its value (an offset, an error)."""
        if type not in (OK, FAIL, INFO):
            raise ValueError(f"a completion is ok, fail or info, not {type!r}")
        return replace(self, type=type, value={**self.value, **fields})


class Client(Protocol):
    def open(self, ctx: Any, process: int | str) -> Client: ...

    def invoke(self, op: Op) -> Op: ...

    def close(self) -> None: ...


class Generator(Protocol):
    """Called concurrently by the runner's client threads: thread-safe, its state behind its own lock."""

    def next_op(self, process: int, elapsed: float) -> Op | None: ...


@dataclass(frozen=True)
class Workload:
    name: str
    client: Client | None = None  # None: the workload issues no operation
    generator: Generator | None = None
    concurrency: int = 0
    checkers: tuple[str, ...] = ()  # checker names that read this workload's operations
    setup: tuple[Op, ...] = ()  # run in order by one client before the processes start (e.g. create a topic)
    final: tuple[Op, ...] = ()  # run in order after the recovery phase (e.g. a final read of every partition)
    # the client that does the same ops on real Kafka brokers (`--brokers kafka:VERSION`); None: the
    # workload runs only on the agents
    kafka_client: Client | None = None


NONE = Workload("none")


@dataclass
class Throttle:
    """A generator's rate limit: ``rate`` ops/s across ``concurrency`` slots spaces a slot's ops
    ``concurrency / rate`` seconds apart, slots staggered over one period. ``due`` returns the
    ``sleep`` op to hand out until the slot's next op is due, else None (and books that op). It
    keeps a booking per slot and takes no lock: its owner calls it under its own (``OpCounter``)."""

    concurrency: int
    rate: float | None = None  # None: unthrottled
    _due: dict[int, float] = field(default_factory=dict)  # per slot (process % concurrency): next op due

    def due(self, process: int, elapsed: float) -> Op | None:
        if self.rate is None:
            return None
        slot, period = process % self.concurrency, self.concurrency / self.rate
        due = self._due.get(slot, slot / self.rate)
        if elapsed < due:
            return Op(SLEEP, {"s": due - elapsed})
        self._due[slot] = max(due, elapsed - period) + period
        return None


class OpCounter:
    """A generator's state, shared by the client threads behind one lock: how many ops each process
    has been handed, and the throttle. ``take`` books the process's next op and returns its number
    ``k`` (0, 1, ... per process, each once, in call order), or the throttle's ``sleep`` op (nothing
    booked). The shipped generators make process ``p``'s ``k``-th op a function of (p, k) alone."""

    def __init__(self, concurrency: int, rate: float | None = None) -> None:
        self._lock = threading.Lock()
        self._issued: dict[int, int] = {}
        self._throttle = Throttle(concurrency, rate)

    def take(self, process: int, elapsed: float) -> int | Op:
        with self._lock:
            if (sleep := self._throttle.due(process, elapsed)) is not None:
                return sleep
            k = self._issued.get(process, 0)
            self._issued[process] = k + 1
            return k


class OpRecorder:
    """Writes an op's invoke and completion events. A client that raises is an ``info``: its op
    may or may not have happened."""

    def __init__(self, events: Any) -> None:
        self.events = events

    def invoke(self, client: Client, op: Op) -> Op:
        op = replace(op, type="invoke")
        self.events.emit(op.f, type="invoke", process=op.process, **op.value)
        try:
            done = client.invoke(op)
        except Exception as e:  # noqa: BLE001 - an unexpected client error leaves the outcome unknown
            done = op.complete(INFO, error=f"{type(e).__name__}: {e}")
        self.events.emit(done.f, type=done.type, process=done.process, **done.value)
        return done


class WorkloadRunner:
    """Drives a workload's generator through its clients, one thread per process, until the time
    limit or until every process is done. ``counts`` holds ok/fail/info totals for the live line."""

    def __init__(self, workload: Workload, ctx: Any, events: Any) -> None:
        self.workload = workload
        self.ctx = ctx
        self.recorder = OpRecorder(events)
        self.counts = {OK: 0, FAIL: 0, INFO: 0}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []

    def start(self, time_limit: float) -> None:
        w = self.workload
        if w.client is None or w.generator is None or w.concurrency <= 0:
            return
        self.run_ops(w.setup, "setup")
        t0 = time.monotonic()
        for slot in range(w.concurrency):
            t = threading.Thread(target=self._worker, args=(slot, t0, time_limit), name=f"client-{slot}",
                                 daemon=True)
            t.start()
            self._threads.append(t)

    def _worker(self, process: int, t0: float, time_limit: float) -> None:
        w = self.workload
        assert w.client is not None and w.generator is not None
        client: Client | None = None
        try:
            while not self._stop.is_set() and (elapsed := time.monotonic() - t0) < time_limit:
                op = w.generator.next_op(process, elapsed)
                if op is None:
                    return
                if op.f == SLEEP:  # the generator's throttle: wait, record nothing
                    self._stop.wait(min(float(op.value.get("s", 0.0)), max(0.0, time_limit - elapsed)))
                    continue
                if client is None:
                    client = w.client.open(self.ctx, process)
                done = self.recorder.invoke(client, replace(op, process=process))
                with self._lock:
                    self.counts[done.type] += 1
                if done.type == INFO:  # the op may still be in flight: this process is retired
                    client.close()
                    client = None
                    process += w.concurrency
        except Exception as e:  # noqa: BLE001 - reported with the run; the other processes go on
            self.errors.append(f"process {process}: {type(e).__name__}: {e}")
        finally:
            if client is not None:
                client.close()

    def run_ops(self, ops: tuple[Op, ...], process: str) -> list[Op]:
        """Ops outside the processes (``setup``, ``final``), in order, by one client, each recorded."""
        w = self.workload
        if not ops or w.client is None:
            return []
        client = w.client.open(self.ctx, process)
        done: list[Op] = []
        try:
            for op in ops:
                d = self.recorder.invoke(client, replace(op, process=process))
                with self._lock:
                    self.counts[d.type] += 1
                done.append(d)
        finally:
            client.close()
        return done

    def final(self) -> list[Op]:
        """The workload's final ops (after the last heal and the recovery wait)."""
        return self.run_ops(self.workload.final, "final")

    def join(self, timeout: float = 30.0) -> None:
        """Wait for every process to finish (its generator done or the time limit reached)."""
        for t in self._threads:
            t.join(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """No new op after this; ops in flight complete."""
        self._stop.set()
        self.join(timeout)

    def summary(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)
