"""`harness doctor`: is this inventory ready to run? One line per check and node; exit 0 when
every check passes, 1 when any fails (each failing line says what to fix), 254 for a bad inventory.

Checks: SSH reachability and the host key's status, root or password-less sudo, Java on ZooKeeper
nodes, Python 3.11+ with kazoo on broker nodes, the node's clock against the control node (and the
skew it forces on the zxid sweep), ports free on the node's address, brokers reaching the control
node's Toxiproxy address, free disk under the work directory. Nothing on a node is changed.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

from base import hostkeys
from base.bounds import MAX_CONNECT_S, MAX_MS, finite_float
from base.errors import UsageError
from base.inventory import Inventory, NodeSpec, load_inventory
from base.localstate import DOCTOR_PREFIX, owned_tempdir
from base.parsing import summary
from base.remote import RemoteError, SSHRemote, on_nodes
from checkers.zxid import DEFAULT_SKEW
from harness.cluster import free_ports_on
from harness.doctor import Check, judge, parse_probe, probe_command
from harness.provision import pydeps_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check that every node of an inventory is ready to run",
                       description=summary(__doc__))
    p.add_argument("--inventory", metavar="FILE", help="inventory TOML (default: inventory/local.toml)")
    p.add_argument("--timeout", type=finite_float(0, MAX_CONNECT_S, lo_open=True), default=5.0, metavar="S", help="SSH connect timeout per node (default 5)")
    p.add_argument("--skew-ms", type=finite_float(0, MAX_MS, unit="ms"), default=DEFAULT_SKEW * 1000, metavar="MS",
                   help=f"clock skew the zxid sweep allows (default {DEFAULT_SKEW * 1000:g})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError(f"--timeout: must be > 0 seconds, got {args.timeout}")
    inv = load_inventory(args.inventory)
    print(f"doctor: {inv.path} ({len(inv.nodes)} nodes, ssh {inv.ssh.mode})")
    with owned_tempdir(DOCTOR_PREFIX) as tmp, _control_listener(inv) as control:
        sshd = _embedded_sshd(inv, Path(tmp)) if inv.embedded else None
        try:
            per_node = on_nodes(inv.nodes, lambda n: _check_node(inv, n, sshd, control, args))
        finally:
            if sshd is not None:
                sshd.stop()
    checks = [c for node in per_node for c in node]
    for c in checks:
        print(c.line())
    failed = [c for c in checks if not c.ok]
    print(f"doctor: {'ready' if not failed else f'{len(failed)} check(s) failed'}")
    return 0 if not failed else 1


def _check_node(inv: Inventory, node: NodeSpec, sshd: object, control: tuple[str, int],
                args: argparse.Namespace) -> list[Check]:
    try:
        remote, how = connect_node(inv, node, sshd, args.timeout)
    except (RemoteError, UsageError) as e:
        return [Check(node.name, "ssh", False, str(e).split(": ", 1)[-1])]
    try:
        checks = [Check(node.name, "ssh", True, how)]
        is_zk, is_broker = "zookeeper" in node.roles, "broker" in node.roles
        python = sys.executable if inv.embedded else inv.agents.python
        cmd = probe_command(inv.workdir_base, inv.zookeeper.java if is_zk else None, python if is_broker else None,
                            control if is_broker else None,
                            "" if inv.embedded else pydeps_dir(inv.node_install_dir(node)))
        probe = parse_probe(remote.run(cmd, timeout=30).stdout)
        sent, received, probe["clock"] = _clock_sample(remote)
        checks += judge(node.name, probe, sent, received, args.skew_ms / 1000.0,
                        java=is_zk, python=is_broker, control=is_broker)
        try:
            ports = free_ports_on(remote, node.address, 3, python)
            checks.append(Check(node.name, "ports", True, f"free on {node.address} (e.g. {ports[0]})"))
        except RemoteError as e:
            checks.append(Check(node.name, "ports", False, f"cannot pick free ports on {node.address}: {e}"))
        return checks
    except RemoteError as e:
        return [*checks, Check(node.name, "probe", False, str(e))]
    finally:
        remote.close()


def _clock_sample(remote: SSHRemote, samples: int = 7) -> tuple[float, float, str]:
    """The node's clock read with the shortest round trip of a few, over one open channel (so no
    session setup sits inside the round trip), as NTP does."""
    chan = remote.channel()
    try:
        chan.settimeout(10)
        chan.exec_command("while read -r _; do date +%s.%N; done")
        reader = chan.makefile("rb")
        best: tuple[float, float, str] | None = None
        for _ in range(samples):
            sent = time.time()
            chan.sendall(b"\n")
            clock = reader.readline().decode().strip()
            received = time.time()
            if best is None or received - sent < best[1] - best[0]:
                best = (sent, received, clock)
        assert best is not None
        return best
    finally:
        chan.close()


def connect_node(inv: Inventory, node: NodeSpec, sshd: object, timeout: float) -> tuple[SSHRemote, str]:
    if sshd is not None:
        port = sshd.port  # type: ignore[attr-defined]
        key = sshd.host_key.with_suffix(".pub")  # type: ignore[attr-defined]
        remote = SSHRemote(node.name, node.address, port, sshd.user, str(sshd.client_key),  # type: ignore[attr-defined]
                           connect_timeout=timeout, host_keys=lambda c: hostkeys.pin(c, [(node.address, port)], key))
        return remote, f"{sshd.user}@{node.address}:{port} (embedded sshd, host key pinned)"  # type: ignore[attr-defined]
    said: list[str] = []
    host, port = node.ssh_host or node.address, node.ssh_port or inv.ssh.port
    user = node.user or inv.ssh.user or "root"
    key_file = node.key or inv.ssh.key
    remote = SSHRemote(node.name, host, port, user, str(Path(key_file).expanduser()) if key_file else None,
                       connect_timeout=timeout,
                       host_keys=lambda c: hostkeys.configure(c, inv.ssh.host_keys, inv.ssh.known_hosts,
                                                              inv.trusted_keys_file, str(inv.path), said.append))
    status = "host key newly trusted and recorded" if said else "host key verified"
    return remote, f"{user}@{host}:{port} ({status})"


def _embedded_sshd(inv: Inventory, tmp: Path) -> object:
    from base.components.sshd import EmbeddedSshd

    sshd = EmbeddedSshd(tmp / "sshd", sorted({n.address for n in inv.nodes}))
    sshd.start()
    return sshd


class _control_listener:  # noqa: N801 - used as a context manager
    """A listening socket on the control node's Toxiproxy address, for brokers to dial."""

    def __init__(self, inv: Inventory) -> None:
        self.host = inv.toxiproxy.host

    def __enter__(self) -> tuple[str, int]:
        self.sock = socket.socket()
        try:
            self.sock.bind((self.host, 0))
        except OSError as e:
            self.sock.close()
            raise UsageError(f"toxiproxy.host: {self.host} is not an address of this machine ({e})") from None
        self.sock.listen(64)
        return self.host, self.sock.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
