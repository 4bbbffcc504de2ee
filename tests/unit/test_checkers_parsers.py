from __future__ import annotations

from pathlib import Path

import pytest

from checkers.ops import OPEN, UNKNOWN
from checkers.parsers import (
    ParseError,
    detect_format,
    parse_knossos,
    parse_porcupine_etcd,
    parse_porcupine_kv,
)

ETCD = """INFO  jepsen.util - 0\t:invoke\t:read\tnil
INFO  jepsen.util - 1\t:invoke\t:cas\t[3 0]
INFO  jepsen.util - 0\t:ok\t:read\tnil
INFO  jepsen.util - 1    :fail    :cas    [3 0]
INFO  jepsen.util - 2\t:invoke\t:write\t4
INFO  jepsen.util - 2\t:info\t:write\t:timed-out
INFO  jepsen.util - 3\t:invoke\t:read\tnil
INFO  jepsen.util - 3\t:fail\t:read\t:timed-out
"""


def test_etcd_semantics() -> None:
    r, cas, w, r2 = parse_porcupine_etcd("e.log", ETCD)
    assert (r.input, r.output, r.call, r.ret) == (("read", None), None, 1, 3)
    assert (cas.input, cas.output, cas.ret) == (("cas", (3, 0)), False, 4)  # :fail :cas is a real answer
    assert w.ret == OPEN and w.output is UNKNOWN  # :info stays open
    assert r2.ret == OPEN and r2.output is UNKNOWN  # :fail :read :timed-out is unknown


def test_kv_and_knossos() -> None:
    kv = '{:process 0, :type :invoke, :f :get, :key "7", :value nil}\n{:process 0, :type :ok, :f :get, :key "7", :value ""}\n'
    (op,) = parse_porcupine_kv("k.txt", kv)
    assert (op.input, op.output) == (("get", "7", None), "")
    kn = """[{:process 0 :type :invoke :f :write :value 1}
    {:process :nemesis :type :info :f :start :value "a [b] #c"}
    {:process 1 :type :invoke :f :cas :value [1 2]}
    {:process 0 :type :ok :f :write :value 1}
    {:process 1 :type :fail :f :cas :value [1 2]}
    {:process 2 :type :invoke :f :read :value nil}
    {:process 2 :type :ok :f :read :value nil}
    {:process 3 :type :invoke :f :read :value nil}]"""
    w, r, r3 = parse_knossos("h.edn", kn)
    assert w.input == ("write", 1) and w.ret == 3
    assert r.output is UNKNOWN and r.ret != OPEN  # a read of nil is always legal
    assert r3.ret == OPEN  # never completed
    assert [o.index for o in (w, r, r3)] == [0, 1, 2]  # the :fail cas is gone


@pytest.mark.parametrize(
    ("fn", "text", "where"),
    [
        (parse_porcupine_etcd, "INFO  jepsen.util - 0\t:ok\t:read\t1\n", "e:1:"),
        (parse_porcupine_etcd, "INFO  jepsen.util - 0\t:invoke\t:cas\t[1]\n", "e:1:"),
        (parse_porcupine_kv, '{:process 0, :type :invoke, :f :get, :key "1", :value nil}\n{:process 0}\n', "e:2:"),
        (parse_knossos, "[{:process 0 :type :invoke :f :cas :value 3}]", "e:1:"),
    ],
)
def test_errors_name_file_and_line(fn, text: str, where: str) -> None:  # noqa: ANN001
    with pytest.raises(ParseError, match=f"^{where}"):
        fn("e", text)


def test_detect(tmp_path: Path) -> None:
    cases = {
        "a.log": "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n",
        "b.txt": '{:process 0, :type :invoke, :f :get, :key "7", :value nil}\n',
        "c.edn": "[{:process 0}]",
        "d.jsonl": '{"src": "x"}\n',
    }
    want = ["porcupine-etcd", "porcupine-kv", "knossos", "jsonl"]
    for (name, text), fmt in zip(cases.items(), want, strict=True):
        (tmp_path / name).write_text(text)
        assert detect_format(tmp_path / name) == fmt
    (tmp_path / "e.txt").write_text("")
    with pytest.raises(ParseError, match="e.txt:1:"):
        detect_format(tmp_path / "e.txt")
