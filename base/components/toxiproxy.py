"""Toxiproxy: the real server on the control node, and the link graph of proxies through which
every agent→ZooKeeper and agent→agent connection goes. Driven with toxiproxy-python.

A link is one directed connection path (``b1->zk2``, ``b1->b3``) with its own proxy, so a fault
can cut exactly the links a grudge names. ``heal()`` enables every proxy and removes every toxic.
"""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer

from base.components.process import LocalProcess
from base.ports import free_port
from base.wait import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(slots=True)
class Link:
    name: str
    kind: str  # "agent-zk" | "agent-agent" | "client-zk" | "client-broker" | "zk-zk"
    src: str  # node name on the dialling side
    dst: str  # node name on the listening side
    upstream: str  # host:port the proxy forwards to
    listen: str = ""  # host:port the proxy listens on (filled in by create)

    @property
    def listen_host(self) -> str:
        return self.listen.rsplit(":", 1)[0]

    @property
    def listen_port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])


class ToxiproxyServer(LocalProcess):
    """The Toxiproxy server, a child of the control node (a Component)."""

    role = "toxiproxy"

    def __init__(self, binary: str, host: str, workdir: Path) -> None:
        super().__init__("toxiproxy", workdir / "toxiproxy.log")
        path = Path(binary)
        self.binary = path if path.is_absolute() else REPO_ROOT / path
        self.host = host
        self.workdir = workdir
        self.port = 0

    def start(self, timeout: float = 15.0) -> None:
        if not self.binary.exists():
            raise RuntimeError(f"Toxiproxy server not found at {self.binary}: run `make install`")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port(self.host)
        # An empty proxy config under the run's scratch dir: it also marks the process as this run's.
        config = self.workdir / "proxies.json"
        config.write_text("[]")
        with open(self.logfile, "ab") as log:
            process = self._spawn(
                [str(self.binary), "-host", self.host, "-port", str(self.port), "-config", str(config)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )

        def answering() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"toxiproxy-server exited: {self.logfile.read_text()[-400:]}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return True
            except OSError:
                return False

        if not wait_until(answering, timeout, poll=0.05):
            raise RuntimeError(f"toxiproxy-server not answering on {self.host}:{self.port}")


class LinkNet:
    """The proxies of one run. toxiproxy-python keeps its API address as class state, so one
    LinkNet per process talks to one server at a time."""

    def __init__(self, server: ToxiproxyServer) -> None:
        self.server = server
        self.toxi = Toxiproxy()
        self.toxi.update_api_consumer(server.host, server.port)
        self.links: dict[str, Link] = {}

    def _api(self) -> None:
        # Another LinkNet in this process may have repointed the shared API consumer.
        APIConsumer.host, APIConsumer.port = self.server.host, self.server.port

    def create(self, link: Link) -> Link:
        """A proxy for ``link``; one of the same name (a broker restarted on new ports) is replaced."""
        self._api()
        if link.name in self.links:
            self.toxi.get_proxy(link.name).destroy()
            del self.links[link.name]
        proxy = self.toxi.create(upstream=link.upstream, name=link.name, listen=f"{self.server.host}:0")
        link.listen = proxy.listen
        if link.listen.endswith(":0"):  # older servers echo the request; ask again
            link.listen = self.toxi.get_proxy(link.name).listen
        self.links[link.name] = link
        return link

    def _proxy(self, name: str) -> Any:
        self._api()
        return self.toxi.get_proxy(name)

    def toxics(self, name: str) -> list[str]:
        """The toxics on one link ([] for a link Toxiproxy does not know)."""
        proxy = self._proxy(name)
        return list(proxy.toxics()) if proxy is not None else []

    def add_toxic(self, name: str, toxic: str, type: str, stream: str, attributes: dict[str, Any]) -> bool:
        """Add a toxic unless one of that name is there; True when added."""
        proxy = self._proxy(name)
        if proxy is None:
            raise KeyError(name)
        if toxic in proxy.toxics():
            return False
        proxy.add_toxic(name=toxic, type=type, stream=stream, attributes=attributes, toxicity=1.0)
        return True

    def remove_toxics(self, prefix: str, names: list[str] | None = None) -> int:
        """Remove the toxics whose name starts with ``prefix`` from ``names`` (every link when None)."""
        removed = 0
        for name in names if names is not None else list(self.links):
            proxy = self._proxy(name)
            for toxic in list(proxy.toxics()) if proxy is not None else []:
                if toxic.startswith(prefix):
                    proxy.destroy_toxic(toxic)
                    removed += 1
        return removed

    def cut(self, names: list[str], stream: str = "both", prefix: str = "cut") -> None:
        """Black-hole the named links: data is dropped, connections stay open (a partition, not
        a reset). ``stream``: upstream (dialer→listener), downstream, or both."""
        for name in names:
            for st in ("upstream", "downstream") if stream == "both" else (stream,):
                self.add_toxic(name, f"{prefix}_{st}", "timeout", st, {"timeout": 0})

    def set_enabled(self, names: list[str], enabled: bool) -> None:
        for name in names:
            proxy = self._proxy(name)
            if proxy is not None:
                proxy.enable() if enabled else proxy.disable()

    def heal(self) -> int:
        """Enable every proxy and remove every toxic. Returns how many toxics were removed."""
        self._api()
        removed = sum(len(p.toxics()) for p in self.toxi.proxies().values())
        self.toxi.reset()
        return removed

    def toxic_count(self) -> int:
        self._api()
        return sum(len(p.toxics()) for p in self.toxi.proxies().values())

    def links_between(self, src: str | None = None, dst: str | None = None, kind: str | None = None) -> list[str]:
        return [
            ln.name for ln in self.links.values()
            if (src is None or ln.src == src) and (dst is None or ln.dst == dst) and (kind is None or ln.kind == kind)
        ]

    def destroy_all(self) -> None:
        self._api()
        self.toxi.destroy_all()
        self.links.clear()
