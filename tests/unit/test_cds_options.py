"""checkers.cds and harness.cds: which options the driver JVM gets for the class-data-sharing archive (no JVM here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import cds
from harness import cds as build_cds


@pytest.fixture
def archive_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(cds.DIR_ENV, str(tmp_path))
    for name in (cds.OFF_ENV, cds.DUMP_ENV, cds.VERIFY_ENV):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_no_archive_built_means_no_options(archive_dir: Path) -> None:
    assert cds.jvm_options() == ""


def test_a_built_archive_is_mapped_and_a_mismatch_stays_silent(archive_dir: Path) -> None:
    path = cds.archive_path()
    assert path is not None and path.parent == archive_dir
    path.write_bytes(b"built")
    assert cds.jvm_options() == f"-XX:SharedArchiveFile={path} -Xlog:cds=off,cds+dynamic=off"


def test_off_starts_without_the_archive(archive_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = cds.archive_path()
    assert path is not None
    path.write_bytes(b"built")
    monkeypatch.setenv(cds.OFF_ENV, "off")
    assert cds.jvm_options() == ""


def test_the_building_and_verifying_children_get_their_own_options(archive_dir: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cds.DUMP_ENV, "/x/.building-1.jsa")
    assert cds.jvm_options() == "-XX:ArchiveClassesAtExit=/x/.building-1.jsa"
    monkeypatch.delenv(cds.DUMP_ENV)
    monkeypatch.setenv(cds.VERIFY_ENV, "/x/.building-1.jsa")
    assert cds.jvm_options() == "-XX:SharedArchiveFile=/x/.building-1.jsa -Xshare:on"


def test_the_archive_is_keyed_on_the_java_binary(archive_dir: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    before = cds.archive_path()
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"another java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    after = cds.archive_path()
    assert after is not None and after != before
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojdk"))
    assert cds.archive_path() is None and cds.jvm_options() == ""


def test_the_archive_is_keyed_on_the_warm_up_history(archive_dir: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from checkers.project import WARM_UP_HISTORY

    assert cds.TRAINED_ON == WARM_UP_HISTORY
    before = cds.archive_path()
    history = tmp_path / "warm_up.jsonl"
    history.write_bytes(WARM_UP_HISTORY.read_bytes() + b"\n")
    monkeypatch.setattr(cds, "TRAINED_ON", history)
    assert cds.archive_path() != before


def test_an_unknown_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert build_cds.main(["--bogus"]) == 254
    assert "unknown argument '--bogus'" in capsys.readouterr().err


def test_if_missing_does_nothing_when_the_archive_is_built(archive_dir: Path) -> None:
    path = cds.archive_path()
    assert path is not None
    path.write_bytes(b"built")
    assert build_cds.main(["--if-missing"]) == 0
    assert path.read_bytes() == b"built"
