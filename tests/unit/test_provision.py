"""What `harness setup` installs, as data and shell text (pure), and the inventory keys it reads."""

from __future__ import annotations

import subprocess

import pytest

from base.components.zookeeper import DEBIAN_CLASSPATH, ZkSettings
from base.inventory import InventoryError, parse_inventory
from harness import provision as pv

BASE = {"ssh": {"mode": "external", "user": "root"},
        "nodes": [{"name": "zk1", "address": "10.1.0.1", "roles": ["zookeeper"]},
                  {"name": "b1", "address": "10.1.0.2", "roles": ["broker"], "broker_id": 1,
                   "install_dir": "/srv/zkf"}]}


def _inv(zookeeper: dict, **top):
    return parse_inventory({**BASE, **top, "zookeeper": zookeeper}, __import__("pathlib").Path("vms.toml"))


def test_a_version_means_maven_and_sets_the_classpath_under_the_install_dir():
    inv = _inv({"version": "3.8.4"}, workdir_base="/var/tmp/zkf")
    assert inv.zookeeper.source == "maven"
    zk1, b1 = inv.nodes
    assert inv.node_install_dir(zk1) == "/var/tmp/zkf/opt" and inv.node_install_dir(b1) == "/srv/zkf"
    assert pv.zk_classpath(inv.zookeeper, "/var/tmp/zkf/opt") == \
        "/var/tmp/zkf/opt/zookeeper-3.8.4/conf:/var/tmp/zkf/opt/zookeeper-3.8.4/lib/*"
    assert pv.zk_classpath(ZkSettings(source="debian"), "/x") == DEBIAN_CLASSPATH
    assert pv.zk_classpath(ZkSettings(classpath="/opt/zk/*"), "/x") == "/opt/zk/*"


@pytest.mark.parametrize("zookeeper, message", [
    ({"version": "3.4.14"}, "zookeeper.version: an Apache ZooKeeper release 3.5.x-3.9.x"),
    ({"version": "4.0.0"}, "zookeeper.version: an Apache ZooKeeper release 3.5.x-3.9.x"),
    ({"source": "maven"}, "zookeeper.version: required with source"),
    ({"source": "debian", "version": "3.8.4"}, "zookeeper.version: only with source"),
    ({"source": "tarball"}, "zookeeper.source: must be one of preinstalled, debian, maven"),
])
def test_bad_zookeeper_keys_are_one_line_errors_naming_the_key(zookeeper, message):
    with pytest.raises(InventoryError, match=message):
        _inv(zookeeper)


def test_the_pom_adds_what_3_6_and_later_need_at_startup_with_the_release_versions():
    assert "metrics-core" in pv.maven_pom("3.8.4") and "<artifactId>parent</artifactId><version>3.8.4" in \
        pv.maven_pom("3.8.4")
    assert "metrics-core" not in pv.maven_pom("3.5.10")


def test_markers_make_a_second_setup_a_no_op(tmp_path):
    home = tmp_path / "zookeeper-3.8.4"
    probe = pv.marker_probe(str(home), "abc")
    run = lambda cmd: subprocess.run(["sh", "-c", cmd], capture_output=True, text=True).stdout.strip()  # noqa: E731
    assert run(probe) == "missing"
    tarball = tmp_path / "t.tar.gz"
    (tmp_path / "src" / "lib").mkdir(parents=True)
    (tmp_path / "src" / "lib" / "a.jar").write_text("jar")
    subprocess.run(["tar", "-czf", str(tarball), "-C", str(tmp_path / "src"), "lib"], check=True)
    run(pv.unpack_tarball(str(tarball), str(home), "abc"))
    assert (home / "lib" / "a.jar").read_text() == "jar" and not tarball.exists()
    assert run(probe) == "ok"
    assert run(pv.marker_probe(str(home), "other")) == "missing"  # a different release is reinstalled
