"""checkers.spark_defaults: a Java properties file read as spark-submit reads spark-defaults.conf
(plain text), and where that file is."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import spark_defaults
from checkers.spark_defaults import parse, user_properties


def test_the_forms_a_properties_file_takes() -> None:
    text = (
        "# a comment\n"
        "  ! another = comment\n"
        "\n"
        "spark.jars   /opt/a.jar,/opt/b.jar  \n"
        "spark.eq=x=y\n"
        "spark.colon : z\n"
        "spark.tab\tt\n"
        "spark.long = one,\\\n"
        "     two\n"
        "spark.key\\ with\\:seps = k\n"
        "spark.esc = a\\tb\\u0041\\\\c\n"
        "spark.empty\n"
        "spark.twice = 1\n"
        "spark.twice = 2\n"
    )
    assert parse(text) == {
        "spark.jars": "/opt/a.jar,/opt/b.jar", "spark.eq": "x=y", "spark.colon": "z", "spark.tab": "t",
        "spark.long": "one,two", "spark.key with:seps": "k", "spark.esc": "a\tbA\\c", "spark.empty": "",
        "spark.twice": "2",
    }


def test_a_continuation_into_a_blank_line_or_the_end_ends_the_value() -> None:
    assert parse("a = x\\\n\nb = y\\") == {"a": "x", "b": "y"}


def test_the_file_is_the_properties_file_else_in_spark_conf_dir_else_spark_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "home"))
    for args in (f"--properties-file {tmp_path}/p.conf pyspark-shell", f"--properties-file={tmp_path}/p.conf"):
        monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", args)
        assert spark_defaults.defaults_files() == [tmp_path / "p.conf"]
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 2g pyspark-shell")
    assert spark_defaults.defaults_files() == [tmp_path / "conf" / "spark-defaults.conf"]
    monkeypatch.delenv("SPARK_CONF_DIR")
    assert spark_defaults.defaults_files() == [tmp_path / "home" / "conf" / "spark-defaults.conf"]
    monkeypatch.delenv("SPARK_HOME")
    import pyspark

    assert spark_defaults.defaults_files() == [Path(pyspark.__file__).parent / "conf" / "spark-defaults.conf"]


def test_a_value_comes_from_the_file_when_there_is_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert user_properties() == {}  # no file
    (tmp_path / "spark-defaults.conf").write_text("spark.jars  /opt/a.jar\nspark.other =\n", encoding="utf-8")
    assert user_properties() == {"spark.jars": "/opt/a.jar", "spark.other": ""}
    # an empty value is no value: the harness's alone
    assert spark_defaults.added("spark.other", "/ours", ",", user_properties()) == "/ours"


def test_with_load_spark_defaults_both_files_are_read_the_named_one_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as pyspark's spark-submit reads them: the named file's value where both set a key
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    (tmp_path / "named.conf").write_text("spark.zk.both A\nspark.zk.a 1\n")
    (tmp_path / "spark-defaults.conf").write_text("spark.zk.both B\nspark.zk.b 2\n")
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", f"--properties-file {tmp_path}/named.conf --load-spark-defaults x")
    assert spark_defaults.defaults_files() == [tmp_path / "named.conf", tmp_path / "spark-defaults.conf"]
    assert user_properties() == {"spark.zk.both": "A", "spark.zk.a": "1", "spark.zk.b": "2"}
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", f"--properties-file {tmp_path}/named.conf x")
    assert user_properties() == {"spark.zk.both": "A", "spark.zk.a": "1"}


def test_the_harness_adds_its_value_after_the_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert spark_defaults.added("spark.jars", "/ours.jar", ",", user_properties()) == "/ours.jar"
    (tmp_path / "spark-defaults.conf").write_text("spark.jars /a.jar,/b.jar\nspark.driver.extraJavaOptions -Dx=1\n")
    assert spark_defaults.added("spark.jars", "/ours.jar", ",", user_properties()) == "/a.jar,/b.jar,/ours.jar"
    assert spark_defaults.added("spark.driver.extraJavaOptions", "-Dy=2", " ", user_properties()) == "-Dx=1 -Dy=2"


def test_where_the_submit_arguments_set_a_key_the_harness_adds_to_them_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    (tmp_path / "spark-defaults.conf").write_text("spark.jars /file.jar\n")  # the arguments' jars win over it
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--jars=/a.jar --driver-java-options '-Dx=1 -Dy=2' pyspark-shell")
    assert spark_defaults.submit_args() == ["--jars", "/a.jar", "--driver-java-options", "-Dx=1 -Dy=2", "pyspark-shell"]
    assert spark_defaults.added("spark.jars", "/ours.jar", ",", user_properties()) == "/a.jar,/ours.jar"
    assert spark_defaults.added("spark.driver.extraJavaOptions", "-Dz=3", " ", user_properties()) == "-Dx=1 -Dy=2 -Dz=3"
    assert spark_defaults.submit_args() == ["--jars", "/a.jar,/ours.jar", "--driver-java-options", "-Dx=1 -Dy=2 -Dz=3",
                                            "pyspark-shell"]
    # a second session in the process adds nothing twice
    assert spark_defaults.added("spark.jars", "/ours.jar", ",", user_properties()) == "/a.jar,/ours.jar"
    assert spark_defaults.submit_args()[1] == "/a.jar,/ours.jar"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-java-options=--add-opens=java.base/java.nio=ALL-UNNAMED")
    assert spark_defaults.added("spark.driver.extraJavaOptions", "-Dz=3", " ", user_properties()) \
        == "--add-opens=java.base/java.nio=ALL-UNNAMED -Dz=3"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.jars=/b.jar --conf spark.jars=/c.jar pyspark-shell")
    assert spark_defaults.added("spark.jars", "/ours.jar", ",", user_properties()) == "/c.jar,/ours.jar"
    assert spark_defaults.submit_args()[:4] == ["--conf", "spark.jars=/b.jar", "--conf", "spark.jars=/c.jar,/ours.jar"]
