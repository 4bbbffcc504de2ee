"""A control node's own processes (the embedded sshd, Toxiproxy, the ZooKeeper and Kafka wire proxies)
are recorded for `harness teardown` the moment they exist, not once they are ready: a control node
killed while one of them starts (a Python proxy takes a second to import) would otherwise leave it
running with nothing recorded to stop it. Each is a real process here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from base.components.process import LocalProcess
from base.components.sshd import EmbeddedSshd
from base.components.toxiproxy import ToxiproxyServer
from base.inventory import ToxiproxySpec
from nemesis.kafkaproxy import KafkaProxyProcess
from nemesis.zkproxy import ProxyProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _components(tmp: Path) -> dict[str, tuple[LocalProcess, Any]]:
    """Each component, and what says it is ready (checked when its pid is recorded)."""
    zk = ProxyProcess(["127.0.0.1:9"], tmp / "zk.jsonl", tmp / "zkproxy")
    kafka = KafkaProxyProcess(["127.0.0.1:9"], tmp / "kafka.jsonl", tmp / "kafkaproxy", broker_ids=[1])
    toxi = ToxiproxyServer(ToxiproxySpec().binary, "127.0.0.1", tmp / "toxiproxy")
    sshd = EmbeddedSshd(tmp / "sshd", ["127.0.0.1"])
    return {"zkproxy": (zk, zk.ready_file.exists), "kafkaproxy": (kafka, kafka.ready_file.exists),
            "toxiproxy": (toxi, lambda: False), "sshd": (sshd, lambda: False)}


@pytest.mark.parametrize("name", ["zkproxy", "kafkaproxy", "toxiproxy", "sshd"])
def test_a_local_process_is_recorded_before_it_is_ready(tmp_path: Path, name: str) -> None:
    component, ready = _components(tmp_path)[name]
    recorded: list[tuple[int, bool]] = []
    component.on_spawn = lambda pid: recorded.append((pid, ready()))
    component.start()
    try:
        assert component.process is not None
        assert recorded == [(component.process.pid, False)]
        os.kill(component.process.pid, 0)  # the recorded pid is the live process teardown would stop
    finally:
        component.stop()
