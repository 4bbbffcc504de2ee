"""What `harness setup` installs on a node, as pure data and shell text (the effects are in
``harness/installer.py``).

Per node, under ``Inventory.node_install_dir`` (kept across runs, unlike a run's workdir):

* ZooKeeper nodes: a Java runtime is checked, never installed. ZooKeeper comes from
  ``zookeeper.source``: ``maven`` — the jars of ``org.apache.zookeeper:zookeeper:VERSION`` and its
  runtime dependencies, resolved on the control node (nodes may have no internet) and shipped as
  one tarball into ``zookeeper-VERSION/``; ``debian`` — the ``zookeeper`` and ``libslf4j-java``
  packages through apt (the node needs a package mirror); ``preinstalled`` — nothing, the
  inventory's ``classpath`` is used as given.
* Broker nodes: kazoo (the agents' one dependency) as pure-Python wheels shipped from the control
  node and unpacked into ``pydeps/``, which the agents put on their ``PYTHONPATH``; the agent code
  itself is shipped with every run.

Each item is marked installed with the sha256 of what was shipped, so a second setup compares
markers and changes nothing.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from base.components.zookeeper import DEBIAN_CLASSPATH, ZkSettings

MARKER = ".zkfence-installed"
DEBIAN_PACKAGES = ("zookeeper", "libslf4j-java")

# Servers log at INFO to stdout (the harness keeps it as the node's zookeeper.log): logback for
# 3.8+, log4j 1.x for 3.5-3.7. Without them 3.8+ would log every packet at DEBUG.
LOGBACK_XML = """<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{yyyy-MM-dd'T'HH:mm:ss.SSS} [%thread] %level %logger - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="OUT"/></root>
</configuration>
"""
LOG4J_PROPERTIES = """log4j.rootLogger=INFO, OUT
log4j.appender.OUT=org.apache.log4j.ConsoleAppender
log4j.appender.OUT.layout=org.apache.log4j.PatternLayout
log4j.appender.OUT.layout.ConversionPattern=%d{ISO8601} [%t] %p %c - %m%n
"""


# Dependencies ZooKeeper 3.6+ needs at startup but declares ``provided`` (so not transitive);
# their versions come from the release's own parent pom, imported as a BOM.
PROVIDED_AT_STARTUP = (("io.dropwizard.metrics", "metrics-core"), ("org.xerial.snappy", "snappy-java"))


def maven_pom(version: str) -> str:
    """A pom whose runtime dependencies are exactly ZooKeeper VERSION's server classpath."""
    minor = int(version.split(".")[1])
    extra = "".join(f"""
    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId></dependency>"""
                    for g, a in (PROVIDED_AT_STARTUP if minor >= 6 else ()))
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>zkfence</groupId><artifactId>zookeeper-{version}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>org.apache.zookeeper</groupId><artifactId>parent</artifactId><version>{version}</version>
        <type>pom</type><scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>org.apache.zookeeper</groupId><artifactId>zookeeper</artifactId><version>{version}</version>
    </dependency>{extra}
  </dependencies>
</project>
"""


def zk_dir(install_dir: str, version: str) -> str:
    return f"{install_dir}/zookeeper-{version}"


def zk_classpath(zk: ZkSettings, install_dir: str) -> str:
    """The classpath a node's ZooKeeper server starts with."""
    if zk.source == "maven":
        assert zk.version
        home = zk_dir(install_dir, zk.version)
        return f"{home}/conf:{home}/lib/*"
    if zk.source == "debian":
        return DEBIAN_CLASSPATH
    return zk.classpath


def pydeps_dir(install_dir: str) -> str:
    return f"{install_dir}/pydeps"


@dataclass(frozen=True)
class Item:
    """One thing a node needs: ``probe`` prints ``ok`` when it is already there."""

    node: str
    what: str
    probe: str


def marker_probe(directory: str, digest: str) -> str:
    path = shlex.quote(f"{directory}/{MARKER}")
    return f'[ "$(cat {path} 2>/dev/null)" = {shlex.quote(digest)} ] && echo ok || echo missing'


def unpack_tarball(tarball: str, directory: str, digest: str) -> str:
    """Replace ``directory`` with the tarball's contents and mark it (the marker last: a setup cut
    short is redone)."""
    d, t = shlex.quote(directory), shlex.quote(tarball)
    return (f"rm -rf {d} && mkdir -p {d} && tar -xzf {t} -C {d} && rm -f {t} && "
            f"printf %s {shlex.quote(digest)} > {d}/{MARKER}")


def unpack_wheels(python: str, wheels: list[str], directory: str, digest: str) -> str:
    """Pure-Python wheels are zip files importable once unpacked: no pip needed on the node."""
    d = shlex.quote(directory)
    script = "import sys, zipfile\nfor w in sys.argv[2:]: zipfile.ZipFile(w).extractall(sys.argv[1])"
    return (f"rm -rf {d} && mkdir -p {d} && {shlex.quote(python)} -c {shlex.quote(script)} {d} "
            + " ".join(shlex.quote(w) for w in wheels)
            + f" && rm -f {' '.join(shlex.quote(w) for w in wheels)} && printf %s {shlex.quote(digest)} > {d}/{MARKER}")


def debian_probe() -> str:
    return ("dpkg-query -W -f='${Status}\\n' " + " ".join(DEBIAN_PACKAGES)
            + " 2>/dev/null | grep -c 'install ok installed' | grep -qx " + str(len(DEBIAN_PACKAGES))
            + " && echo ok || echo missing")


def debian_install() -> str:
    return "DEBIAN_FRONTEND=noninteractive apt-get install -y -q " + " ".join(DEBIAN_PACKAGES)


def java_probe(java: str) -> str:
    return f"{shlex.quote(java)} -version 2>&1 | head -1"


def kazoo_probe(python: str, install_dir: str) -> str:
    """``ok`` when the node's Python imports kazoo (installed, or from ``pydeps``)."""
    return (f"PYTHONPATH={shlex.quote(pydeps_dir(install_dir))} {shlex.quote(python)} -c 'import kazoo' "
            f"2>/dev/null && echo ok || echo missing")
