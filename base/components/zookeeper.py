"""ZooKeeper ensemble lifecycle: real servers from Debian's package, configured per node,
started over a Remote, ready when four-letter words show one leader and the rest followers.

Config rendering and 4lw parsing are pure; everything else goes through ``Remote``.
"""

from __future__ import annotations

import shlex
import socket
from dataclasses import dataclass, field

from base.components import ProcState
from base.components.process import RemoteProcess
from base.remote import Remote, RemoteError, on_nodes
from base.wait import wait_until

DEBIAN_CLASSPATH = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


@dataclass(slots=True)
class ZkSettings:
    tick_time_ms: int = 200
    init_limit: int = 25
    sync_limit: int = 10
    min_session_timeout_ms: int = 1000
    max_session_timeout_ms: int = 10000
    java: str = "java"
    heap_mb: int = 256
    classpath: str = DEBIAN_CLASSPATH
    extra: dict[str, str] = field(default_factory=dict)
    # Where the servers' jars come from (harness/provision.py): "preinstalled" (``classpath`` as
    # given), "debian" (the zookeeper package, installed by `harness setup`), "maven" (``version``
    # resolved from Maven Central on the control node and shipped).
    source: str = "preinstalled"
    version: str | None = None


@dataclass(slots=True)
class ZkMember:
    """One server of the ensemble as the config sees it."""

    myid: int
    name: str
    address: str
    client_port: int
    peer_port: int
    election_port: int
    workdir: str

    @property
    def data_dir(self) -> str:
        return f"{self.workdir}/data"

    @property
    def config_path(self) -> str:
        return f"{self.workdir}/zoo.cfg"

    @property
    def pidfile(self) -> str:
        return f"{self.workdir}/zookeeper.pid"

    @property
    def logfile(self) -> str:
        return f"{self.workdir}/zookeeper.log"

    @property
    def client_address(self) -> str:
        return f"{self.address}:{self.client_port}"


def render_config(member: ZkMember, ensemble: list[ZkMember], s: ZkSettings) -> str:
    lines = [
        f"tickTime={s.tick_time_ms}",
        f"initLimit={s.init_limit}",
        f"syncLimit={s.sync_limit}",
        f"dataDir={member.data_dir}",
        f"clientPort={member.client_port}",
        f"clientPortAddress={member.address}",
        f"minSessionTimeout={s.min_session_timeout_ms}",
        f"maxSessionTimeout={s.max_session_timeout_ms}",
        "4lw.commands.whitelist=*",
        "admin.enableServer=false",
        "localSessionsEnabled=false",
        "autopurge.purgeInterval=0",
        # Reconnects after a partition happen within a tick or two with these.
        "cnxTimeout=1000",
    ]
    lines += [f"{k}={v}" for k, v in sorted(s.extra.items())]
    if len(ensemble) > 1:
        # Quorum listeners bind only to their own loopback/VM address, never the wildcard.
        lines.append("quorumListenOnAllIPs=false")
        for m in ensemble:
            lines.append(f"server.{m.myid}={m.address}:{m.peer_port}:{m.election_port}")
    return "\n".join(lines) + "\n"


def start_command(member: ZkMember, s: ZkSettings) -> str:
    return (
        f"{shlex.quote(s.java)} -Xmx{s.heap_mb}m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
        f"-Dzookeeper.admin.enableServer=false -Dorg.slf4j.simpleLogger.showDateTime=true "
        f"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS "
        f"-cp {shlex.quote(s.classpath)} {MAIN_CLASS} {shlex.quote(member.config_path)}"
    )


