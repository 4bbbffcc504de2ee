"""Jars that spark-submit resolves for the driver (``--packages`` in ``$PYSPARK_SUBMIT_ARGS``, or
``spark.jars.packages`` in spark-defaults.conf) reach a cluster's executors too: the session's own
``spark.jars`` (the functions' jar, set after spark-submit merged the packages in) no longer drops
them, so a function of the package runs in the executors' tasks. Before, it failed there with
ClassNotFoundException (the driver, whose classpath spark-submit set, had it). A real standalone
cluster, a Maven repository laid out here and served from disk, a package compiled here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkers import udfs
from tests.javajar import compile_jar
from tests.sparkcluster import Standalone, standalone_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]

PACKAGE = """package zkfencetest;
public class Greeting {
  public static String greet(String who) { return "hello " + who; }
}
"""
POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>zkfencetest</groupId><artifactId>greeting</artifactId><version>1.0</version></project>
"""
# The call names a column, so the executors evaluate it in their tasks (never folded on the driver).
CHILD = """
import json, sys
from checkers import spark as s
session = s.get_spark(sys.argv[1])
rows = session.range(4).repartition(2).selectExpr("reflect('zkfencetest.Greeting', 'greet', CAST(id AS STRING)) AS g")
print(json.dumps({"greetings": sorted(r.g for r in rows.collect()), "jars": session.conf.get("spark.jars")}), flush=True)
"""


def _maven_repo(tmp: Path) -> Path:
    """A Maven repository with zkfencetest:greeting:1.0 (its jar and pom), as a ``file://`` repository."""
    artifact = tmp / "repo" / "zkfencetest" / "greeting" / "1.0"
    compile_jar("zkfencetest.Greeting", PACKAGE, artifact / "greeting-1.0.jar", tmp)
    (artifact / "greeting-1.0.pom").write_text(POM, encoding="utf-8")
    return tmp / "repo"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _maven_repo(tmp_path_factory.mktemp("maven"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """One cluster for both ways of asking: each driver is an application of its own there."""
    with standalone_cluster(tmp_path_factory.mktemp("spark")) as c:
        yield c


@pytest.mark.parametrize("where", ["PYSPARK_SUBMIT_ARGS", "spark-defaults.conf"])
def test_a_package_the_driver_resolved_reaches_the_executors(where: str, repo: Path, cluster: Standalone,
                                                             tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_SPARK_MASTER", "PYSPARK_SUBMIT_ARGS")}
    env["SPARK_CONF_DIR"] = str(conf)
    ivy = f"spark.jars.ivy {tmp_path / 'ivy'}\nspark.jars.repositories file://{repo}\n"  # nothing of ~/.ivy2
    if where == "spark-defaults.conf":
        (conf / "spark-defaults.conf").write_text(f"{ivy}spark.jars.packages zkfencetest:greeting:1.0\n",
                                                  encoding="utf-8")
    else:
        (conf / "spark-defaults.conf").write_text(ivy, encoding="utf-8")
        env["PYSPARK_SUBMIT_ARGS"] = "--packages zkfencetest:greeting:1.0 pyspark-shell"
    done = subprocess.run([sys.executable, "-c", CHILD, cluster.url], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["greetings"] == ["hello 0", "hello 1", "hello 2", "hello 3"]
    assert got["jars"].split(",")[-1] == str(udfs.jar_path())  # the functions' jar is still the session's
