"""The reference histories parsed and paired in the JVM (``zkfence.RefOps``), then searched from Arrow
columns (``checkers.ref_search``) or, for the kv model, in the JVM where they are read
(``checkers.ref_jvm``, ``zkfence.KvSearch``), give the ops ``checkers.parsers`` gives, and the
verdicts and cited anomalies of ``checkers.linearizability`` over those ops: on every Porcupine
history of the reference corpus, on the parser tests' own histories, on odd but legal spellings and
(the JVM search against the Python one, part by part) on histories hypothesis writes; a line the
JVM parser does not read sends its history back to the driver's parser, which reads it or names it.

Knossos' EDN (multi-line forms) is not read by this path: ``harness check`` parses it on the driver.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers import linearizability, models, parsers, ref_jvm, ref_ops, ref_search, udfs
from checkers.ops import Op
from checkers.testing import shared_histories
from checkers.wgl import UNKNOWN, Part, run_parts
from tests.unit.test_checkers_parsers import ETCD

pytestmark = pytest.mark.integration
ROOT = shared_histories()
ROWS = list(csv.DictReader(open(ROOT / "VERDICTS.tsv"), delimiter="\t")) if ROOT else []
CORPUS = [r["file"] for r in ROWS if ROOT and parsers.detect_format(ROOT / r["file"]) in ref_ops.MODELS]
EXPECTED = {r["file"]: r["expected"] == "valid" for r in ROWS}
BUDGET = 20.0
KV = '{:process 0, :type :invoke, :f :get, :key "7", :value nil}\n{:process 0, :type :ok, :f :get, :key "7", :value ""}\n'
# legal spellings this path reads as the parsers do: CRLF line ends, blank lines, EDN comments and
# commas, an op never completed, a :fail/:info with nothing pending, a :fail :read, a :fail put
ODD_KV = (
    '{:process 0, :type :invoke, :f :put, :key "a", :value "x"}\r\n'
    "\r\n"
    "; a comment\n"
    ',{:process 1, :type :invoke, :f :get, :key "a", :value nil},\n'
    '{:process 0, :type :ok, :f :put, :key "a", :value "x"}\n'
    '{:process 2, :type :info, :f :get, :key "b", :value nil}\n'
    '{:process 1, :type :ok, :f :get, :key "a", :value "x"}\n'
    '{:process 3, :type :invoke, :f :put, :key "b", :value "y"}\n'
    '{:process 3, :type :fail, :f :put, :key "b", :value "y"}\n'
    '{:process 4, :type :invoke, :f :append, :key "b", :value "z"}'  # no newline at the end; never completed
)
ODD_ETCD = ETCD.replace("INFO  jepsen.util - 2", "2").replace("\n", "\r\n", 2) + "\n   \n0 :invoke :write 3\n"
# legal for the parsers, declined by the JVM path (it reads canonical lines only)
DECLINED_OK = {
    "order.txt": '{:type :invoke, :process 0, :f :get, :key "7", :value nil}\n'
                 '{:process 0, :type :ok, :f :get, :key "7", :value ""}\n',
    "escape.txt": KV.replace('""', '"a\\"b"'),
    "unicode.txt": KV.replace('""', '"\u00e9"'),
    "etcd-plus.log": "+0 :invoke :read nil\n0 :ok :read nil\n",
}
# wrong for the parsers too: declined, then the parser names the line
DECLINED_BAD = {
    "twice.txt": KV.replace(":ok", ":invoke"),
    "orphan.txt": KV.splitlines()[1] + "\n",
    "etcd-orphan.log": "INFO  jepsen.util - 0\t:ok\t:read\t1\n",
    "etcd-cas.log": "INFO  jepsen.util - 0\t:invoke\t:cas\t[1]\n",
    "etcd-f.log": "0 :invoke :read nil\n0 :ok :write nil\n",
    "etcd-type.log": "0 :invoke :read nil\n0 :odd :read nil\n",
    "etcd-value.log": "0 :invoke :write x1\n0 :ok :write x1\n",
}


@pytest.fixture(scope="module")
def jvm(spark):  # noqa: ANN001, ANN201
    if not udfs.jar_loaded(spark):
        pytest.skip("the JVM functions are not built (no javac, or HARNESS_SPARK_UDFS=off)")
    return spark


def ref(name: str, path: Path) -> ref_ops.RefFile:
    fmt = ref_ops.ETCD if path.suffix == ".log" else ref_ops.KV
    return ref_ops.RefFile(name, str(path), fmt, str(parsers.DEFAULT_MODEL[fmt]))


def local_files(tmp: Path, texts: dict[str, str]) -> list[ref_ops.RefFile]:
    out = []
    for name, text in texts.items():
        (tmp / name).write_bytes(text.encode())
        out.append(ref(name, tmp / name))
    return out


def corpus_files() -> list[ref_ops.RefFile]:
    if ROOT is None:
        pytest.skip("reference corpus not found: set HARNESS_SHARED_HISTORIES or put it at ../shared/histories")
    return [ref(f, ROOT / f) for f in CORPUS]


def jvm_ops(spark, files: list[ref_ops.RefFile]) -> tuple[dict[str, list[Op]], set[str]]:  # noqa: ANN001
    """Each history's ops as the search stage builds them, in line order; the histories declined."""
    table = ref_ops.ops(spark, files).toArrow()
    parts, bad = ref_search.parts_of(table, files)
    out: dict[str, list[Op]] = {f.name: [] for f in files}
    for p in parts:
        out[p.history] += p.ops
    return {h: sorted(o, key=lambda o: o.line) for h, o in out.items()}, {files[h].name for h in bad}


