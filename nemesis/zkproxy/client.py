"""Harness side of the ZooKeeper proxy: ``ZkProxyClient`` (control API) and ``ProxyProcess``
(``python -m nemesis.zkproxy`` + its ready file), the shared ``nemesis.wireproxy.client`` named
for ZooKeeper."""

from __future__ import annotations

from nemesis.wireproxy.client import WireProxyClient, WireProxyError, WireProxyProcess, read_ready_file

__all__ = ["ProxyProcess", "ZkProxyClient", "ZkProxyError", "read_ready_file"]


class ZkProxyError(WireProxyError):
    """The ZooKeeper proxy's control API answered with an error."""

    name = "zkproxy"


class ZkProxyClient(WireProxyClient):
    """Talks to a running ZooKeeper proxy's control API (nemesis/wireproxy/control.py)."""

    error = ZkProxyError


class ProxyProcess(WireProxyProcess):
    """``python -m nemesis.zkproxy`` as a child process (a Component)."""

    role = "zkproxy"
    module = "nemesis.zkproxy"
    client_class = ZkProxyClient
