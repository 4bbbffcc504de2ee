"""harness.cds and checkers.cds against a real JVM: the archive is built by a session that dumps it, proven to map
by one that must (``-Xshare:on``), moved into place, and replaces an archive of another key. The dump
here is a bare session's (``trained=False``): the same JVM steps in a third of the time; the trained
archive is the one ``make install`` builds before the suite, and every session of the suite maps it."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import cds
from harness import cds as build_cds


def test_build_dumps_verifies_and_moves_the_archive_into_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cds.DIR_ENV, str(tmp_path))
    stale = tmp_path / "driver-0000000000000000.jsa"
    stale.write_bytes(b"an archive of another java")
    path = build_cds.build(trained=False)
    assert path == cds.archive_path() and path.is_file()
    assert path.stat().st_size > 10 * 2**20  # Spark's classes, not an empty dump
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # the stale one and no .building-* left
    assert cds.jvm_options().startswith(f"-XX:SharedArchiveFile={path} ")