def fields(op: Op) -> tuple:
    return (op.process, op.f, op.input, op.output, op.call, op.ret, op.line, op.ret_line)


def assert_same_ops(spark, files: list[ref_ops.RefFile]) -> None:  # noqa: ANN001
    got, declined = jvm_ops(spark, files)
    assert not declined
    for f in files:
        want = parsers.load(f.path, f.fmt)[1]
        assert [fields(o) for o in got[f.name]] == [fields(o) for o in want], f.name


def test_corpus_ops_are_the_parsers(jvm) -> None:  # noqa: ANN001
    files = corpus_files()
    assert len(files) >= 58  # every Porcupine history: 52 etcd logs, 6 kv
    assert_same_ops(jvm, files)


def test_odd_spellings_give_the_parsers_ops(jvm, tmp_path: Path) -> None:  # noqa: ANN001
    assert_same_ops(jvm, local_files(tmp_path, {"kv.txt": KV, "etcd.log": ETCD, "odd.txt": ODD_KV,
                                                "odd-etcd.log": ODD_ETCD, "empty.txt": "\n\n"}))


def test_other_spellings_and_errors_are_left_to_the_parsers(jvm, tmp_path: Path) -> None:  # noqa: ANN001
    files = local_files(tmp_path, {**DECLINED_OK, **DECLINED_BAD})
    res, declined = ref_search.check_files(jvm, files, budget_seconds=BUDGET)
    assert set(declined) == {f.name for f in files} and not res
    for f in files:
        if f.name in DECLINED_OK:
            assert parsers.load(f.path, f.fmt)[1]
        else:
            with pytest.raises(parsers.ParseError, match=f"^{f.path}:\\d+: "):
                parsers.load(f.path, f.fmt)


def test_corpus_verdicts_and_anomalies_are_the_search_over_the_parsers_ops(jvm) -> None:  # noqa: ANN001
    files = corpus_files()
    got, declined = ref_search.check_files(jvm, files, budget_seconds=BUDGET)
    assert not declined
    old = linearizability.check_spark(jvm, [(f.name, parsers.load(f.path, f.fmt)[1], models.make_model(f.model))
                                            for f in files], budget_seconds=BUDGET)
    for f in files:
        r = got[f.name]
        assert r["valid"] is EXPECTED[f.name] is old[f.name]["valid"], (f.name, r)
        assert r["stats"]["ops"] == old[f.name]["stats"]["ops"] and r["stats"]["parts"] == old[f.name]["stats"]["parts"]
        if r["valid"] is False:
            # which illegal part is found first is a race between tasks; each one cited must be what the
            # search says of that part over the parser's ops, word for word
            ops = parsers.load(f.path, f.fmt)[1]
            parts = dict(models.make_model(f.model).partition(ops))
            assert r["anomalies"]
            for a in r["anomalies"]:
                key = a.get("key")
                part_ops = parts[key] if key is not None else ops
                (want,) = run_parts([Part(f.name, key, part_ops, models.make_model(f.model))], budget_seconds=BUDGET)
                assert want.valid is False
                assert a["message"] == want.message
                assert a["event_ids"] == [f"{f.name}:{n}" for n in want.lines]


def test_c50_bad_stops_its_other_parts(jvm) -> None:  # noqa: ANN001
    (f,) = [x for x in corpus_files() if x.name == "porcupine/kv/c50-bad.txt"]
    r = ref_search.check_files(jvm, [f], budget_seconds=BUDGET)[0][f.name]
    assert r["valid"] is False and r["stats"]["parts_unknown"] == 0
    # the hopeless parts never finish on their own: the board must have stopped them
    assert r["stats"]["parts_checked"] < r["stats"]["parts"]


