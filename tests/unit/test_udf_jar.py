"""Where the JVM functions' jar lives and when it is rebuilt (``checkers.udfs``): plain paths, no
javac run (tests/integration/test_event_fields.py builds and uses the real one)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from checkers import udfs


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    src = tmp_path / "java"
    shutil.copytree(udfs.SOURCES, src)
    monkeypatch.setattr(udfs, "SOURCES", src)
    monkeypatch.setenv(udfs.DIR_ENV, str(tmp_path / "jars"))
    return src


def test_the_jar_is_named_after_its_sources(sources: Path, tmp_path: Path) -> None:
    first = udfs.jar_path()
    assert first.parent == tmp_path / "jars" and first.name.startswith("zkfence-udfs-")
    assert udfs.jar_path() == first
    java = next(sources.rglob("*.java"))
    java.write_text(java.read_text() + "\n// changed\n")
    assert udfs.jar_path() != first


def test_without_javac_there_is_no_jar_and_one_line_says_so(sources: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(udfs, "javac", lambda: None)
    monkeypatch.setattr(udfs, "_warned", type(udfs._warned)())
    assert udfs.jar() is None and udfs.jar() is None
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "no javac" in err[0]
    assert udfs.main([]) == 1


def test_a_built_jar_is_used_as_it_is(sources: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    target = udfs.jar_path()
    target.parent.mkdir(parents=True)
    target.write_bytes(b"PK")
    monkeypatch.setattr(udfs, "build", lambda: pytest.fail("rebuilt an existing jar"))
    assert udfs.jar() == target
    assert udfs.main([]) == 0 and capsys.readouterr().out == ""


def test_an_unknown_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert udfs.main(["--force"]) == 254
    assert "unknown argument '--force'" in capsys.readouterr().err


def test_off_means_no_jar(sources: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = udfs.jar_path()
    target.parent.mkdir(parents=True)
    target.write_bytes(b"PK")
    monkeypatch.setenv(udfs.OFF_ENV, "off")
    assert udfs.jar() is None
