"""Shared fixtures: the session-wide SparkSession (created once; see checkers.spark), and a
terminated test session that still stops what its fixtures started."""

from __future__ import annotations

import signal

import pytest
from hypothesis import settings

# No test asserts timings: hypothesis's per-example deadline (200 ms) is one, and it fails on a
# machine shared by other jobs. Property tests bound their work with max_examples instead.
settings.register_profile("zkfence", deadline=None)
settings.load_profile("zkfence")


def pytest_configure(config: pytest.Config) -> None:
    # SIGTERM (`timeout`, a CI job cancelled) would end the process without running a fixture's
    # teardown: the session's ZooKeeper server, the clusters' sshd, Toxiproxy and temp dirs would be
    # left behind. As an interrupt, pytest stops and tears every fixture down, as on Ctrl-C.
    signal.signal(signal.SIGTERM, signal.default_int_handler)


@pytest.fixture(scope="session")
def spark():  # noqa: ANN201 - pyspark is imported lazily so unit tests never pay for it
    from checkers.spark import get_spark

    return get_spark("local[2]")
