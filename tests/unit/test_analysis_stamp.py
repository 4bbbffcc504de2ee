"""harness.analysis.stamp: saved tables are reused only for the dataset and outputs they were computed from."""

from __future__ import annotations

from pathlib import Path

from harness.analysis import stamp
from harness.analysis.pairing import Flaky, LatencyRow, Rate, RecoveryRow
from harness.analysis.tables import Table

PAGE = "analysis.html"


def tables() -> list[Table]:
    return [
        Table("anomaly_rate", "rates", [Rate("registration_liveness", "default", "isolate", 2, 1, 0)], Rate),
        Table("heal_to_registration", "heals", [RecoveryRow("isolate", 3, 2, 1, 10.0, 20.5, None, 30.0)], RecoveryRow),
        Table("op_latency", "ops", [], LatencyRow),
        Table("flaky", "flaky", [Flaky("t", "default", "isolate", "none", "3.8.4", 2, 1, 1, 0, "a b")], Flaky),
    ]


def dataset(out: Path) -> Path:
    part = out / "checks" / "test=t" / "date=2026-11-23" / "part-abc-00000.parquet"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"checks")
    (out / "events" / "test=t").mkdir(parents=True)
    (out / "events" / "test=t" / "part-abc-00000.parquet").write_bytes(b"events")
    for t in tables():
        (out / f"{t.name}.csv").write_text("x\n")
        (out / f"{t.name}.parquet").mkdir()
    (out / PAGE).write_text("<html>")
    return part


def test_saved_tables_come_back_equal(tmp_path: Path) -> None:
    dataset(tmp_path)
    stamp.save(tmp_path, {"/s/t/1", "/s/t/2"}, tables())
    saved = stamp.load(tmp_path, PAGE)
    assert saved is not None
    assert saved.runs == {"/s/t/1", "/s/t/2"}
    assert saved.tables == tables()
    assert saved.tables[0].rows[0].rate == 0.5


def test_staging_and_hidden_files_do_not_count(tmp_path: Path) -> None:
    dataset(tmp_path)
    stamp.save(tmp_path, set(), tables())
    (tmp_path / "checks" / "_staging-x").mkdir()
    (tmp_path / "checks" / "_staging-x" / "part.parquet").write_bytes(b"half")
    (tmp_path / "checks" / "test=t" / ".part.crc").write_bytes(b"crc")
    assert stamp.load(tmp_path, PAGE) is not None


def test_any_change_computes_them_again(tmp_path: Path) -> None:
    part = dataset(tmp_path)
    stamp.save(tmp_path, set(), tables())
    (tmp_path / "events" / "test=t" / "part-orphan-00000.parquet").write_bytes(b"orphan")
    assert stamp.load(tmp_path, PAGE) is None, "a part file added"

    stamp.save(tmp_path, set(), tables())
    part.write_bytes(b"rewritten, longer")
    assert stamp.load(tmp_path, PAGE) is None, "a part file rewritten"

    stamp.save(tmp_path, set(), tables())
    part.unlink()
    assert stamp.load(tmp_path, PAGE) is None, "a part file removed"

    stamp.save(tmp_path, set(), tables())
    (tmp_path / "flaky.csv").unlink()
    assert stamp.load(tmp_path, PAGE) is None, "an output gone"


def test_missing_or_corrupt_stamp_is_none(tmp_path: Path) -> None:
    dataset(tmp_path)
    assert stamp.load(tmp_path, PAGE) is None
    (tmp_path / stamp.STAMP).write_text("{not json")
    assert stamp.load(tmp_path, PAGE) is None
    (tmp_path / stamp.STAMP).write_text('{"fingerprint": 1}')
    assert stamp.load(tmp_path, PAGE) is None


def test_other_analysis_code_computes_them_again(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    dataset(tmp_path)
    stamp.save(tmp_path, set(), tables())
    monkeypatch.setattr(stamp, "_CODE", stamp._CODE[:-1])  # as if one of the files had changed
    assert stamp.load(tmp_path, PAGE) is None
