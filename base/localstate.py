"""What the control node records about the processes it started, and where: ``.local/state``, or
``$ZKFENCE_STATE_DIR`` (the run states `harness teardown` reads, the check server's record) and how a recorded pid is
told from a reused one. Kept apart from ``harness.cluster`` so that light commands (`harness
check`) can use it without importing the cluster's SSH and ZooKeeper clients."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

STATE_ENV = "ZKFENCE_STATE_DIR"  # another place for it: a control node of its own (a test worker's)
STATE_DIR = Path(os.environ.get(STATE_ENV) or Path(__file__).resolve().parent.parent / ".local" / "state")
# A bench's scratch directory (its ZooKeeper's data, its generated store): named after the bench's
# process, so that `harness teardown` finds it, and what runs in it, once that process was killed.
BENCH_PREFIX = "zkfence-bench-scratch-"
# The run engine's scratch directory (each cluster's nodes, pid files and agents' events live under
# it): `harness teardown` removes one whose process is gone once its run states are salvaged.
ENGINE_PREFIX = "zkfence-engine-"
# Short-lived scratch directories named the same way (``owned_tempdir``): a build of the JVM
# functions' classes (a javac may still run in it), harness doctor's, a Kafka broker's log copies.
JAVAC_PREFIX = "zkfence-javac-"
DOCTOR_PREFIX = "zkfence-doctor-"
KAFKA_LOGS_PREFIX = "zkfence-kafka-logs-"


@contextlib.contextmanager
def taking_turns(lock: Path) -> Iterator[None]:
    """The block run by one process at a time, among those that name ``lock`` (created, with its
    directory, if missing): an exclusive ``flock``, released when the file closes, also if the
    process dies holding it."""
    import fcntl

    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def process_start_time(pid: int) -> int | None:
    """Kernel start time of ``pid`` (clock ticks since boot): tells a live owner from a reused pid.
    None when there is no such process or it has exited (a zombie not yet reaped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else int(fields[19])


def owner_alive(pid: int | None, start: int | None) -> bool:
    return pid is not None and start is not None and process_start_time(pid) == start


def owner_prefix(prefix: str) -> str:
    """``prefix`` + ``<pid>-<start>-``: a temporary directory named after this process, so that
    ``orphaned`` can tell it from a live process's once this one was killed before removing it."""
    pid = os.getpid()
    return f"{prefix}{pid}-{process_start_time(pid)}-"


def orphaned(tmp: Path, prefix: str) -> list[Path]:
    """The directories under ``tmp`` named ``owner_prefix(prefix)…`` whose process is gone (or that
    name no owner); a live owner's are left alone."""
    out = []
    for d in sorted(tmp.glob(f"{prefix}*")):
        pid, start, _ = (d.name.removeprefix(prefix) + "--").split("-", 2)
        alive = pid.isdigit() and start.isdigit() and owner_alive(int(pid), int(start))
        if d.is_dir() and not alive:
            out.append(d)
    return out


def owned_tempdir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary directory named after this process (``owner_prefix``), removed when the block
    ends, and by `harness teardown` once this process was killed outright."""
    return tempfile.TemporaryDirectory(prefix=owner_prefix(prefix))


def bench_scratch() -> Path:
    """A new scratch directory for a bench (``BENCH_PREFIX``, named after this process)."""
    return Path(tempfile.mkdtemp(prefix=owner_prefix(BENCH_PREFIX)))


def processes_mentioning(marker: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live process whose command line contains ``marker`` (a scratch
    directory: what was started in it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if marker in cmdline and ") Z" not in stat:
            found.append((int(proc.name), cmdline.strip()))
    return found
