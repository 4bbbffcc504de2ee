"""Fixtures that start real servers on loopback for integration tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from base.components.zookeeper import Ensemble, ZkMember, ZkSettings, ZooKeeperNode, four_letter
from base.ports import free_port
from base.remote import LocalRemote


@dataclass
class ZkServer:
    host: str
    port: int
    ensemble: Ensemble

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    def four_letter(self, cmd: str) -> str:
        return four_letter(self.host, self.port, cmd)


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZkServer]:
    """A single real ZooKeeper server (Debian package) with fast timings, for the whole session."""
    workdir = tempfile.mkdtemp(prefix="zkfence-zk-")
    host = "127.0.0.1"
    member = ZkMember(
        myid=1, name="zk-standalone", address=host, client_port=free_port(host),
        peer_port=free_port(host), election_port=free_port(host), workdir=workdir,
    )
    settings = ZkSettings(tick_time_ms=200, min_session_timeout_ms=1000, max_session_timeout_ms=10000)
    ensemble = Ensemble([ZooKeeperNode(member, LocalRemote(), settings)])
    try:
        ensemble.start(timeout=60)
        yield ZkServer(host, member.client_port, ensemble)
    finally:
        ensemble.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def warm_engine(tmp_path_factory):
    """One run engine for the whole test session, as a campaign has: its cluster kept warm between
    runs of one shape (a run of another shape starts its own), its Spark session started and warmed
    up once. Tests run on it with ``tests.runs.run_on`` / ``run_test(..., engine=warm_engine)``, each
    into its own store. A test that proves what a cold run leaves behind builds its own engine."""
    from rich.console import Console

    from base.inventory import load_inventory
    from checkers.project import WARM_UP_ENV
    from harness.engine import Engine

    with Engine(load_inventory(), tmp_path_factory.mktemp("warm-store"), Console(quiet=True), keep_warm=True) as e:
        off = os.environ.pop(WARM_UP_ENV, None)
        try:  # this engine warms its session up as a run does (tests/conftest.py turns it off elsewhere)
            e.warm_spark()
        finally:
            if off is not None:
                os.environ[WARM_UP_ENV] = off
        yield e


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A whole local cluster per test module: embedded sshd, 3 ZooKeeper servers, Toxiproxy with
    a proxy per link. Agents are not started: call ``cluster.start_agents(toggles=...)``."""
    import uuid

    from base.inventory import load_inventory
    from harness.cluster import Cluster

    inv = load_inventory()
    with Cluster(inv, tmp_path_factory.mktemp("cluster"), run_id=f"test-{uuid.uuid4().hex[:8]}") as c:
        c.start()
        yield c
