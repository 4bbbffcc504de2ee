"""Harness side of the Kafka proxy: ``KafkaProxyClient`` (control API) and ``KafkaProxyProcess``
(``python -m nemesis.kafkaproxy`` + its ready file), the shared ``nemesis.wireproxy.client``."""

from __future__ import annotations

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
                 broker_ids: list[int] | None = None, **kw: object) -> None:
        extra = list(kw.pop("extra_args", None) or [])  # type: ignore[call-overload]
        if broker_ids:
            extra += ["--broker-ids", ",".join(str(b) for b in broker_ids)]
        super().__init__(upstreams, events, workdir, extra_args=extra, **kw)  # type: ignore[arg-type]
