"""The generators under the concurrency the workloads run them at: ``WorkloadRunner`` calls one
generator from a thread per process slot (12 for the queue workload, 6 for the register workload by
default), and a slot's process is replaced (``process + concurrency``) when its op ends ``info``.

Driven from that many threads at once, with a tiny switch interval so that they interleave inside
``next_op``: every process gets its ops in order with none lost or handed out twice (exactly the
ops a single thread would have got for the same calls), every written value is unique, and the
throttle books each slot's ops as it would alone."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from workloads import queue, register
from workloads.base import SLEEP, Generator, Op

CALLS = 300  # next_op calls per thread
RETIRE_EVERY = 37  # a thread's process is replaced after this many ops (an info completion)

Call = tuple[int, float]  # (process, elapsed)


@contextmanager
def switching_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def drive(gen: Generator, concurrency: int, step: float) -> list[list[tuple[Call, Op | None]]]:
    """Each slot's thread as ``WorkloadRunner._worker`` calls the generator, on a fake clock of its
    own (``step`` seconds per call): its calls and what each returned, per slot."""
    logs: list[list[tuple[Call, Op | None]]] = [[] for _ in range(concurrency)]
    start = threading.Barrier(concurrency)
    errors: list[BaseException] = []

    def worker(slot: int) -> None:
        try:
            process, ops = slot, 0
            start.wait()
            for i in range(CALLS):
                call = (process, i * step)
                op = gen.next_op(*call)
                logs[slot].append((call, op))
                if op is not None and op.f != SLEEP:
                    ops += 1
                    if ops % RETIRE_EVERY == 0:
                        process += concurrency
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(concurrency)]
    with switching_often():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    return logs


def replayed(make: Callable[[], Generator], logs: list[list[tuple[Call, Op | None]]]) -> list[list[Op | None]]:
    """The same calls, slot after slot, on a fresh generator in one thread."""
    gen = make()
    return [[gen.next_op(*call) for call, _ in log] for log in logs]


def check(make: Callable[[], Generator], concurrency: int, step: float, values: Callable[[Op], str | None]) -> None:
    logs = drive(make(), concurrency, step)
    assert [[op for _, op in log] for log in logs] == replayed(make, logs), \
        "each process's ops, and each slot's throttle, are what one thread alone would have got"
    issued = [op for log in logs for _, op in log if op is not None and op.f != SLEEP]
    written = [v for op in issued if (v := values(op)) is not None]
    assert len(written) == len(set(written)), "every written value is handed out once"
    per_process: dict[int, list[int]] = {}
    for v in written:  # "p<p>-<k>": process p's k-th op
        p, k = v[1:].split("-")
        per_process.setdefault(int(p), []).append(int(k))
    for p, ks in per_process.items():
        assert ks == sorted(ks), f"process {p}'s ops in order"


def queue_value(op: Op) -> str | None:
    return op.value["value"] if op.f == "send" else None


def register_value(op: Op) -> str | None:
    return op.value.get("value") if op.f in ("reg_write", "reg_cas") else None


@pytest.mark.parametrize("rate", [None, 600.0])
def test_queue_generator_from_its_default_twelve_threads(rate: float | None) -> None:
    n = queue.DEFAULT_CONCURRENCY
    assert n == 12
    check(lambda: queue.QueueGenerator(concurrency=n, rate=rate), n, 0.001, queue_value)


@pytest.mark.parametrize("concurrency", [register.DEFAULT_CONCURRENCY, 12])
@pytest.mark.parametrize("rate", [None, 300.0])
def test_register_generator_from_as_many_threads_as_processes(concurrency: int, rate: float | None) -> None:
    check(lambda: register.RegisterGenerator(concurrency=concurrency, rate=rate), concurrency, 0.001,
          register_value)


def test_the_throttle_really_sleeps_in_these_runs() -> None:
    logs = drive(queue.QueueGenerator(concurrency=12, rate=600.0), 12, 0.001)
    kinds = {op.f for log in logs for _, op in log if op is not None}
    assert kinds == {SLEEP, "send", "poll"}
