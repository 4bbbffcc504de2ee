"""``zkfence.EventFields`` (``checkers.udfs``) gives, line for line, the fields the Spark expressions
it stands for give (``harness.analysis.dataset.parse_lines`` with ``jvm=False``): on lines of a real
stored run, on hand-picked odd ones (wrong types, repeated keys, malformed JSON, other top-level
values) and on lines hypothesis generates."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers import udfs
from harness.analysis.dataset import ENVELOPE, OF_VALUE, PARSED, parse_lines

pytestmark = pytest.mark.integration
STORE = Path(__file__).resolve().parent.parent / "data" / "store"

ODD = [
    '{"src":"nemesis","seq":2,"t_wall":1.5,"t_mono":3,"type":"info","f":"partition","process":"nemesis",'
    '"value":{"stage":"heal","phase":"stop","instant":true,"reason":"timeout"}}',
    '{"src":"nemesis","seq":5.0,"t_wall":1e9,"t_mono":5e0,"type":"info","f":"x","process":"nemesis",'
    '"value":{"stage":{"a":[1,2]},"phase":null,"instant":"true","reason":3.25}}',
    '{"src":"nemesis","seq":"7","t_wall":"1.25","t_mono":"-0","type":true,"f":null,"process":[1,2],'
    '"value":{"instant":1,"inner":{"stage":"no"}}}',
    '{"src":"nemesis","seq":1,"f":"g","value":"text"}',
    '{"src":"nemesis","seq":1,"f":"g","value":[{"stage":"s"}]}',
    '{"src":{"a":1},"seq":123456789012345678901234,"t_wall":-0.0,"t_mono":-1,"f":"x"}',
    '{"src":"x","seq":3,"f":',
    '{"src":"nemesis","seq":3,"value":{"stage":"heal","phase":',
    '{"src":"nemesis","seq":3,"value":{"stage":"heal"},"f":"x",',
    "hello", '[{"src":"a","seq":1}]', "5", '"str"', "null", "", "{}", "   {\"src\" : \"sp\" , \"seq\" : 4 }   ",
    '{"src":"a","seq":9} junk', '{"src":"a","seq":9}{"src":"b"}',
    '{"src":"a\\u00e9\\n\\"q\\"","f":"\\ud83d\\ude00","type":"x"}',
    '{"src":"nemesis","value":{"stage":null,"stage":"t"},"value":{"reason":"r"}}',
    # each value field from the first value object that has it (as each path takes it on its own)
    '{"src":"nemesis","value":{"stage":"a","phase":null},"value":5,"value":{"stage":"b","phase":"p","x":{"phase":1}},'
    '"value":{"phase":"q","reason":null,"instant":[true]},"value":{"reason":{"r":[1,{"s":2}]},"instant":false}}',
    '{"src":"nemesis","value":{"stage":"a"},"value":{"phase":"p"},"value":{"reason":"r",',  # fails late: all null
    # a value that fails inside an array: Spark reads on from the token where it failed (hypothesis found it)
    '{"seq": [null, NaN250], "src": "nemesis"}', '{"seq": [1, NaN2], "src": "x", "f": [{"a": NaN1}], "type": "t"}',
    '{"src":"a","src":"b","seq":1,"seq":2,"f":"x","f":null}',
    '{"src":"nemesis","seq":1e400,"t_wall":1e400,"t_mono":9223372036854775808,"value":{"instant":"yes"}}',
    '{"src":"nemesis","t_wall":NaN,"seq":01,"value":{"instant":false}}',
    '{"src":"nemesis","t_wall":NaN,"t_mono":-Infinity,"value":{"instant":false}}',
    "{'src':'single','seq':'3'}", '{src:"unquoted"}',
    '{"src":"nemesis","t_wall":12345678901234567890.123,"value":{"reason":"a\\tb"}}',
    '{"src":"a","process":-0,"f":-12,"type":123456789012345678901234567}',
    '{"src":"nemesis","f":"tab\tinside","value":{"reason":"ctl\tchar"}}',
    '{"SRC":"upper","Seq":1}', '{"src":"a","seq":tru}', '{"src":"a","seq":"unterminated}',
    '{"src":"a","t_wall":{"x":[1,2}, "f":"after"}', '{"src":"a","run":{"x":[1,2}, "f":"after"}',
    '{"src":"a","seq":1,"seq":{"x":', '{"src":"a","f":"\ud800","type":{"k":"\ud800"}}',
]

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
_VALUE = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                          max_size=3), max_leaves=6)
_KEYS = st.sampled_from([*PARSED, "value", "run", "id", "other"])
_EVENT = st.dictionaries(_KEYS, st.one_of(_VALUE, st.just("nemesis"),
                                          st.dictionaries(st.sampled_from([*OF_VALUE, "x"]),
                                                          _VALUE, max_size=4)), max_size=8).map(json.dumps)
# the nemesis's events, whose value fields are read: value an object of those fields (or not an object)
_NEMESIS = st.fixed_dictionaries({"src": st.just("nemesis")}, optional={
    "value": st.one_of(st.dictionaries(st.sampled_from([*OF_VALUE, "x", "value"]), _VALUE, max_size=5), _VALUE),
    "seq": _VALUE, "f": _VALUE}).map(json.dumps)


def _variants(event: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """An event as written, cut short anywhere, in single quotes, with NaN for 1, with a null value first."""
    return st.one_of(event, event.flatmap(lambda s: st.integers(0, len(s)).map(lambda k: s[:k])),
                     event.map(lambda s: s.replace('"', "'")), event.map(lambda s: s.replace("1", "NaN")),
                     event.map(lambda s: s.replace('"value"', '"value":null,"value"')))


_LINE = st.one_of(_variants(_EVENT), _variants(_NEMESIS), st.text(max_size=20))


def fields(spark, lines: list[str], *, jvm: bool) -> list[dict]:  # noqa: ANN001
    df = spark.createDataFrame([(i, ln) for i, ln in enumerate(lines)], "i int, line string")
    return [{k: r[k] for k in ("line", *PARSED)} for r in parse_lines(df, jvm=jvm).orderBy("i").collect()]


def same(spark, lines: list[str]) -> None:  # noqa: ANN001
    got, want = fields(spark, lines, jvm=True), fields(spark, lines, jvm=False)
    for g, w in zip(got, want, strict=True):
        assert g == w, g["line"]


@pytest.fixture(scope="module")
def session(spark):  # noqa: ANN001, ANN201
    assert udfs.registered(spark, udfs.EVENT_FIELDS), "javac is on this machine: every session has the jar"
    return spark


def test_stored_runs_and_odd_lines_give_the_same_fields(session) -> None:  # noqa: ANN001
    stored = [ln for f in sorted(STORE.glob("*/*/history.jsonl")) for ln in f.read_text().splitlines()]
    assert len(stored) > 300
    got = fields(session, stored + ODD, jvm=True)
    assert sum(1 for r in got if r["src"] == "nemesis" and r["stage"] is not None) > 0  # heals were parsed
    same(session, stored + ODD)


# A few large batches: each example is two Spark jobs.
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.data_too_large, HealthCheck.too_slow])
@given(st.lists(_LINE, min_size=50, max_size=200))
def test_generated_lines_give_the_same_fields(session, lines: list[str]) -> None:  # noqa: ANN001
    same(session, lines)


def test_the_functions_struct_names_the_java_class_fields_in_their_order() -> None:
    java = (udfs.SOURCES / "zkfence" / "EventFields.java").read_text(encoding="utf-8")
    for array, names in (("FIELDS", ENVELOPE), ("OF_VALUE", OF_VALUE)):
        declared = re.search(rf"String\[\] {array} = \{{([^}}]*)\}}", java)
        assert declared is not None and tuple(re.findall(r'"(\w+)"', declared.group(1))) == names
    assert PARSED == (*ENVELOPE, *OF_VALUE)
