"""The user's driver settings (spark-defaults.conf, $PYSPARK_SUBMIT_ARGS) keep their say: a session
the harness starts adds its functions' jar to the user's jars (before, it replaced the file's, and a
listener the file names failed the session with ClassNotFoundException; ``--jars`` left the
functions off the driver's classpath), its JVM options after the user's, and takes the user's driver
memory. A session that cannot start is one line naming the cause and the file. Real SparkSessions in
child processes, with a listener jar compiled here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checkers import udfs
from tests.javajar import compile_jar

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]

LISTENER = """package zkfencetest;
public class Hello extends org.apache.spark.scheduler.SparkListener {
  public Hello() { System.err.println("zkfencetest.Hello loaded"); }
}
"""
CHILD = """
import json
from checkers import spark as s, udfs
session = s.get_spark("local[1]")
jvm = session.sparkContext._jvm
print(json.dumps({"jars": session.conf.get("spark.jars"), "functions": udfs.registered(session, udfs.EVENT_FIELDS),
                  "count": session.range(3).count(), "option": jvm.java.lang.System.getProperty("zkfencetest.option"),
                  "tmpdir": jvm.java.lang.System.getProperty("java.io.tmpdir"), "scratch": str(s._jvm_scratch()),
                  "heap_mb": jvm.java.lang.Runtime.getRuntime().maxMemory() // 2**20}), flush=True)
"""


@pytest.mark.parametrize("where", ["spark-defaults.conf", "PYSPARK_SUBMIT_ARGS", "--load-spark-defaults"])
def test_the_users_jars_and_jvm_options_stay(where: str, tmp_path: Path) -> None:
    import pyspark

    jar = compile_jar("zkfencetest.Hello", LISTENER, tmp_path / "hello.jar", tmp_path,
                      str(Path(pyspark.__file__).parent / "jars" / "*"))
    conf = tmp_path / "conf"
    conf.mkdir()
    options = "-Dzkfencetest.option=kept -Djava.io.tmpdir=/nonexistent"
    env = {**os.environ, "SPARK_CONF_DIR": str(conf)}
    env.pop("HARNESS_SPARK_MASTER", None)
    if where == "spark-defaults.conf":
        (conf / "spark-defaults.conf").write_text(
            f"spark.jars {jar}\nspark.extraListeners = zkfencetest.Hello\nspark.driver.memory 700m\n"
            f"spark.driver.extraJavaOptions {options}\n", encoding="utf-8")
    elif where == "--load-spark-defaults":  # Spark 4: the named file, and spark-defaults.conf for what it leaves
        (tmp_path / "named.conf").write_text(f"spark.jars {jar}\nspark.extraListeners = zkfencetest.Hello\n"
                                             "spark.driver.memory 700m\n", encoding="utf-8")
        (conf / "spark-defaults.conf").write_text(f"spark.driver.memory 1500m\nspark.driver.extraJavaOptions {options}\n",
                                                  encoding="utf-8")
        env["PYSPARK_SUBMIT_ARGS"] = f"--properties-file {tmp_path / 'named.conf'} --load-spark-defaults pyspark-shell"
    else:  # spark-submit takes these over the session's settings: the harness adds to them in place
        env["PYSPARK_SUBMIT_ARGS"] = (f"--jars={jar} --conf spark.extraListeners=zkfencetest.Hello --driver-memory 700m "
                                      f"--driver-java-options '{options}' pyspark-shell")
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "zkfencetest.Hello loaded" in done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["jars"] == f"{jar},{udfs.jar_path()}"
    assert got["functions"] is True and got["count"] == 3
    # the user's JVM options and driver memory hold too, save where the harness's own option comes after
    assert got["option"] == "kept" and got["tmpdir"] == got["scratch"]
    assert 400 < got["heap_mb"] <= 700


@pytest.mark.parametrize("command", [["check", "--no-server"], ["check-server", "start"]])
def test_a_session_the_defaults_break_is_one_line_naming_the_cause_and_the_file(command: list[str],
                                                                               tmp_path: Path) -> None:
    from harness import checkserver as server

    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.extraListeners zkfencetest.Missing\n", encoding="utf-8")
    history = tmp_path / "h.log"
    history.write_text("INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:ok\t:write\t1\n")
    env = {**os.environ, "SPARK_CONF_DIR": str(conf)}
    env.pop("HARNESS_SPARK_MASTER", None)
    server.stop()  # a running server would take the start
    done = subprocess.run([sys.executable, "-m", "harness.cli", *command, *([str(history)] if command[0] == "check"
                                                                             else [])],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2, done.stderr[-3000:]
    assert last.startswith("harness: Spark master local[*]: no session (")
    assert f"caused by java.lang.ClassNotFoundException: zkfencetest.Missing); the driver read {conf}" in last
    assert "Traceback" not in done.stderr
    assert server.read_state() is None
