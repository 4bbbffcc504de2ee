"""Shared fixtures: the session-wide SparkSession (created once per worker; see checkers.spark), a
terminated test session that still stops what its fixtures started, and how ``make test``'s two
workers (pytest-xdist, ``--dist loadgroup``) share the machine: an integration module whole on one
worker, each worker with its own state and temp dirs."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# No test asserts timings: hypothesis's per-example deadline (200 ms) is one, and it fails on a
# machine shared by other jobs. Property tests bound their work with max_examples instead.
settings.register_profile("zkfence", deadline=None)
settings.load_profile("zkfence")


# Under pytest-xdist each worker is a control node of its own: its own state dir (run states, the
# check server's record) and its own temp dir (engine, bench and Spark scratch dirs), both
# inherited by what it starts. So one worker's `harness teardown`, check server or sweep of dead
# processes' dirs never reaches the other's, and the modules need no order between them.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if WORKER:
    _ROOT = Path(__file__).resolve().parents[1]
    os.environ["ZKFENCE_STATE_DIR"] = str(_ROOT / ".local" / f"state-test-{WORKER}")
    _TMP = Path(tempfile.gettempdir()) / f"zkfence-test-{WORKER}-{os.getpid()}"
    _TMP.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(_TMP)
    tempfile.tempdir = None  # tempfile reads $TMPDIR again
# A run's background warm-up check is a head start for one run's check, paid again by every cold
# engine the suite starts (each `harness run` it spawns): the session's warm engine keeps it.
os.environ.setdefault("HARNESS_SPARK_WARM_UP", "off")


# Interrupted (Ctrl-C, or SIGTERM below), pytest-xdist's controller ends its session at once and
# execnet kills the workers about 10 s later, whatever they are doing: a worker still stopping a warm
# engine's cluster or real brokers left its ZooKeeper servers and Toxiproxy running. So each worker
# names itself here until its last hook has run (its fixtures torn down), and an interrupted
# controller waits for them (``WORKER_TEARDOWN_S`` at most) before it lets xdist end them.
TEARING_DOWN = Path(__file__).resolve().parents[1] / ".local" / "pytest-workers"
WORKER_TEARDOWN_S = 180.0


def _worker_marker(controller: int) -> Path:
    return TEARING_DOWN / str(controller) / f"{WORKER}.pid"


def pytest_unconfigure(config: pytest.Config) -> None:
    if WORKER:
        shutil.rmtree(_TMP, ignore_errors=True)
        state = Path(os.environ["ZKFENCE_STATE_DIR"])
        if not any(state.glob("*.json")):  # a run state left is what `harness teardown` needs to stop it
            shutil.rmtree(state, ignore_errors=True)
        _worker_marker(os.getppid()).unlink(missing_ok=True)
    else:
        shutil.rmtree(TEARING_DOWN / str(os.getpid()), ignore_errors=True)
        with contextlib.suppress(OSError):  # another session's workers are still named there
            TEARING_DOWN.rmdir()


@pytest.hookimpl(tryfirst=True)  # before xdist's, which ends the workers
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if WORKER or exitstatus != pytest.ExitCode.INTERRUPTED:
        return
    from base.localstate import owner_alive
    from base.wait import wait_until

    def busy() -> list[str]:  # a marker is "<pid> <start time>": a reused pid is not the worker
        return sorted(m.stem for m in (TEARING_DOWN / str(os.getpid())).glob("*.pid")
                      if owner_alive(*(int(x) for x in m.read_text().split())))

    if not busy():
        return
    print(f"\ninterrupted: waiting for {', '.join(busy())} to tear their fixtures down", file=sys.stderr)
    if not wait_until(lambda: not busy(), WORKER_TEARDOWN_S, poll=0.2):
        print(f"interrupted: workers still tearing down after {WORKER_TEARDOWN_S:.0f} s; `harness teardown` with "
              "their ZKFENCE_STATE_DIR stops what they leave", file=sys.stderr)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns the group marks into the nodeids it schedules by
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        if path.parent.name == "integration":
            # a module whole on one worker: its module-scoped cluster starts once
            item.add_marker(pytest.mark.xdist_group(path.name))
    # The longest first (xdist hands out work in collection order): a slow module that came last
    # would run alone on one worker while the other idles. Stable: the rest keep their order.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


XDIST_WORKER = b"sys.stdin.readline"  # execnet starts each worker as `python -c ...exec(eval(sys.stdin.readline()))`


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C, for this process and, under xdist, for its workers (a SIGTERM reaches only
    the controller; a worker stopped without an interrupt would tear no fixture down). Only the
    workers: the servers a fixture started are stopped by that fixture's teardown. They get a
    SIGTERM too, which this handler turns into the interrupt there: a SIGINT is ignored by every
    process a non-interactive shell started in the background (a CI job's `cmd &`)."""
    me = os.getpid()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me \
                    and XDIST_WORKER in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            continue  # gone since the listing
    raise KeyboardInterrupt


def pytest_configure(config: pytest.Config) -> None:
    # SIGTERM (`timeout`, a CI job cancelled) would end the process without running a fixture's
    # teardown: the session's ZooKeeper server, the clusters' sshd, Toxiproxy and temp dirs would be
    # left behind. As an interrupt, pytest stops and tears every fixture down, as on Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    if WORKER:
        marker = _worker_marker(os.getppid())
        marker.parent.mkdir(parents=True, exist_ok=True)
        from base.localstate import process_start_time

        marker.write_text(f"{os.getpid()} {process_start_time(os.getpid())}")


@pytest.fixture(scope="session")
def spark():  # noqa: ANN201 - pyspark is imported lazily so unit tests never pay for it
    from checkers.spark import get_spark

    # Quick, as `harness check` and a run start it for run-sized input (checkers.spark.QUICK_JVM; a
    # large input's check turns code generation back on): the suite checks hundreds of small
    # histories, and the check modules took 324 CPU-s quick against 368 CPU-s with the batch JVM,
    # which kept its compiler threads busy on every check (bench/RESULTS.md). Before, the worker's
    # session was whichever its first test asked for.
    return get_spark("local[2]", quick=True)
