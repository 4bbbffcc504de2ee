"""Test hosts that behave like VMs: one network namespace per node, each with its own address on
a bridge, its own sshd on port 22 and its own home directory (``<root>/<node>/home``: the run
workdir and what `harness setup` installs); an external-SSH inventory for them.

The bridge lives in the root namespace with the control node's address (where Toxiproxy listens and
the checkers' observer dials from); each node's namespace holds one end of a veth pair. Addresses
are in 10.213.0.0/16, private to these namespaces. Everything is named with this run's tag, so
``NetHosts.down`` (also called at exit and on the next ``up`` for a crashed run's leftovers)
removes only what this code made: namespaces, bridge, veths, sshd processes, the directory.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from base.components.sshd import EmbeddedSshd

PREFIX = "zkf"


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check)


def available() -> str | None:
    """Why namespace hosts cannot be made here (None when they can)."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    for tool in ("ip", "nft", "sshd"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"needs {tool}"
    return None


@dataclass
class NetHosts:
    nodes: list[tuple[str, tuple[str, ...], int | None]]  # (name, roles, broker id)
    tag: str = field(default_factory=lambda: f"{os.getpid() % 10000:04d}")
    subnet: int = 213
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="zkfence-nethosts-")))
    sshds: list[EmbeddedSshd] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"{PREFIX}br{self.tag}"

    @property
    def control(self) -> str:
        return f"10.{self.subnet}.{int(self.tag) % 250}.1"

    def address(self, i: int) -> str:
        return f"10.{self.subnet}.{int(self.tag) % 250}.{11 + i}"

    def ns(self, name: str) -> str:
        return f"{PREFIX}-{self.tag}-{name}"

    def up(self) -> NetHosts:
        self.down()  # leftovers of a crashed run with the same tag
        atexit.register(self.down)
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.control}/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        for i, (name, _, _) in enumerate(self.nodes):
            ns, host, peer = self.ns(name), f"{PREFIX}v{self.tag}{i}", f"{PREFIX}p{self.tag}{i}"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
            sh("ip", "link", "set", host, "master", self.bridge, "up")
            sh("ip", "link", "set", peer, "netns", ns)
            sh("ip", "-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", peer)
            sh("ip", "-n", ns, "link", "set", peer, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            (self.root / name / "home").mkdir(parents=True)
            sshd = EmbeddedSshd(self.root / name / "sshd", [self.address(i)], port=22, user="root", netns=ns)
            self.sshds.append(sshd)
            sshd.start()
        return self

    def inventory(self, **sections: str) -> Path:
        """An external-SSH inventory for these hosts, their host keys in a known_hosts beside it."""
        known = self.root / "nethosts.known_hosts"
        lines = [f"{self.address(i)} " + " ".join(Path(f"{s.host_key}.pub").read_text().split()[:2])
                 for i, s in enumerate(self.sshds)]
        known.write_text("\n".join(lines) + "\n")
        text = [f'name = "nethosts"\nworkdir_base = "{self.root}/work"\n',
                f'[ssh]\nmode = "external"\nuser = "root"\nport = 22\nknown_hosts = "{known}"\n',
                f'[toxiproxy]\nhost = "{self.control}"\n',
                *(f"[{k}]\n{v}\n" for k, v in sections.items())]
        for i, (name, roles, broker_id) in enumerate(self.nodes):
            text.append(f'[[nodes]]\nname = "{name}"\naddress = "{self.address(i)}"\nroles = {list(roles)!r}\n'
                        f'key = "{self.sshds[i].client_key}"\nworkdir = "{self.root / name / "home" / "run"}"\n'
                        f'install_dir = "{self.root / name / "home" / "opt"}"\n'
                        + (f"broker_id = {broker_id}\n" if broker_id is not None else ""))
        path = self.root / "nethosts.toml"
        path.write_text("\n".join(text).replace("'", '"'))
        return path

    def leftovers(self) -> list[str]:
        """What of ours still exists: namespaces, links."""
        names = sh("ip", "netns", "list", check=False).stdout.split()
        links = sh("ip", "-o", "link", "show", check=False).stdout
        found = [n for n in names if n.startswith(f"{PREFIX}-{self.tag}-")]
        found += [word.rstrip(":").split("@")[0] for word in links.split()
                  if word.startswith((self.bridge, f"{PREFIX}v{self.tag}"))]
        return found

    def down(self) -> None:
        for sshd in self.sshds:
            sshd.stop()
        self.sshds.clear()
        for name, _, _ in self.nodes:
            ns = self.ns(name)
            # anything still running inside (a ZooKeeper or agent a failed run left) goes with it
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                sh("kill", "-KILL", pid, check=False)
            sh("ip", "netns", "del", ns, check=False)
        for i in range(len(self.nodes)):
            sh("ip", "link", "del", f"{PREFIX}v{self.tag}{i}", check=False)
        sh("ip", "link", "del", self.bridge, check=False)
        shutil.rmtree(self.root, ignore_errors=True)
