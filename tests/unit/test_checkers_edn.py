from __future__ import annotations

import pytest

from checkers.edn import EdnError, Keyword, read_all, read_items, read_one


def test_scalars_and_collections() -> None:
    v = read_one('{:a "x]#{" :b [1 -2 #{3}] :c (nil true false 1.5 12N) :d \\a}')
    assert v == {"a": "x]#{", "b": (1, -2, frozenset({3})), "c": (None, True, False, 1.5, 12), "d": "a"}
    assert isinstance(next(iter(v)), Keyword)


def test_comments_commas_discard_tags_escapes() -> None:
    text = '; head\n[{:s "a\\"b;c", :t #inst "2020"} ,, #_ {:gone 1} :k] ; tail'
    assert read_one(text) == ({"s": 'a"b;c', "t": "2020"}, "k")


def test_items_carry_their_lines() -> None:
    items = read_items("[{:a 1}\n ; c\n {:a 2}\n]", "f.edn")
    assert [(d["a"], line) for d, line in items] == [(1, 1), (2, 3)]
    assert [line for _, line in read_items("{:a 1}\n{:a 2}\n")] == [1, 2]


@pytest.mark.parametrize(
    ("text", "line"),
    [("[1 2\n", 1), ("\n\n(1 2]", 3), ('[\n"abc', 2), ("{:a}", 1), ("[1]\n)", 2)],
)
def test_errors_name_file_and_line(text: str, line: int) -> None:
    with pytest.raises(EdnError, match=rf"^h\.edn:{line}:"):
        read_all(text, "h.edn")
