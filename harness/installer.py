"""Provisioning effects (`harness setup`, and before every run on an external inventory): resolve
ZooKeeper's jars with Maven and kazoo's wheels with pip on the control node, cached under
``.local/``, then probe each node and ship only what it lacks (``harness/provision.py`` says what).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import io
import shlex
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from base.errors import UsageError
from base.inventory import REPO_ROOT, Inventory, NodeSpec
from base.remote import Remote, on_nodes
from harness import provision as pv

CACHE = REPO_ROOT / ".local"


@dataclass(frozen=True)
class Outcome:
    node: str
    what: str
    status: str  # "present" | "installed" | "FAIL"
    detail: str = ""

    def line(self) -> str:
        return f"{self.node:<8} {self.what:<16} {self.status:<9} {self.detail}".rstrip()


def sha256_files(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def _deterministic_tarball(root: Path, dirs: tuple[str, ...], dest: Path) -> None:
    """Same files, same bytes: the digest marks a node's copy as current across control nodes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in dirs:
            for f in sorted((root / d).rglob("*")):
                info = tar.gettarinfo(str(f), arcname=str(f.relative_to(root)))
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                with open(f, "rb") as fh:
                    tar.addfile(info, fh if f.is_file() else None)
    dest.write_bytes(gzip.compress(buf.getvalue(), mtime=0))


def zookeeper_tarball(version: str, cache: Path = CACHE / "zookeeper") -> Path:
    """ZooKeeper VERSION's server classpath (its jar and runtime dependencies from Maven Central,
    plus INFO-level logging configs) as one tarball, resolved once and cached."""
    home = cache / version
    tarball = home / f"zookeeper-{version}.tar.gz"
    if tarball.exists():
        return tarball
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(pv.maven_pom(version))
    res = subprocess.run(["mvn", "-B", "-q", "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
                          "-DincludeScope=runtime", f"-DoutputDirectory={home / 'lib'}"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        errors = [ln for ln in (res.stdout + res.stderr).splitlines() if "ERROR" in ln] or ["mvn failed"]
        raise UsageError(f"zookeeper.version = {version!r}: Maven cannot resolve "
                         f"org.apache.zookeeper:zookeeper:{version} ({errors[0].strip()[:200]})")
    conf = home / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "logback.xml").write_text(pv.LOGBACK_XML)
    (conf / "log4j.properties").write_text(pv.LOG4J_PROPERTIES)
    _deterministic_tarball(home, ("conf", "lib"), tarball)
    return tarball


def kazoo_wheels(cache: Path = CACHE / "wheels") -> list[Path]:
    """The wheels of the kazoo the control node runs (and its dependencies), downloaded once."""
    version = importlib.metadata.version("kazoo")
    home = cache / f"kazoo-{version}"
    wheels = sorted(home.glob("*.whl"))
    if not wheels:
        res = subprocess.run([sys.executable, "-m", "pip", "download", "-q", f"kazoo=={version}",
                              "--only-binary=:all:", "-d", str(home)], capture_output=True, text=True)
        wheels = sorted(home.glob("*.whl"))
        if res.returncode != 0 or not wheels:
            raise UsageError(f"kazoo {version}: pip could not download its wheels ({res.stderr.strip()[-200:]})")
    impure = [w.name for w in wheels if not w.name.endswith("-none-any.whl")]
    if impure:
        raise UsageError(f"kazoo {version}: not pure-Python wheels, cannot ship them: {', '.join(impure)}")
    return wheels


def _probe(remote: Remote, command: str) -> str:
    return remote.run(command, timeout=60).stdout.strip()


def _ship(remote: Remote, install_dir: str, files: list[Path]) -> list[str]:
    remote.run(f"mkdir -p {shlex.quote(install_dir)}", check=True)
    shipped = []
    for f in files:
        remote.put(f, f"{install_dir}/{f.name}")
        shipped.append(f"{install_dir}/{f.name}")
    return shipped


def provision_node(inv: Inventory, node: NodeSpec, remote: Remote) -> list[Outcome]:
    """Check and install what ``node`` needs; each item one Outcome."""
    out: list[Outcome] = []
    install_dir = inv.node_install_dir(node)
    zk = inv.zookeeper
    if "zookeeper" in node.roles:
        java = _probe(remote, pv.java_probe(zk.java))
        if "version" not in java:
            return [Outcome(node.name, "java", "FAIL", f"no Java runtime ({zk.java} -version: {java or 'no output'}); "
                                                       "install one, e.g. openjdk-17-jre-headless")]
        out.append(Outcome(node.name, "java", "present", java))
        if zk.source == "maven":
            assert zk.version
            tarball = zookeeper_tarball(zk.version)
            digest = sha256_files([tarball])
            home = pv.zk_dir(install_dir, zk.version)
            what = f"zookeeper {zk.version}"
            if _probe(remote, pv.marker_probe(home, digest)) == "ok":
                out.append(Outcome(node.name, what, "present", home))
            else:
                [shipped] = _ship(remote, install_dir, [tarball])
                remote.run(pv.unpack_tarball(shipped, home, digest), check=True, timeout=120)
                out.append(Outcome(node.name, what, "installed", f"{home} (from Maven Central via the control node)"))
        elif zk.source == "debian":
            from nemesis.firewall import as_root

            if _probe(remote, pv.debian_probe()) == "ok":
                out.append(Outcome(node.name, "zookeeper deb", "present", " ".join(pv.DEBIAN_PACKAGES)))
            else:
                res = remote.run(as_root(pv.debian_install()), timeout=600)
                out.append(Outcome(node.name, "zookeeper deb", "installed" if res.ok else "FAIL",
                                   " ".join(pv.DEBIAN_PACKAGES) if res.ok else
                                   f"apt-get: {(res.stderr or res.stdout).strip().splitlines()[-1:]}"))
    if "broker" in node.roles:
        python = inv.agents.python
        if _probe(remote, pv.kazoo_probe(python, install_dir)) == "ok":
            out.append(Outcome(node.name, "kazoo", "present", f"importable by {python}"))
        else:
            wheels = kazoo_wheels()
            shipped = _ship(remote, install_dir, wheels)
            target = pv.pydeps_dir(install_dir)
            remote.run(pv.unpack_wheels(python, shipped, target, sha256_files(wheels)), check=True, timeout=120)
            ok = _probe(remote, pv.kazoo_probe(python, install_dir)) == "ok"
            out.append(Outcome(node.name, "kazoo", "installed" if ok else "FAIL",
                               f"{target} ({len(wheels)} wheel(s))" if ok else f"{python} still cannot import kazoo"))
    return out


def provision(inv: Inventory, remotes: dict[str, Remote], log: Callable[[str], None] | None = None) -> list[Outcome]:
    """Every node at once; resolving on the control node happens first, once."""
    if inv.zookeeper.source == "maven":
        assert inv.zookeeper.version
        zookeeper_tarball(inv.zookeeper.version)
    if inv.brokers and log is not None:
        log("provisioning: checking ZooKeeper and the agents' dependencies on every node")
    results = on_nodes(inv.nodes, lambda n: provision_node(inv, n, remotes[n.name]))
    return [o for per_node in results for o in per_node]