def four_letter(address: str, port: int, cmd: str, timeout: float = 2.0) -> str:
    """Send a four-letter word to a server and return its whole answer ('' if unreachable)."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as sock:
            sock.sendall(cmd.encode())
            chunks = []
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                chunks.append(data)
            return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return ""


def parse_mode(srvr_output: str) -> str | None:
    """'leader' | 'follower' | 'standalone' | None, from a `srvr` answer."""
    for line in srvr_output.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def parse_dump_sessions(dump_output: str) -> dict[int, list[str]]:
    """Session id → ephemeral paths, from a leader's `dump` answer."""
    sessions: dict[int, list[str]] = {}
    current: int | None = None
    in_ephemerals = False
    for raw in dump_output.splitlines():
        line = raw.strip()
        if line.startswith("Sessions with Ephemerals"):
            in_ephemerals = True
            continue
        if not in_ephemerals or not line:
            continue
        if line.startswith("0x"):
            current = int(line.rstrip(":"), 16)
            sessions.setdefault(current, [])
        elif line.startswith("/") and current is not None:
            sessions[current].append(line)
    return sessions


class ZooKeeperNode(RemoteProcess):
    """One server process on one node, driven through a Remote (a Component)."""

    role = "zookeeper"

    def __init__(self, member: ZkMember, remote: Remote, settings: ZkSettings) -> None:
        super().__init__(member.name, remote, member.workdir, member.pidfile, member.logfile)
        self.member = member
        self.settings = settings

    def configure(self, ensemble: list[ZkMember], wipe: bool = True) -> None:
        m = self.member
        cfg = render_config(m, ensemble, self.settings)
        wipe_cmd = f"rm -rf {shlex.quote(m.data_dir)} && " if wipe else ""
        self.remote.run(
            f"{wipe_cmd}mkdir -p {shlex.quote(m.data_dir)} && "
            f"echo {m.myid} > {shlex.quote(m.data_dir)}/myid && "
            f"printf %s {shlex.quote(cfg)} > {shlex.quote(m.config_path)}",
            check=True,
        )

    def command(self) -> tuple[str, dict[str, str] | None]:
        return start_command(self.member, self.settings), None

    def wipe(self) -> None:
        """Delete the server's snapshots and transaction logs (its myid stays)."""
        self.remote.run(f"rm -rf {shlex.quote(self.member.data_dir)}/version-2", check=False)

    def four_letter(self, cmd: str) -> str:
        return four_letter(self.member.address, self.member.client_port, cmd)

    def mode(self) -> str | None:
        return parse_mode(self.four_letter("srvr"))


class Ensemble:
    def __init__(self, nodes: list[ZooKeeperNode]) -> None:
        self.nodes = nodes

    @property
    def members(self) -> list[ZkMember]:
        return [n.member for n in self.nodes]

    @property
    def connect_string(self) -> str:
        return ",".join(m.client_address for m in self.members)

    def start(self, timeout: float = 60.0) -> None:
        members = self.members
        on_nodes(self.nodes, lambda n: n.configure(members))
        on_nodes(self.nodes, lambda n: n.start())
        self.wait_ready(timeout)

    def modes(self) -> dict[str, str | None]:
        return dict(zip([n.member.name for n in self.nodes], on_nodes(self.nodes, lambda n: n.mode()), strict=True))

    def wait_ready(self, timeout: float = 60.0) -> dict[str, str | None]:
        """Block until one leader and the rest followers (or one standalone server)."""
        seen: dict[str, str | None] = {}

        def ready() -> bool:
            seen.update(self.modes())
            values = list(seen.values())
            return (len(values) == 1 and values[0] == "standalone") or (
                values.count("leader") == 1 and values.count("follower") == len(values) - 1)

        if wait_until(ready, timeout, poll=0.2):
            return seen
        dead = [n for n in self.nodes if n.state() is ProcState.STOPPED]
        hint = "".join(f"; {n.member.name} not running, its log ends: {n.log_tail()}" for n in dead)
        raise RemoteError(f"ZooKeeper ensemble not ready after {timeout:.0f}s: modes {seen}{hint}")

    def leader(self) -> ZooKeeperNode | None:
        for n in self.nodes:
            if n.mode() in ("leader", "standalone"):
                return n
        return None

    def stop(self) -> None:
        on_nodes(self.nodes, lambda n: n.stop())
