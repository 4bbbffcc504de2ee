"""Inventory: which nodes exist, how to reach them, and what runs where (TOML).

Validation is strict and every error is one line: ``file:line: …`` for bad TOML, ``file:line:
key.path: …`` for a bad value (the line that sets it, or its table's). ``inventory/local.toml`` (the default) is the embedded cluster: every node a
loopback address on this machine, reached through the harness's own sshd.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.config import ConfigError, Toggles
from base.bounds import MAX_INT32, MAX_MS, MAX_NODES, number_error, shown
from base.components.zookeeper import DEBIAN_CLASSPATH, ZkSettings
from base.errors import UsageError
from base.tomlfile import key_line, read_toml

ZK_SOURCES = ("preinstalled", "debian", "maven")
MAX_HEAP_MB = 1 << 20  # a terabyte

ROLES = ("zookeeper", "broker")
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INVENTORY = REPO_ROOT / "inventory" / "local.toml"


class InventoryError(UsageError):
    pass


@dataclass(slots=True)
class SshSpec:
    mode: str = "embedded"  # embedded: the harness starts its own sshd; external: nodes run sshd
    user: str = ""
    key: str | None = None
    port: int = 22
    host_keys: str = "verify"  # or "trust_on_first_use": record new keys beside the inventory, and say so
    known_hosts: str | None = None  # default ~/.ssh/known_hosts; <inventory>.known_hosts is read too


@dataclass(slots=True)
class NodeSpec:
    name: str
    address: str
    roles: tuple[str, ...]
    broker_id: int | None = None
    ssh_host: str | None = None
    ssh_port: int | None = None
    user: str | None = None
    key: str | None = None
    workdir: str | None = None
    install_dir: str | None = None  # what `harness setup` installs; default <inventory install_dir>


@dataclass(slots=True)
class AgentSpec:
    session_timeout_ms: int = 3000
    python: str = "python3"
    toggles: Toggles = field(default_factory=Toggles)


@dataclass(slots=True)
class ToxiproxySpec:
    binary: str = ".local/bin/toxiproxy-server"
    host: str = "127.0.0.1"  # where the server and its proxies listen (the control node)


@dataclass(slots=True)
class Inventory:
    name: str
    path: Path
    ssh: SshSpec
    zookeeper: ZkSettings
    agents: AgentSpec
    toxiproxy: ToxiproxySpec
    nodes: list[NodeSpec]
    workdir_base: str = "/tmp/zkfence"
    install_dir: str = ""  # default <workdir_base>/opt

    def node_install_dir(self, node: NodeSpec) -> str:
        """Where `harness setup` puts ZooKeeper's jars and the agents' Python dependencies on ``node``
        (kept across runs, unlike its run workdir)."""
        return node.install_dir or self.install_dir or f"{self.workdir_base}/opt"

    @property
    def trusted_keys_file(self) -> Path:
        """Where host keys trusted on first use are recorded: beside the inventory."""
        return self.path.with_suffix(".known_hosts")

    @property
    def embedded(self) -> bool:
        return self.ssh.mode == "embedded"

    def with_role(self, role: str) -> list[NodeSpec]:
        return [n for n in self.nodes if role in n.roles]

    @property
    def zookeepers(self) -> list[NodeSpec]:
        return self.with_role("zookeeper")

    @property
    def brokers(self) -> list[NodeSpec]:
        return sorted(self.with_role("broker"), key=lambda n: n.broker_id or 0)

    def node(self, name: str) -> NodeSpec:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def broker(self, broker_id: int) -> NodeSpec:
        for n in self.brokers:
            if n.broker_id == broker_id:
                return n
        raise KeyError(broker_id)


class _Reader:
    """Typed access to a TOML table that reports the full key path on error."""

    def __init__(self, path: Path, table: dict[str, Any], prefix: str) -> None:
        self.path, self.table, self.prefix = path, table, prefix
        self.used: set[str] = set()

    def err(self, key: str, msg: str) -> InventoryError:
        where = f"{self.prefix}.{key}" if self.prefix else key
        return InventoryError(f"{self.path}: {where}: {msg}")

    def get(self, key: str, typ: type | tuple[type, ...], default: Any = ..., check=None) -> Any:
        self.used.add(key)
        if key not in self.table:
            if default is ...:
                raise self.err(key, "required")
            return default
        value = self.table[key]
        if typ is int and isinstance(value, bool) or not isinstance(value, typ):
            names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
            raise self.err(key, f"expected {names}, got {type(value).__name__} {shown(value)}")
        if check is not None:
            problem = check(value)
            if problem:
                raise self.err(key, problem)
        return value

    def sub(self, key: str) -> _Reader:
        table = self.get(key, dict, {})
        return _Reader(self.path, table, f"{self.prefix}.{key}" if self.prefix else key)

    def finish(self) -> None:
        extra = set(self.table) - self.used
        if extra:
            raise self.err(sorted(extra)[0], "unknown key")


def _upto(hi: int, unit: str = "") -> Callable[[int], str | None]:
    """A check of a positive integer of at most ``hi``: what the harness can wait for or ZooKeeper hold."""
    return lambda v: number_error(v, 1, hi, integer=True, unit=unit)


def _port(v: int) -> str | None:
    return None if 0 <= v < 65536 else "must be a port number (0 = pick at run time)"


def _address(v: str) -> str | None:
    try:
        ipaddress.ip_address(v)
        return None
    except ValueError:
        return None if re.fullmatch(r"[A-Za-z0-9.-]+", v) else "not an IP address or host name"


def load_inventory(path: str | Path | None = None) -> Inventory:
    p = Path(path) if path else DEFAULT_INVENTORY
    data, text = read_toml(p, "inventory", InventoryError)
    try:
        return parse_inventory(data, p)
    except InventoryError as e:  # "file: key: why" → "file:line: key: why", the line that sets the key
        msg = str(e)
        key = msg.removeprefix(f"{p}: ").split(":", 1)[0]
        line = key_line(text, key) if msg.startswith(f"{p}: ") else None
        if line is None:
            raise
        raise InventoryError(f"{p}:{line}: {msg.removeprefix(f'{p}: ')}") from None


def parse_inventory(data: dict[str, Any], p: Path) -> Inventory:
    top = _Reader(p, data, "")
    name = top.get("name", str, p.stem)
    workdir_base = top.get("workdir_base", str, "/tmp/zkfence")
    install_dir = top.get("install_dir", str, "")

    s = top.sub("ssh")
    ssh = SshSpec(
        mode=s.get("mode", str, "embedded", lambda v: None if v in ("embedded", "external") else
                   "must be 'embedded' or 'external'"),
        user=s.get("user", str, ""),
        key=s.get("key", str, None),
        port=s.get("port", int, 22, _port),
        host_keys=s.get("host_keys", str, "verify", lambda v: None if v in ("verify", "trust_on_first_use") else
                        "must be 'verify' (the default) or 'trust_on_first_use'"),
        known_hosts=s.get("known_hosts", str, None),
    )
    if "strict_host_keys" in s.table:
        raise s.err("strict_host_keys", "no longer read: host keys are always verified; set host_keys = "
                                        "\"trust_on_first_use\" to record new keys beside the inventory")
    s.finish()

    z = top.sub("zookeeper")
    zk = ZkSettings(
        tick_time_ms=z.get("tick_time_ms", int, 200, _upto(MAX_MS, "ms")),
        init_limit=z.get("init_limit", int, 25, _upto(MAX_INT32, "ticks")),
        sync_limit=z.get("sync_limit", int, 10, _upto(MAX_INT32, "ticks")),
        min_session_timeout_ms=z.get("min_session_timeout_ms", int, 1000, _upto(MAX_INT32, "ms")),
        max_session_timeout_ms=z.get("max_session_timeout_ms", int, 10000, _upto(MAX_INT32, "ms")),
        java=z.get("java", str, "java"),
        heap_mb=z.get("heap_mb", int, 256, _upto(MAX_HEAP_MB, "MB")),
        classpath=z.get("classpath", str, DEBIAN_CLASSPATH),
        source=z.get("source", str, None, lambda v: None if v in ZK_SOURCES else
                     f"must be one of {', '.join(ZK_SOURCES)}"),
        version=z.get("version", str, None, lambda v: None if re.fullmatch(r"3\.[5-9]\.\d+(-\w+)?", v) else
                      "an Apache ZooKeeper release 3.5.x-3.9.x, e.g. \"3.8.4\""),
    )
    if zk.source is None:
        zk.source = "maven" if zk.version else "preinstalled"
    if zk.source == "maven" and not zk.version:
        raise z.err("version", "required with source = \"maven\" (e.g. \"3.8.4\")")
    if zk.source != "maven" and zk.version:
        raise z.err("version", f"only with source = \"maven\" (source is {zk.source!r})")
    z.finish()
    if zk.min_session_timeout_ms > zk.max_session_timeout_ms:
        raise InventoryError(f"{p}: zookeeper.min_session_timeout_ms: larger than max_session_timeout_ms")

    a = top.sub("agents")
    toggles_table = a.get("toggles", dict, {})
    try:
        toggles = Toggles.from_dict(toggles_table, where="agents.toggles")
    except ConfigError as e:
        raise InventoryError(f"{p}: {e}") from e
    agents = AgentSpec(
        session_timeout_ms=a.get("session_timeout_ms", int, 3000, _upto(MAX_MS, "ms")),
        python=a.get("python", str, "python3"),
        toggles=toggles,
    )
    a.finish()
    if not zk.min_session_timeout_ms <= agents.session_timeout_ms <= zk.max_session_timeout_ms:
        raise InventoryError(
            f"{p}: agents.session_timeout_ms: {agents.session_timeout_ms} is outside ZooKeeper's "
            f"[{zk.min_session_timeout_ms}, {zk.max_session_timeout_ms}] and would be clamped"
        )

    t = top.sub("toxiproxy")
    toxi = ToxiproxySpec(binary=t.get("binary", str, ".local/bin/toxiproxy-server"),
                         host=t.get("host", str, "127.0.0.1", _address))
    t.finish()

    raw_nodes = top.get("nodes", list, check=lambda v: None if len(v) <= MAX_NODES else
                        f"{len(v)} nodes, over the limit of {MAX_NODES}")
    nodes: list[NodeSpec] = []
    seen_names: set[str] = set()
    seen_ids: set[int] = set()
    for i, raw in enumerate(raw_nodes):
        if not isinstance(raw, dict):
            raise InventoryError(f"{p}: nodes[{i}]: expected a table")
        r = _Reader(p, raw, f"nodes[{i}]")
        roles = tuple(r.get("roles", list, check=lambda v: None if v and all(x in ROLES for x in v) else
                            f"must be a non-empty list of {', '.join(ROLES)}"))
        node = NodeSpec(
            name=r.get("name", str, check=lambda v: None if re.fullmatch(r"[A-Za-z0-9_-]+", v) else
                       "letters, digits, '-' and '_' only"),
            address=r.get("address", str, check=_address),
            roles=roles,
            broker_id=r.get("broker_id", int, None, lambda v: number_error(v, 0, MAX_INT32, integer=True)),
            ssh_host=r.get("ssh_host", str, None, _address),
            ssh_port=r.get("ssh_port", int, None, _port),
            user=r.get("user", str, None),
            key=r.get("key", str, None),
            workdir=r.get("workdir", str, None),
            install_dir=r.get("install_dir", str, None),
        )
        r.finish()
        if node.name in seen_names:
            raise InventoryError(f"{p}: nodes[{i}].name: duplicate node name {node.name!r}")
        seen_names.add(node.name)
        if "broker" in roles:
            if node.broker_id is None:
                raise InventoryError(f"{p}: nodes[{i}].broker_id: required for a broker node")
            if node.broker_id in seen_ids:
                raise InventoryError(f"{p}: nodes[{i}].broker_id: duplicate broker id {node.broker_id}")
            seen_ids.add(node.broker_id)
        if ssh.mode == "embedded" and not _is_loopback(node.address):
            raise InventoryError(f"{p}: nodes[{i}].address: embedded mode only allows loopback addresses "
                                 f"(127.0.0.0/8), got {node.address}")
        nodes.append(node)
    top.finish()

    inv = Inventory(name=name, path=p, ssh=ssh, zookeeper=zk, agents=agents, toxiproxy=toxi, nodes=nodes,
                    workdir_base=workdir_base, install_dir=install_dir)
    if not inv.zookeepers:
        raise InventoryError(f"{p}: nodes: no node has the 'zookeeper' role")
    if not inv.brokers:
        raise InventoryError(f"{p}: nodes: no node has the 'broker' role")
    if ssh.mode == "embedded" and not _is_loopback(toxi.host):
        raise InventoryError(f"{p}: toxiproxy.host: embedded mode only allows a loopback address")
    return inv


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"
