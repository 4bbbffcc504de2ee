"""Run-time port allocation on loopback (or a node's own address): never assume a port is free."""

from __future__ import annotations

import socket

_handed_out: set[tuple[str, int]] = set()


def free_port(address: str = "127.0.0.1") -> int:
    """A port that is free on ``address`` now and was not handed out earlier by this process."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((address, 0))
            port = s.getsockname()[1]
        if (address, port) not in _handed_out:
            _handed_out.add((address, port))
            return port
    raise RuntimeError(f"no free port on {address}")


def free_port_on_all(addresses: list[str]) -> int:
    """One port number free on every address (sshd listens on each node address with one port)."""
    for _ in range(200):
        port = free_port(addresses[0])
        ok = True
        for addr in addresses[1:]:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((addr, port))
                except OSError:
                    ok = False
                    break
        if ok:
            for addr in addresses[1:]:
                _handed_out.add((addr, port))
            return port
    raise RuntimeError(f"no port free on all of {addresses}")
