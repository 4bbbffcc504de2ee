"""Harness side of the Kafka proxy: ``KafkaProxyClient`` (control API) and ``KafkaProxyProcess``
(``python -m nemesis.kafkaproxy`` + its ready file), the shared ``nemesis.wireproxy.client``."""

from __future__ import annotations

import sys
from pathlib import Path

from nemesis.wireproxy.client import WireProxyClient, WireProxyError, WireProxyProcess


class KafkaProxyError(WireProxyError):
    """The Kafka proxy's control API answered with an error."""

    name = "kafkaproxy"


class KafkaProxyClient(WireProxyClient):
    """Talks to a running Kafka proxy's control API (nemesis/wireproxy/control.py): rules, arm,
    ``held()`` and ``release()`` for ``hold`` rules, connections."""

    error = KafkaProxyError


class KafkaProxyProcess(WireProxyProcess):
    """``python -m nemesis.kafkaproxy`` as a child process (a Component). ``upstreams`` as
    ``WireProxyProcess``'s; ``broker_ids`` the broker behind each, in order."""

    role = "kafkaproxy"
    module = "nemesis.kafkaproxy"
    client_class = KafkaProxyClient

    def __init__(self, upstreams: list[str], events: str | Path, workdir: str | Path, *,
                 broker_ids: list[int] | None = None, rules: str | Path | None = None, seed: int = 0,
                 listen_host: str = "127.0.0.1", run: str = "", max_frame: int | None = None,
                 extra_args: list[str] | None = None, python: str = sys.executable) -> None:
        extra = list(extra_args or [])
        if broker_ids:
            extra += ["--broker-ids", ",".join(str(b) for b in broker_ids)]
        super().__init__(upstreams, events, workdir, rules=rules, seed=seed, listen_host=listen_host, run=run,
                         max_frame=max_frame, extra_args=extra, python=python)