def test_harness_check_takes_this_path_and_the_parser_for_the_rest(jvm, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    import json

    from harness.cli import main

    (tmp_path / "kv.txt").write_text(KV)
    (tmp_path / "order.txt").write_text(DECLINED_OK["order.txt"])
    (tmp_path / "bad.log").write_text(DECLINED_BAD["etcd-orphan.log"])
    (tmp_path / "stale.log").write_text(ETCD.replace(":ok\t:read\tnil", ":ok\t:read\t5"))
    rc = main(["check", "--json", *(str(tmp_path / n) for n in ("kv.txt", "order.txt", "bad.log", "stale.log"))])
    out, err = capsys.readouterr()
    rows = {r["path"]: r for r in (json.loads(x) for x in out.splitlines() if x.startswith("{"))}
    assert rc == 1
    assert rows[str(tmp_path / "kv.txt")]["stats"]["engine"] == "spark-jvm-search"
    assert rows[str(tmp_path / "order.txt")]["valid"] is True and rows[str(tmp_path / "order.txt")]["stats"]["engine"] == "spark"
    assert f"{tmp_path / 'bad.log'}:1:" in err
    stale = rows[str(tmp_path / "stale.log")]
    assert stale["valid"] is False and stale["anomalies"][0]["event_ids"] == [f"{tmp_path / 'stale.log'}:1",
                                                                              f"{tmp_path / 'stale.log'}:3"]


STEPS = 200_000  # a steps budget ends a part at the same step in both searches (a CPU budget would not)


def assert_parts_are_the_python_search(spark, files: list[ref_ops.RefFile]) -> int:  # noqa: ANN001
    """Every key's part of every file, searched in the JVM with no early stop, against the Python search
    of the parser's ops for that part: verdict, steps, and an illegal part's message and lines."""
    rows = ref_jvm.part_rows(spark, files, budget_seconds=None, budget_steps=STEPS, stop_on_illegal=False)
    assert not [r for r in rows if r.kind == "err"]
    checked = 0
    for h, f in enumerate(files):
        parts = dict(models.make_model("kv").partition(parsers.load(f.path, f.fmt)[1]))
        got = {r.key: r for r in rows if r.hist == h and r.kind == "part"}
        assert set(got) == set(parts), f.name
        for key, ops in parts.items():
            (want,) = run_parts([Part(f.name, key, ops, models.make_model("kv"))], budget_seconds=None,
                                budget_steps=STEPS)
            r = got[key]
            assert (ref_jvm._VALID[r.valid], r.steps, r.ops) == (want.valid, want.steps, len(ops)), (f.name, key)
            if want.valid is False:
                assert ref_jvm.message(r) == (want.message, want.lines), (f.name, key)
            checked += 1
    return checked


def test_the_jvm_search_is_the_python_search_on_every_kv_part_of_the_corpus(jvm) -> None:  # noqa: ANN001
    files = [f for f in corpus_files() if ref_jvm.applies(f)]
    assert len(files) == 6
    assert assert_parts_are_the_python_search(jvm, files) >= 58


@st.composite
def kv_histories(draw) -> str:  # noqa: ANN001
    """Porcupine kv lines of a few processes on a few keys: gets that read a value some put or append
    wrote (or not), ops that fail, time out (:info) or never complete."""
    lines: list[str] = []
    pending: dict[int, tuple[str, str, str | None]] = {}
    written = ["", "a", "b"]
    for _ in range(draw(st.integers(1, 40))):
        p = draw(st.integers(0, 4))
        if p in pending:
            f, k, v = pending.pop(p)
            typ = draw(st.sampled_from(["ok", "ok", "ok", "fail", "info"]))
            out = draw(st.sampled_from(written)) if f == "get" else v
            val = "nil" if out is None else f'"{out}"'
            lines.append(f'{{:process {p}, :type :{typ}, :f :{f}, :key "{k}", :value {val}}}')
            continue
        f = draw(st.sampled_from(["get", "put", "append"]))
        k = draw(st.sampled_from("xy"))
        v = None if f == "get" else draw(st.sampled_from(["a", "b", "ab"]))
        written.append(v or "")
        pending[p] = (f, k, v)
        val = "nil" if v is None else f'"{v}"'
        lines.append(f'{{:process {p}, :type :invoke, :f :{f}, :key "{k}", :value {val}}}')
    return "\n".join(lines) + "\n"


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(kv_histories(), min_size=1, max_size=3))
def test_the_jvm_search_is_the_python_search_on_generated_histories(jvm, tmp_path: Path, texts: list[str]) -> None:  # noqa: ANN001
    files = local_files(tmp_path, {f"h{i}.txt": t for i, t in enumerate(texts)})
    assert_parts_are_the_python_search(jvm, files)


def test_a_search_over_its_share_of_the_heap_is_unknown_never_valid(jvm, monkeypatch) -> None:  # noqa: ANN001
    (f,) = [x for x in corpus_files() if x.name == "porcupine/kv/c50-ok.txt"]
    monkeypatch.setattr(ref_jvm, "HEAP_SHARE", 1e-9)  # a few bytes: the first slice of any part passes it
    r = ref_search.check_files(jvm, [f], budget_seconds=BUDGET)[0][f.name]
    assert r["valid"] == UNKNOWN and r["stats"]["parts_unknown"] >= 1
    assert "memory budget exhausted" in r["anomalies"][0]["message"]


def test_a_put_of_nil_is_left_to_the_parser(jvm, tmp_path: Path) -> None:  # noqa: ANN001
    (f,) = local_files(tmp_path, {"nil.txt": KV.replace(":get", ":put").replace('""', "nil")})
    res, declined = ref_search.check_files(jvm, [f], budget_seconds=BUDGET)
    assert declined == ["nil.txt"] and not res
    assert parsers.load(f.path, f.fmt)[1][0].input == ("put", "7", None)
