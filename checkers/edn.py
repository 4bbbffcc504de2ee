"""A small EDN reader: enough for Jepsen/Knossos histories and Porcupine kv lines.

Supports ``;`` comments, commas as whitespace, strings (with escapes; brackets and ``#`` inside
are just characters), keywords, symbols (``nil``/``true``/``false``), integers (``N`` suffix),
floats, characters, vectors, lists, maps, sets ``#{}``, discard ``#_`` and tagged literals
(``#inst "..."`` reads as the tagged value). Vectors and lists become tuples, maps dicts, sets
frozensets, keywords :class:`Keyword`. Errors name ``file:line``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any


class EdnError(ValueError):
    """Malformed EDN; the message starts with ``<file>:<line>:``."""


class Keyword(str):
    """An EDN keyword (``:read`` reads as ``Keyword("read")``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f":{str(self)}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Keyword, (str(self),))


class Symbol(str):
    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (Symbol, (str(self),))


_TOKEN = re.compile(
    r"""
    (?P<ws>[\s,]+)
  | (?P<comment>;[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<open>\#\{|[\[\({])
  | (?P<close>[\]\)}])
  | (?P<discard>\#_)
  | (?P<tag>\#[A-Za-z][^\s,\[\](){}"]*)
  | (?P<char>\\(?:newline|space|tab|return|u[0-9a-fA-F]{4}|.))
  | (?P<atom>[^\s,\[\](){}";]+)
    """,
    re.VERBOSE | re.DOTALL,
)
_INT = re.compile(r"[+-]?\d+N?$")
_FLOAT = re.compile(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?M?$")
_CLOSE_FOR = {"[": "]", "(": ")", "{": "}", "#{": "}"}
_ESC = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/"}
_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r"}


MAX_DEPTH = 200  # collections nested deeper are refused: the reader recurses per level
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def _unescape(body: str) -> str:
    """A string token's body with its escapes read; ValueError (its why) for a bad one. ``\\uXXXX``
    are UTF-16 code units as in Clojure: a surrogate pair is one character, a lone surrogate refused."""
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n == "u":
                hexits = body[i + 2 : i + 6]
                if not _HEX4.fullmatch(hexits):
                    raise ValueError(f"bad \\u escape {body[i : i + 6]!r} (four hex digits expected)")
                code, i = int(hexits, 16), i + 6
                if 0xD800 <= code < 0xDC00 and body[i : i + 2] == "\\u" and _HEX4.fullmatch(body[i + 2 : i + 6]) \
                        and 0xDC00 <= (low := int(body[i + 2 : i + 6], 16)) < 0xE000:
                    code, i = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), i + 6
                elif 0xD800 <= code < 0xE000:
                    raise ValueError(f"lone surrogate \\u{hexits} in a string")
                out.append(chr(code))
                continue
            out.append(_ESC.get(n, n))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _atom(tok: str) -> Any:
    if tok == "nil":
        return None
    if tok == "true":
        return True
    if tok == "false":
        return False
    if tok[0] == ":":
        return Keyword(tok[1:])
    if _INT.match(tok):
        return int(tok.rstrip("N"))  # ValueError past Python's digit limit: the caller names the line
    if _FLOAT.match(tok):
        return float(tok.rstrip("M"))
    return Symbol(tok)


class _Reader:
    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.line = 1
        self.toks = self._tokens()
        self.peeked: tuple[str, str, int] | None = None
        self.depth = 0

    def _tokens(self) -> Iterator[tuple[str, str, int]]:
        pos = 0
        text = self.text
        n = len(text)
        while pos < n:
            m = _TOKEN.match(text, pos)
            if m is None:
                raise EdnError(f"{self.name}:{self.line}: unreadable EDN near {text[pos : pos + 20]!r}")
            kind = m.lastgroup or ""
            tok = m.group()
            line = self.line
            self.line += tok.count("\n")
            pos = m.end()
            if kind in ("ws", "comment"):
                continue
            yield kind, tok, line

    def next(self) -> tuple[str, str, int] | None:
        if self.peeked is not None:
            t, self.peeked = self.peeked, None
            return t
        return next(self.toks, None)

    def read(self, tok: tuple[str, str, int] | None = None) -> Any:
        """Read one form starting at ``tok`` (or the next token). Raises EOFError at end."""
        if tok is None:
            tok = self.next()
            if tok is None:
                raise EOFError
        kind, text, line = tok
        if kind in ("string", "atom"):
            try:
                return _unescape(text[1:-1]) if kind == "string" else _atom(text)
            except ValueError as e:  # a bad escape, an integer of thousands of digits
                why = str(e) if kind == "string" else f"unreadable number {text[:20]!r}..."
                raise EdnError(f"{self.name}:{line}: {why}") from None
        if kind == "char":
            body = text[1:]
            if body in _CHARS:
                return _CHARS[body]
            if len(body) == 5 and body[0] == "u":
                if 0xD800 <= int(body[1:], 16) < 0xE000:
                    raise EdnError(f"{self.name}:{line}: surrogate character {text!r}")
                return chr(int(body[1:], 16))
            return body
        if kind == "open":
            if self.depth >= MAX_DEPTH:
                raise EdnError(f"{self.name}:{line}: collections nested more than {MAX_DEPTH} deep")
            self.depth += 1
            try:
                return self._coll(text, line)
            finally:
                self.depth -= 1
        if kind == "close":
            raise EdnError(f"{self.name}:{line}: unexpected {text!r}")
        if kind == "discard":
            self._form(line)
            return self.read()
        if kind == "tag":
            return self._form(line)
        raise EdnError(f"{self.name}:{line}: unexpected token {text!r}")  # pragma: no cover

    def _form(self, line: int) -> Any:
        if self.depth >= MAX_DEPTH:  # tags and discards recurse too: #_ #_ #_ ...
            raise EdnError(f"{self.name}:{line}: tags or #_ nested more than {MAX_DEPTH} deep")
        self.depth += 1
        try:
            return self.read()
        except EOFError:
            raise EdnError(f"{self.name}:{line}: end of input after a tag or #_") from None
        finally:
            self.depth -= 1

    def _coll(self, opener: str, line: int) -> Any:
        closer = _CLOSE_FOR[opener]
        items: list[Any] = []
        while True:
            tok = self.next()
            if tok is None:
                raise EdnError(f"{self.name}:{line}: {opener!r} opened here is never closed")
            if tok[0] == "close":
                if tok[1] != closer:
                    raise EdnError(f"{self.name}:{tok[2]}: expected {closer!r} to close {opener!r} from line {line}")
                break
            if tok[0] == "discard":
                self._form(tok[2])
                continue
            items.append(self.read(tok))
        if opener == "{":
            if len(items) % 2:
                raise EdnError(f"{self.name}:{line}: map literal has an odd number of forms")
            try:
                return dict(zip(items[::2], items[1::2], strict=True))
            except TypeError as e:
                raise EdnError(f"{self.name}:{line}: unhashable map key: {e}") from None
        if opener == "#{":
            try:
                return frozenset(items)
            except TypeError as e:
                raise EdnError(f"{self.name}:{line}: unhashable set element: {e}") from None
        return tuple(items)


def read_all(text: str, name: str = "<edn>") -> list[Any]:
    """Every top-level form of ``text``."""
    return [form for form, _ in read_all_with_lines(text, name)]


def read_all_with_lines(text: str, name: str = "<edn>") -> list[tuple[Any, int]]:
    """Every top-level form with the line it starts on."""
    r = _Reader(text, name)
    out: list[tuple[Any, int]] = []
    while True:
        tok = r.next()
        if tok is None:
            return out
        if tok[0] == "discard":  # a trailing ``#_ x`` discards its form and reads nothing
            r._form(tok[2])
            continue
        out.append((r.read(tok), tok[2]))


def read_one(text: str, name: str = "<edn>") -> Any:
    forms = read_all(text, name)
    if len(forms) != 1:
        raise EdnError(f"{name}:1: expected one EDN form, found {len(forms)}")
    return forms[0]


def read_items(text: str, name: str = "<edn>") -> list[tuple[Any, int]]:
    """Elements of a history with their start lines.

    A history is one top-level vector or list of forms, or a stream of top-level forms.
    """
    r = _Reader(text, name)
    first = r.next()
    while first is not None and first[0] == "discard":
        r._form(first[2])
        first = r.next()
    if first is None:
        return []
    out: list[tuple[Any, int]] = []
    if first[0] == "open" and first[1] in ("[", "("):
        closer = _CLOSE_FOR[first[1]]
        while True:
            tok = r.next()
            if tok is None:
                raise EdnError(f"{name}:{first[2]}: {first[1]!r} opened here is never closed")
            if tok[0] == "close":
                if tok[1] != closer:
                    raise EdnError(f"{name}:{tok[2]}: expected {closer!r} to close {first[1]!r} from line {first[2]}")
                break
            if tok[0] == "discard":
                r._form(tok[2])
                continue
            out.append((r.read(tok), tok[2]))
        rest = r.next()
        if rest is not None:
            raise EdnError(f"{name}:{rest[2]}: unexpected form after the history's closing {closer!r}")
        return out
    out.append((r.read(first), first[2]))
    while (tok := r.next()) is not None:
        if tok[0] == "discard":
            r._form(tok[2])
            continue
        out.append((r.read(tok), tok[2]))
    return out
