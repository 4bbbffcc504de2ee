"""`harness check` end to end: exit codes, --json, bad input, store dirs and --write."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checkers.testing import EventLog
from harness.analysis.runs import count_events
from harness.cli import main

GOOD = "INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:ok\t:write\t1\n" \
       "INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\t1\n"
BAD = GOOD.replace(":ok\t:read\t1", ":ok\t:read\t2")


def hard(path: Path) -> Path:
    """14 concurrent writes and an impossible read: exhausts any small budget."""
    lines = [f"{{:process {i}, :type :invoke, :f :write, :value {i}}}" for i in range(16)]
    lines += [f"{{:process {i}, :type :ok, :f :write, :value {i}}}" for i in range(16)]
    lines += ["{:process 99, :type :invoke, :f :read, :value nil}", "{:process 99, :type :ok, :f :read, :value 77}"]
    path.write_text("[" + "\n".join(lines) + "]\n")
    return path


def run(capsys, *argv: str) -> tuple[int, list[dict], str]:  # noqa: ANN001
    rc = main(["check", *argv])
    out, err = capsys.readouterr()
    rows = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    return rc, rows, err


def test_local_exit_codes(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    (tmp_path / "g.log").write_text(GOOD)
    (tmp_path / "b.log").write_text(BAD)
    rc, rows, _ = run(capsys, "--local", "--json", str(tmp_path / "g.log"))
    assert rc == 0 and rows[0]["valid"] is True and rows[0]["path"].endswith("g.log")
    rc, rows, _ = run(capsys, "--local", "--json", str(tmp_path / "g.log"), str(tmp_path / "b.log"))
    assert rc == 1 and [r["valid"] for r in rows] == [True, False]
    assert rows[1]["anomalies"][0]["event_ids"] == [f"{tmp_path / 'b.log'}:3", f"{tmp_path / 'b.log'}:4"]
    rc, rows, _ = run(capsys, "--local", "--json", "--budget-seconds", "0.001", str(hard(tmp_path / "h.edn")))
    assert rc == 2 and rows[0]["valid"] == "unknown"


def test_bad_input_is_254(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    rc, _, err = run(capsys, "--local", str(tmp_path / "missing.log"))
    assert rc == 254 and "missing.log" in err
    (tmp_path / "x.edn").write_text('[{:process 0 :type :invoke\n :f :cas :value "[" }\n')
    rc, _, err = run(capsys, "--local", str(tmp_path / "x.edn"))
    assert rc == 254 and f"{tmp_path / 'x.edn'}:1:" in err
    rc, _, err = run(capsys, "--local", "--model", "bogus", str(tmp_path / "x.edn"))
    assert rc == 254 and "--model" in err


@pytest.mark.integration
def test_store_dir_and_reference_share_one_session(tmp_path: Path, capsys, spark) -> None:  # noqa: ANN001
    log = EventLog("run1")
    log.emit("agent:1", "controller_elected", process=1, broker_id=1, controller_epoch=1, epoch_zk_version=0)
    log.emit("agent:1", "controller_zk_write", "ok", 1, controller_epoch=1, checked_version=None, op="set",
             path="/p", zxid=5, error=None)
    store = tmp_path / "store [1] {a,b}* a+b%41" / "t" / "1"  # Spark reads paths as globs and URIs: read as named
    log.write(store / "history.jsonl")
    (tmp_path / "g.log").write_text(GOOD)
    torn = tmp_path / "torn.jsonl"
    torn.write_text((store / "history.jsonl").read_text() + '{"src": "agent:1", "se')
    (store / "run.json").write_text(json.dumps({"test": "t", "seed": 11, "toggles": {"controller_fencing": "off"}}))
    junit = tmp_path / "junit.xml"
    rc, rows, _ = run(capsys, "--json", "--write", "--junit", str(junit), str(store), str(tmp_path / "g.log"),
                      str(torn))
    assert rc == 1
    (suite,) = ET.parse(junit).getroot().findall("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}  # one testcase per checked path
    assert list(cases) == ["t · controller_fencing=off · seed 11", str(tmp_path / "g.log"), str(torn)]
    fenced = cases["t · controller_fencing=off · seed 11"]
    (failure,) = fenced.findall("failure")
    assert "agent:1/2" in failure.text and "[controller_write_fencing]" in failure.text
    assert re.match(r"\d+ anomal(y|ies) from .*controller_write_fencing", failure.get("message"))
    props = {p.get("name"): p.get("value") for p in fenced.iter("property")}
    assert (props["seed"], props["run_dir"]) == ("11", str(store))
    assert cases[str(tmp_path / "g.log")].find("failure") is None
    assert [r["valid"] for r in rows[1:2]] == [True]
    assert rows[0]["valid"] is False and rows[0]["path"] == str(store)
    assert any(a["checker"] == "controller_write_fencing" and a["event_ids"] == ["agent:1/2"] for a in rows[0]["anomalies"])
    assert json.loads((store / "results-check.json").read_text())["valid"] is False
    assert rows[2]["stats"]["events"] == 2  # the torn last line is tolerated
    (tmp_path / "broken.jsonl").write_text('{"src": "a", "seq": 1, "type": "event", "f": "x", "t_wall": 1}\nnot json\n')
    rc, _, err = run(capsys, str(tmp_path / "broken.jsonl"))
    assert rc == 254 and f"{tmp_path / 'broken.jsonl'}:2:" in err
    # among several paths, a bad one is skipped with a one-line warning and the others are checked
    (tmp_path / "empty").mkdir()
    rc, rows, err = run(capsys, "--json", str(tmp_path / "broken.jsonl"), str(tmp_path / "empty"),
                        str(tmp_path / "gone"), str(store))
    assert rc == 1  # the good store dir's anomaly still decides
    by_path = {r["path"]: r for r in rows}
    assert by_path[str(store)]["valid"] is False
    for bad in ("broken.jsonl", "empty", "gone"):
        assert by_path[str(tmp_path / bad)]["valid"] == "unknown" and by_path[str(tmp_path / bad)]["error"]
    assert len([ln for ln in err.splitlines() if ln.startswith("harness check: skipping")]) == 3
    rc, _, err = run(capsys, str(tmp_path / "empty"), str(tmp_path / "gone"))
    assert rc == 254 and "none of the 2 paths" in err


@pytest.mark.integration
def test_bytes_that_are_not_utf8_name_their_line_on_spark_too(tmp_path: Path, capsys, spark) -> None:  # noqa: ANN001
    """Spark's JSON source passes an overlong encoding or an encoded surrogate inside a string through
    as it is (other bytes that are not UTF-8 fail the line), so such a line was checked on Spark where
    the history's validator names it. Now it is that one-line error (exit 254, ``file:line``); U+FFFD
    written as valid UTF-8 is a character like any other, and the history is checked as without it."""
    log = EventLog("run1")
    log.emit("agent:1", "controller_elected", process=1, broker_id=1, controller_epoch=1, epoch_zk_version=0)
    log.emit("agent:1", "controller_zk_write", "ok", 1, controller_epoch=1, checked_version=None, op="set",
             path="/p", zxid=5, error=None)
    log.write(tmp_path / "good.jsonl")
    text = (tmp_path / "good.jsonl").read_bytes()
    assert text.count(b'"/p"') == 1
    (tmp_path / "char.jsonl").write_bytes(text.replace(b'"/p"', '"/p\ufffd"'.encode()))
    for name, raw in (("overlong", b"\xc0\xaf"), ("surrogate", b"\xed\xa0\x80"), ("start", b"\xff")):
        (tmp_path / f"{name}.jsonl").write_bytes(text.replace(b'"/p"', b'"/p' + raw + b'"'))
        rc, _, err = run(capsys, str(tmp_path / f"{name}.jsonl"))
        assert rc == 254 and f"{tmp_path / name}.jsonl:2: not a valid event: 'utf-8' codec can't decode" in err
    rc, rows, _ = run(capsys, "--json", str(tmp_path / "good.jsonl"), str(tmp_path / "char.jsonl"))
    assert rc == 1 and [r["valid"] for r in rows] == [False, False]
    assert [r["stats"]["events"] for r in rows] == [2, 2]
    assert [(a["checker"], a["event_ids"]) for a in rows[0]["anomalies"]] == [
        (a["checker"], a["event_ids"]) for a in rows[1]["anomalies"]]


@pytest.mark.integration
def test_parquet_keeps_each_run_in_kind_order(tmp_path: Path, capsys, spark) -> None:  # noqa: ANN001
    """--parquet: every event of both stored runs, a directory per run, each file's rows in kind then
    history-position order (what lets a plan's scan skip the other kinds' pages); a re-check replaces
    its run's rows instead of adding to them."""
    runs = sorted((Path(__file__).parent.parent / "data" / "store" / "isolate-broker").glob("2*"))
    out = tmp_path / "events"
    rc, _, _ = run(capsys, "--json", "--parquet", str(out), *map(str, runs))
    assert rc == 0
    lines = {json.loads(r.joinpath("run.json").read_text())["run_id"]: count_events(r / "history.jsonl") for r in runs}
    assert sorted(p.name for p in out.glob("run=*")) == sorted(f"run={k}" for k in lines)

    def counts() -> dict[str, int]:
        return {r["run"]: r["count"] for r in spark.read.parquet(str(out)).groupBy("run").count().collect()}

    assert counts() == lines
    for part in out.glob("run=*/*.parquet"):
        got = [(r["f"], r["idx"]) for r in spark.read.parquet(str(part)).select("f", "idx").collect()]
        assert got == sorted(got) and len({f for f, _ in got}) > 1, part
    rc, _, _ = run(capsys, "--json", "--parquet", str(out), str(runs[0]))
    assert rc == 0 and counts() == lines
