"""Shared fixtures: the session-wide SparkSession (created once per worker; see checkers.spark), a
terminated test session that still stops what its fixtures started, and the groups in which
``make test``'s two workers (pytest-xdist, ``--dist loadgroup``) take the integration tests."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

# No test asserts timings: hypothesis's per-example deadline (200 ms) is one, and it fails on a
# machine shared by other jobs. Property tests bound their work with max_examples instead.
settings.register_profile("zkfence", deadline=None)
settings.load_profile("zkfence")


# Integration modules that read or change what a whole machine shares: the check server (one per
# project, and `harness check` and `analyze` use it when it runs), `harness teardown` (which stops
# it and sweeps every dead process's scratch dirs), the temp dirs of Spark drivers. They run one
# after another on one worker; every other module runs whole on whichever worker is free.
MACHINE_WIDE = frozenset({
    "test_analyze_command.py", "test_bench_cleanup.py", "test_check_cold.py", "test_check_command.py",
    "test_check_server.py", "test_interrupted_run.py", "test_skeleton_run.py", "test_spark_scratch.py",
    "test_spark_standalone.py", "test_spark_user_settings.py", "test_ssh_faults.py",
})


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns the group marks into the nodeids it schedules by
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        if path.parent.name == "integration":
            # a module whole on one worker: its module-scoped cluster starts once
            group = "machine-wide" if path.name in MACHINE_WIDE else path.name
            item.add_marker(pytest.mark.xdist_group(group))


XDIST_WORKER = b"sys.stdin.readline"  # execnet starts each worker as `python -c ...exec(eval(sys.stdin.readline()))`


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C, for this process and, under xdist, for its workers (a SIGTERM reaches only
    the controller; a worker stopped without an interrupt would tear no fixture down). Only the
    workers: the servers a fixture started are stopped by that fixture's teardown."""
    me = os.getpid()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me \
                    and XDIST_WORKER in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGINT)
        except (OSError, ValueError, IndexError):
            continue  # gone since the listing
    raise KeyboardInterrupt


def pytest_configure(config: pytest.Config) -> None:
    # SIGTERM (`timeout`, a CI job cancelled) would end the process without running a fixture's
    # teardown: the session's ZooKeeper server, the clusters' sshd, Toxiproxy and temp dirs would be
    # left behind. As an interrupt, pytest stops and tears every fixture down, as on Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)


@pytest.fixture(scope="session")
def spark():  # noqa: ANN201 - pyspark is imported lazily so unit tests never pay for it
    from checkers.spark import get_spark

    return get_spark("local[2]")
