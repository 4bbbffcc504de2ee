"""``zkfence.HistoryLines`` (the ingest's lines read and parsed in the task that reads their files)
gives the rows that Spark's text source, the join of each line's file to its run, the blank-line filter
and ``parse_lines`` give (``harness.analysis.dataset._lines_by_spark``): on the stored runs, on files of
odd lines with every line ending, a byte order mark, bytes that are no UTF-8 and lines of spaces, and
on files hypothesis writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers import udfs
from harness.analysis import dataset
from harness.analysis.runs import CheckRow
from tests.integration.test_event_fields import _LINE, ODD

pytestmark = pytest.mark.integration
STORE = Path(__file__).resolve().parent.parent / "data" / "store"
ENDINGS = (b"\n", b"\r\n", b"\r")


def _run(run_dir: Path, test: str, date: str) -> CheckRow:
    return CheckRow(str(run_dir), run_dir.name, test, date, None, "none", "", "", "{}", "", "valid", 0,
                    "c", "valid", 0)


def _rows(spark, runs: dict[str, CheckRow], *, jvm: bool) -> list[tuple]:  # noqa: ANN001
    files = {str(Path(d) / "history.jsonl"): r for d, r in runs.items()}
    sizes = {f: Path(f).stat().st_size for f in files}
    df = (dataset._lines_in_jvm(spark, files, sizes, 3, "b") if jvm
          else dataset._lines_by_spark(spark, files, 3, "b"))
    assert df.columns == [*dataset.LINES, "parsed_version", *dataset.PARSED]
    return sorted((tuple(r) for r in df.collect()), key=repr)


def same(spark, runs: dict[str, CheckRow]) -> list[tuple]:  # noqa: ANN001
    got, want = _rows(spark, runs, jvm=True), _rows(spark, runs, jvm=False)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == w
    return got


@pytest.fixture(scope="module")
def session(spark):  # noqa: ANN001, ANN201
    assert udfs.jar_loaded(spark), "javac is on this machine: every session has the jar"
    return spark


def _write(root: Path, name: str, data: bytes, test: str = "t", date: str = "2026-11-01") -> tuple[str, CheckRow]:
    run_dir = root / test / name
    run_dir.mkdir(parents=True)
    (run_dir / "history.jsonl").write_bytes(data)
    return str(run_dir), _run(run_dir, test, date)


def test_stored_runs_and_odd_files_give_the_same_rows(session, tmp_path: Path) -> None:  # noqa: ANN001
    runs = {str(d): _run(d, d.parent.name, "2026-11-0" + str(i % 3 + 1))
            for i, d in enumerate(sorted(p.parent for p in STORE.glob("*/*/history.jsonl")))}
    odd = [ln.encode("utf-8", "surrogatepass") for ln in ODD]
    files = {
        "endings": b"".join(ln + ENDINGS[i % 3] for i, ln in enumerate(odd)),
        "bom": b"\xef\xbb\xbf" + odd[0] + b"\n" + odd[1],  # and no final line end
        "bom-alone": b"\xef\xbb\xbf\n" + odd[0],
        "not-utf8": b'{"src":"a\xff\xfe","f":"x"}\n{"src":"nemesis","value":{"stage":"\xc3("}}\r\n',
        "blank": b"   \n\n\r\n \t \n" + odd[2] + b"\n  \r",
        "crlf-split": b"x" * 70_000 + b"\r\n" + odd[3] + b"\r",  # a line past the reader's 64 KiB buffer
        "empty": b"",
    }
    for i, (name, data) in enumerate(files.items()):
        run_dir, row = _write(tmp_path, name, data, test=f"t{i % 2}", date=f"2026-11-0{i % 3 + 1}")
        runs[run_dir] = row
    rows = same(session, runs)
    line, src = dataset.LINES.index("line"), len(dataset.LINES) + 1
    assert any(r[src] == "nemesis" for r in rows) and len(rows) > 300
    assert not any(r[line].strip(" ") == "" for r in rows)  # blank lines are no rows


# Each example is two Spark jobs over a few files.
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.data_too_large, HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(_LINE, st.sampled_from(ENDINGS)), max_size=40), min_size=1, max_size=5))
def test_generated_files_give_the_same_rows(session, tmp_path_factory, files: list) -> None:  # noqa: ANN001
    root = tmp_path_factory.mktemp("lines")
    runs = dict(_write(root, f"r{i}", b"".join(ln.encode("utf-8", "surrogatepass") + end for ln, end in lines),
                       test=f"t{i % 2}")
                for i, lines in enumerate(files))
    same(session, runs)
