"""Reference-history parsers: Porcupine etcd logs, Porcupine kv, Knossos EDN. Pure; errors name file:line.

Every parser returns a list of :class:`Op` whose ``call``/``ret`` are positions in the file (line
order is real-time order). The semantics, as the Porcupine and Knossos checkers read these formats:

* porcupine-etcd: a call pairs with the next completion of the same proc; ``:fail :cas`` is a real
  answer (the register did not hold ``from``); ``:fail :read :timed-out`` and ``:info`` are unknown
  outcomes, open until the end of the history.
* porcupine-kv: no fail/info; a get's value is in its completion.
* knossos: an invocation takes its ``:ok`` value; ``:fail`` ops are dropped (both halves); ``:info``
  and never-completed ops stay open; a read of nil is always legal; ``:nemesis`` is ignored.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from checkers.edn import EdnError, Keyword, read_all_with_lines, read_items
from checkers.ops import OPEN, UNKNOWN, Op

FORMATS = ("porcupine-etcd", "porcupine-kv", "knossos", "jsonl")
DEFAULT_MODEL = {"porcupine-etcd": "etcd", "porcupine-kv": "kv", "knossos": None, "jsonl": None}


class ParseError(ValueError):
    """Bad reference history; the message is ``<file>:<line>: <what>``."""


def detect_format(path: str | Path) -> str:
    """Guess the format from the name and the first non-blank, non-comment line."""
    p = Path(path)
    if p.is_dir():
        return "jsonl"
    first = ""
    with open(p, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            s = line.strip().lstrip("\ufeff")  # a byte-order mark is the validator's to name, not a format
            if s and not s.startswith(";"):
                first = s
                break
    if not first:
        raise ParseError(f"{p}:1: empty file; cannot detect its format (pass --format)")
    if p.suffix == ".jsonl" or first.startswith('{"'):
        return "jsonl"
    if "jepsen.util" in first or re.match(r"^\d+\s+:(invoke|ok|fail|info)\b", first):
        return "porcupine-etcd"
    if first.startswith("{") and ":key" in first and ":process" in first and p.suffix != ".edn":
        return "porcupine-kv"
    if p.suffix == ".edn" or first[0] in "[({#":
        return "knossos"
    raise ParseError(f"{p}:1: cannot detect the history format (pass --format {'|'.join(FORMATS)})")


# --- Porcupine etcd -------------------------------------------------------------------------------

_ETCD = re.compile(r"^INFO\s+jepsen\.util\s+-\s+(.*)$")


def _etcd_value(tok: str, where: str) -> Any:
    if tok == "nil":
        return None
    if tok.startswith(":"):
        return Keyword(tok[1:])
    if tok.startswith("["):
        nums = tok.strip("[]").split()
        if len(nums) != 2:
            raise ParseError(f"{where}: expected [from to], got {tok!r}")
        return (_etcd_int(nums[0], where), _etcd_int(nums[1], where))
    return _etcd_int(tok, where)


def _etcd_int(tok: str, where: str) -> int:
    try:
        return int(tok)
    except ValueError:
        raise ParseError(f"{where}: expected an integer, got {tok!r}") from None


def parse_porcupine_etcd(path: str | Path, text: str | None = None) -> list[Op]:
    p = Path(path)
    text = p.read_text(encoding="utf-8") if text is None else text
    ops: list[Op] = []
    pending: dict[int, Op] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        where = f"{p}:{lineno}"
        m = _ETCD.match(line)
        body = m.group(1) if m else line
        parts = body.split(None, 3)
        if len(parts) < 3:
            raise ParseError(f"{where}: expected '<proc> :<type> :<f> <value>', got {line[:60]!r}")
        proc_s, typ, f = parts[0], parts[1].lstrip(":"), parts[2].lstrip(":")
        val = _etcd_value(parts[3].strip(), where) if len(parts) > 3 else None
        try:
            proc = int(proc_s)
        except ValueError:
            raise ParseError(f"{where}: process must be an integer, got {proc_s!r}") from None
        if f not in ("read", "write", "cas"):
            raise ParseError(f"{where}: unknown function :{f} (expected :read, :write or :cas)")
        pos = float(lineno)
        if typ == "invoke":
            if proc in pending:
                raise ParseError(f"{where}: process {proc} invokes again before its line-{pending[proc].line} op completed")
            if f == "cas" and not (isinstance(val, tuple) and len(val) == 2):
                raise ParseError(f"{where}: :cas needs [from to], got {val!r}")
            op = Op(len(ops), proc, f, (f, val if f != "read" else None), UNKNOWN, pos, OPEN, lineno)
            ops.append(op)
            pending[proc] = op
            continue
        op = pending.pop(proc, None)
        if op is None:
            raise ParseError(f"{where}: :{typ} for process {proc}, which has no pending invocation")
        if op.f != f:
            raise ParseError(f"{where}: :{typ} :{f} completes a :{op.f} invoked at line {op.line}")
        if typ == "ok":
            op.ret, op.ret_line = pos, lineno
            if f == "read":
                op.output = val
            elif f == "write":
                op.output = None
            else:
                op.output = True
        elif typ == "fail" and f == "cas":
            op.ret, op.ret_line, op.output = pos, lineno, False
        elif typ in ("fail", "info"):
            pass  # unknown outcome: stays open until the end (a proc that got :info never invokes again)
        else:
            raise ParseError(f"{where}: unknown op type :{typ}")
    return ops


# --- Porcupine kv ---------------------------------------------------------------------------------


def parse_porcupine_kv(path: str | Path, text: str | None = None) -> list[Op]:
    p = Path(path)
    text = p.read_text(encoding="utf-8") if text is None else text
    ops: list[Op] = []
    pending: dict[Any, Op] = {}
    for form, lineno in _edn_items(p, text, stream=True):
        where = f"{p}:{lineno}"
        if not isinstance(form, dict):
            raise ParseError(f"{where}: expected a map, got {type(form).__name__}")
        try:
            proc, typ, f, key, val = (form[Keyword(k)] for k in ("process", "type", "f", "key", "value"))
        except KeyError as e:
            raise ParseError(f"{where}: missing key :{e.args[0]}") from None
        if f not in ("get", "put", "append"):
            raise ParseError(f"{where}: unknown function :{f} (expected :get, :put or :append)")
        if typ == "invoke":
            if proc in pending:
                raise ParseError(f"{where}: process {proc} invokes again before completing")
            op = Op(len(ops), proc, str(f), (str(f), key, val if f != "get" else None), UNKNOWN, lineno, OPEN, lineno)
            ops.append(op)
            pending[proc] = op
        elif typ == "ok":
            op = pending.pop(proc, None)
            if op is None:
                raise ParseError(f"{where}: :ok for process {proc}, which has no pending invocation")
            op.ret, op.ret_line = float(lineno), lineno
            op.output = val if f == "get" else None
        elif typ in ("fail", "info"):
            pending.pop(proc, None)  # not in the corpus; treat as unknown outcome (stays open)
        else:
            raise ParseError(f"{where}: unknown op type :{typ}")
    return ops


# --- Knossos EDN ----------------------------------------------------------------------------------


def _edn_items(p: Path, text: str, stream: bool = False) -> list[tuple[Any, int]]:
    try:
        return read_all_with_lines(text, str(p)) if stream else read_items(text, str(p))
    except EdnError as e:
        raise ParseError(str(e)) from None


_KNOSSOS_FNS = {"read", "write", "cas", "txn", "acquire", "release"}


def parse_knossos(path: str | Path, text: str | None = None) -> list[Op]:
    p = Path(path)
    text = p.read_text(encoding="utf-8") if text is None else text
    K = Keyword
    ops: list[Op] = []
    pending: dict[Any, Op] = {}
    failed: set[int] = set()
    for pos, (form, lineno) in enumerate(_edn_items(p, text)):
        where = f"{p}:{lineno}"
        if not isinstance(form, dict):
            raise ParseError(f"{where}: expected an op map, got {type(form).__name__}")
        proc = form.get(K("process"))
        typ = form.get(K("type"))
        f = form.get(K("f"))
        if typ is None or f is None:
            raise ParseError(f"{where}: op map needs :type and :f")
        if not isinstance(proc, int) or isinstance(proc, bool) or f not in _KNOSSOS_FNS:
            continue  # nemesis and other non-client ops
        val = form.get(K("value"))
        if typ == "invoke":
            if proc in pending:
                raise ParseError(f"{where}: process {proc} invokes again before its line-{pending[proc].line} op completed")
            op = Op(len(ops), proc, str(f), _knossos_input(f, val, where), UNKNOWN, float(pos), OPEN, lineno)
            ops.append(op)
            pending[proc] = op
            continue
        op = pending.pop(proc, None)
        if op is None:
            raise ParseError(f"{where}: :{typ} for process {proc}, which has no pending invocation")
        if typ == "ok":
            op.ret, op.ret_line = float(pos), lineno
            op.output = _knossos_output(op, val, where)
        elif typ == "fail":
            failed.add(op.index)
        elif typ != "info":
            raise ParseError(f"{where}: unknown op type :{typ}")
    kept = [op for op in ops if op.index not in failed]
    for i, op in enumerate(kept):
        op.index = i
    return kept


def _knossos_input(f: str, val: Any, where: str) -> Any:
    if f in ("read", "acquire", "release"):
        return (str(f), None)
    if f == "write":
        return ("write", val)
    if f == "cas":
        if not (isinstance(val, tuple) and len(val) == 2):
            raise ParseError(f"{where}: :cas needs [from to], got {val!r}")
        return ("cas", val)
    if not isinstance(val, tuple) or not all(isinstance(m, tuple) and len(m) == 3 for m in val):
        raise ParseError(f"{where}: :txn needs [[:read|:write key value] ...], got {val!r}")
    return tuple((str(m[0]), m[1], m[2]) for m in val)


def _knossos_output(op: Op, val: Any, where: str) -> Any:
    if op.f == "read":
        return UNKNOWN if val is None else val  # a read of nil is always legal
    if op.f == "cas":
        return True
    if op.f == "txn":
        if not isinstance(val, tuple) or len(val) != len(op.input):
            raise ParseError(f"{where}: :ok txn value does not match its invocation at line {op.line}")
        return tuple(UNKNOWN if m[0] == Keyword("read") and m[2] is None else m[2] for m in val)
    return None


PARSERS = {
    "porcupine-etcd": parse_porcupine_etcd,
    "porcupine-kv": parse_porcupine_kv,
    "knossos": parse_knossos,
}


def default_model(fmt: str, ops: list[Op]) -> str:
    """A sensible model per format; for Knossos, guessed from the functions used."""
    if DEFAULT_MODEL.get(fmt):
        return str(DEFAULT_MODEL[fmt])
    fs = {op.f for op in ops}
    if "txn" in fs:
        return "multi-register"
    if fs & {"acquire", "release"}:
        return "mutex"
    return "cas-register"


def load(path: str | Path, fmt: str | None = None) -> tuple[str, list[Op]]:
    """Parse a reference history: ``(format, ops)``."""
    fmt = fmt or detect_format(path)
    if fmt not in PARSERS:
        raise ParseError(f"{path}:1: format {fmt!r} is not a reference-history format")
    try:
        return fmt, PARSERS[fmt](path)
    except UnicodeDecodeError as e:
        raise ParseError(f"{path}:1: not UTF-8 text ({e.reason})") from None
