"""The Spark master URL and the output paths a command is given, judged before any work: which
URLs Spark takes, and which directories and files can be written (``harness.outputs``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from base.errors import UsageError
from checkers.spark import ENV_MASTER, master_arg, master_problem, resolve_master, standalone_endpoints
from harness.outputs import writable_dir, writable_file

UNWRITABLE = Path("/proc/zkfence-no-such-dir")  # not even root creates files under /proc


@pytest.mark.parametrize("url", ["local", "local[*]", "local[2]", "local[4,3]", "local[*, 2]", "local-cluster[2,1,1024]",
                                 "spark://127.0.0.1:7077", "spark://a:7077,b:7078", "spark://[::1]:7077", "yarn",
                                 "k8s://https://127.0.0.1:6443"])
def test_master_urls_spark_takes(url: str) -> None:
    assert master_problem(url) is None and master_arg(url) == url


@pytest.mark.parametrize("url", ["", "bogus://x", "spark://host", "spark://host:99999", "spark://h:7077/", "local[0]",
                                 "local[two]", "mesos://h:5050", "Local[2]"])
def test_other_master_urls_are_the_flags_error(url: str) -> None:
    assert repr(url) in (master_problem(url) or "")
    with pytest.raises(argparse.ArgumentTypeError, match="not a Spark master URL"):
        master_arg(url)


def test_a_standalone_masters_endpoints_in_order() -> None:
    assert standalone_endpoints("spark://a:1,[::1]:2") == [("a", 1), ("::1", 2)]
    assert standalone_endpoints("local[2]") == []


def test_the_environments_master_is_checked_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MASTER, "local[2]")
    assert resolve_master(None) == "local[2]" and resolve_master("yarn") == "yarn"
    monkeypatch.setenv(ENV_MASTER, "nope")
    with pytest.raises(UsageError, match=rf"^\${ENV_MASTER}: 'nope' is not a Spark master URL"):
        resolve_master(None)
    monkeypatch.delenv(ENV_MASTER)
    assert resolve_master(None) == "local[*]"


def test_judging_a_dir_leaves_it_as_it_was(tmp_path: Path) -> None:
    assert writable_dir(tmp_path / "a" / "b", "--out") == tmp_path / "a" / "b"
    assert list(tmp_path.iterdir()) == []  # the writers create it: a command that stops first leaves nothing
    assert writable_dir(tmp_path, "--out") == tmp_path and list(tmp_path.iterdir()) == []


def test_an_unwritable_dir_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=rf"^--store {UNWRITABLE}: cannot write there \("):
        writable_dir(UNWRITABLE, "--store")
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError, match=rf"^--out {tmp_path / 'f'}: is a file, not a directory$"):
        writable_dir(tmp_path / "f", "--out")


def test_a_file_flag_needs_a_writable_directory_and_not_a_directory(tmp_path: Path) -> None:
    assert writable_file(tmp_path / "new" / "junit.xml", "--junit") == tmp_path / "new" / "junit.xml"
    assert not (tmp_path / "new").exists()
    with pytest.raises(UsageError, match=rf"^--junit {tmp_path}: is a directory, not a file$"):
        writable_file(tmp_path, "--junit")
    with pytest.raises(UsageError, match=rf"^--junit {UNWRITABLE / 'x.xml'}: cannot write in {UNWRITABLE} \("):
        writable_file(UNWRITABLE / "x.xml", "--junit")
