"""Proxy rules: match + action + budget, parsed and validated from TOML/JSON or the control API.

Rule shape (JSON; TOML uses ``[[rules]]`` tables with the same keys)::

    {"id": "orphan", "unsafe": false,
     "match": {"dir": "s2c", "kind": "connect_resp", "op": "multi", "path_prefix": "/brokers/ids",
               "ephemeral": true, "session_id": 123, "upstream": 0, "conn": [1, 2]},
     "action": {"type": "drop_then_blackhole", "mode": "s2c"},
     "budget": {"skip": 0, "times": 1, "probability": 1.0, "from_ms": 0, "until_ms": null,
                "arm": "partition-1"}}

Every match key is optional (absent = any); list values mean "any of". For a reply, ``op``,
``path_prefix`` and ``ephemeral`` refer to the request it answers. ``action`` may be a bare string
for actions without parameters. Rules are evaluated in order; the first rule that matches *and*
whose budget lets it fire decides the frame; no rule means ``forward``.

Budget: ``skip`` K eligible matches, then fire at most ``times`` M times (null = unlimited), each
time with ``probability`` p drawn from the rule's own RNG seeded from (proxy seed, rule id).
``from_ms``/``until_ms`` is a window relative to proxy start, or to the last ``arm(name)`` when
``arm`` is set; an ``arm`` rule is inert until armed and after ``disarm``.
"""

from __future__ import annotations

import json
import math
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from base.errors import UsageError
from zkwire import OP_NAMES, op_code

DIRS = ("c2s", "s2c")
KINDS = ("connect_req", "connect_resp", "request", "reply", "notification", "ping", "auth", "close")
ACTIONS = ("forward", "delay", "drop_then_blackhole", "drop_then_close", "close", "drop")
BLACKHOLE_MODES = ("s2c", "c2s", "both")
CLOSE_WHEN = ("before", "after")
# what a ConnectResponse did: a session for a request with id 0 (or another id), the requested
# session again, or "expired" (session id 0 / timeOut 0: ZooKeeperServer.finishSessionInit)
CONNECT_RESULTS = ("new", "reattached", "expired")

MATCH_KEYS = ("dir", "kind", "op", "path_prefix", "ephemeral", "session_id", "upstream", "conn", "connect_result")
BUDGET_KEYS = ("skip", "times", "probability", "from_ms", "until_ms", "arm")
ACTION_KEYS: dict[str, tuple[str, ...]] = {
    "forward": (),
    "delay": ("delay_ms",),
    "drop_then_blackhole": ("mode",),
    "drop_then_close": ("after_ms", "rst"),
    "close": ("when", "rst"),
    "drop": (),
}
RULE_KEYS = ("id", "match", "action", "budget", "unsafe", "comment")


class RuleError(UsageError):
    """A rule that does not validate; the message is one line: source, rule index, key (a line
    break inside a quoted key or value is written as ``\\n``)."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg.replace("\r", "\\r").replace("\n", "\\n"))


@dataclass(slots=True)
class FrameInfo:
    """What rules see of one frame."""

    conn: int
    upstream: int  # listener index
    upstream_addr: str  # "host:port"
    dir: str
    kind: str
    xid: int | None = None
    op: int | None = None
    paths: list[str] = field(default_factory=list)
    ephemeral: bool = False
    session_id: int | None = None
    connect_result: str | None = None  # ConnectResponses only: one of CONNECT_RESULTS


@dataclass(slots=True)
class Match:
    dir: frozenset[str] | None = None
    kind: frozenset[str] | None = None
    op: frozenset[int] | None = None
    path_prefix: tuple[str, ...] | None = None
    ephemeral: bool | None = None
    session_id: frozenset[int] | None = None
    upstream: frozenset[int | str] | None = None
    conn: frozenset[int] | None = None
    connect_result: frozenset[str] | None = None

    def matches(self, f: FrameInfo) -> bool:
        if self.dir is not None and f.dir not in self.dir:
            return False
        if self.kind is not None and f.kind not in self.kind:
            return False
        if self.op is not None and f.op not in self.op:
            return False
        if self.path_prefix is not None and not any(
            p.startswith(pre) for p in f.paths for pre in self.path_prefix
        ):
            return False
        if self.ephemeral is not None and f.ephemeral != self.ephemeral:
            return False
        if self.session_id is not None and f.session_id not in self.session_id:
            return False
        if self.upstream is not None and f.upstream not in self.upstream and f.upstream_addr not in self.upstream:
            return False
        if self.connect_result is not None and f.connect_result not in self.connect_result:
            return False
        return self.conn is None or f.conn in self.conn


@dataclass(slots=True)
class Action:
    type: str = "forward"
    delay_ms: float = 0.0
    mode: str = "s2c"
    after_ms: float = 0.0
    rst: bool = False
    when: str = "before"


@dataclass(slots=True)
class Budget:
    skip: int = 0
    times: int | None = None
    probability: float = 1.0
    from_ms: float | None = None
    until_ms: float | None = None
    arm: str | None = None


@dataclass
class Rule:
    id: str
    match: Match
    action: Action
    budget: Budget
    unsafe: bool = False
    spec: dict[str, Any] = field(default_factory=dict)  # as given, for listing
    matched: int = 0  # eligible matches seen (after arm/window)
    applied: int = 0  # times fired
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {**self.spec, "id": self.id, "matched": self.matched, "applied": self.applied}


# ---------------------------------------------------------------------------------------------
# Parsing


class _Ctx:
    def __init__(self, source: str, index: int, rule_id: str | None = None) -> None:
        self.source, self.index, self.rule_id = source, index, rule_id

    def fail(self, key: str, msg: str) -> RuleError:
        rid = f" ({self.rule_id})" if self.rule_id else ""
        return RuleError(f"{self.source}: rule {self.index}{rid}: key '{key}': {msg}")


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _choice_set(ctx: _Ctx, key: str, v: Any, allowed: tuple[str, ...]) -> frozenset[str]:
    out = set()
    for x in _as_list(v):
        if not isinstance(x, str) or x not in allowed:
            raise ctx.fail(key, f"{x!r} is not one of {', '.join(allowed)}")
        out.add(x)
    return frozenset(out)


def _int(ctx: _Ctx, key: str, v: Any, *, minimum: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ctx.fail(key, f"expected an integer, got {v!r}")
    if minimum is not None and v < minimum:
        raise ctx.fail(key, f"must be >= {minimum}, got {v}")
    return v


def _num(ctx: _Ctx, key: str, v: Any, *, minimum: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ctx.fail(key, f"expected a number, got {v!r}")
    try:
        finite = math.isfinite(v)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite:
        raise ctx.fail(key, f"expected a finite number, got {str(v)[:40]}")
    if v < minimum:
        raise ctx.fail(key, f"must be >= {minimum}, got {str(v)[:40]}")
    return float(v)


def _bool(ctx: _Ctx, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ctx.fail(key, f"expected true or false, got {v!r}")
    return v


def _table(ctx: _Ctx, key: str, v: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ctx.fail(key, f"expected a table/object, got {type(v).__name__}")
    for k in v:
        if k not in allowed:
            raise ctx.fail(f"{key}.{k}", f"unknown key (expected one of {', '.join(allowed)})")
    return v


def _parse_match(ctx: _Ctx, spec: Any) -> Match:
    d = _table(ctx, "match", spec, MATCH_KEYS)
    m = Match()
    if "dir" in d:
        m.dir = _choice_set(ctx, "match.dir", d["dir"], DIRS)
    if "kind" in d:
        m.kind = _choice_set(ctx, "match.kind", d["kind"], KINDS)
    if "op" in d:
        ops = set()
        for x in _as_list(d["op"]):
            try:
                if isinstance(x, bool) or not isinstance(x, (int, str)):
                    raise KeyError(x)
                code = op_code(x)
            except (KeyError, ValueError):
                raise ctx.fail("match.op", f"unknown opcode {x!r} (a number or a name like multi, create)") from None
            if code not in OP_NAMES:
                raise ctx.fail("match.op", f"unknown opcode {x!r}")
            ops.add(code)
        m.op = frozenset(ops)
    if "path_prefix" in d:
        pp = _as_list(d["path_prefix"])
        if not pp or not all(isinstance(p, str) and p.startswith("/") for p in pp):
            raise ctx.fail("match.path_prefix", f"expected absolute path(s) starting with '/', got {d['path_prefix']!r}")
        m.path_prefix = tuple(pp)
    if "ephemeral" in d:
        m.ephemeral = _bool(ctx, "match.ephemeral", d["ephemeral"])
    if "session_id" in d:
        sids = []
        for x in _as_list(d["session_id"]):
            if isinstance(x, str):
                try:
                    x = int(x, 0)
                except ValueError:
                    raise ctx.fail("match.session_id", f"not an integer or 0x-hex string: {x!r}") from None
            sids.append(_int(ctx, "match.session_id", x))
        m.session_id = frozenset(sids)
    if "upstream" in d:
        ups: set[int | str] = set()
        for x in _as_list(d["upstream"]):
            if isinstance(x, str) and ":" in x:
                ups.add(x)
            else:
                ups.add(_int(ctx, "match.upstream", x, minimum=0))
        m.upstream = frozenset(ups)
    if "connect_result" in d:
        m.connect_result = _choice_set(ctx, "match.connect_result", d["connect_result"], CONNECT_RESULTS)
    if "conn" in d:
        m.conn = frozenset(_int(ctx, "match.conn", x, minimum=1) for x in _as_list(d["conn"]))
    return m


def _parse_action(ctx: _Ctx, spec: Any, unsafe: bool) -> Action:
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, dict):
        raise ctx.fail("action", f"expected an action name or table, got {type(spec).__name__}")
    t = spec.get("type")
    if t not in ACTIONS:
        raise ctx.fail("action.type", f"{t!r} is not one of {', '.join(ACTIONS)}")
    _table(ctx, "action", spec, ("type", *ACTION_KEYS[t]))
    a = Action(type=t)
    if t == "delay":
        if "delay_ms" not in spec:
            raise ctx.fail("action.delay_ms", "required for delay")
        a.delay_ms = _num(ctx, "action.delay_ms", spec["delay_ms"])
    elif t == "drop_then_blackhole":
        mode = spec.get("mode", "s2c")
        if mode not in BLACKHOLE_MODES:
            raise ctx.fail("action.mode", f"{mode!r} is not one of {', '.join(BLACKHOLE_MODES)}")
        a.mode = mode
    elif t == "drop_then_close":
        a.after_ms = _num(ctx, "action.after_ms", spec.get("after_ms", 0))
        a.rst = _bool(ctx, "action.rst", spec.get("rst", False))
    elif t == "close":
        when = spec.get("when", "before")
        if when not in CLOSE_WHEN:
            raise ctx.fail("action.when", f"{when!r} is not one of {', '.join(CLOSE_WHEN)}")
        a.when = when
        a.rst = _bool(ctx, "action.rst", spec.get("rst", False))
    elif t == "drop" and not unsafe:
        raise ctx.fail(
            "action.type",
            "'drop' discards one frame and forwards later ones, which corrupts clients (xid mismatch, "
            "or the next frame misread as the ConnectResponse); use drop_then_blackhole/drop_then_close, "
            "or set unsafe = true",
        )
    return a


def _parse_budget(ctx: _Ctx, spec: Any) -> Budget:
    d = _table(ctx, "budget", spec, BUDGET_KEYS)
    b = Budget()
    if "skip" in d:
        b.skip = _int(ctx, "budget.skip", d["skip"], minimum=0)
    if d.get("times") is not None:
        b.times = _int(ctx, "budget.times", d["times"], minimum=0)
    if "probability" in d:
        p = _num(ctx, "budget.probability", d["probability"])
        if p > 1:
            raise ctx.fail("budget.probability", f"must be in [0, 1], got {p}")
        b.probability = p
    if d.get("from_ms") is not None:
        b.from_ms = _num(ctx, "budget.from_ms", d["from_ms"])
    if d.get("until_ms") is not None:
        b.until_ms = _num(ctx, "budget.until_ms", d["until_ms"])
    if b.from_ms is not None and b.until_ms is not None and b.until_ms <= b.from_ms:
        raise ctx.fail("budget.until_ms", f"must be greater than from_ms ({b.from_ms})")
    if d.get("arm") is not None:
        if not isinstance(d["arm"], str) or not d["arm"]:
            raise ctx.fail("budget.arm", f"expected a non-empty name, got {d['arm']!r}")
        b.arm = d["arm"]
    return b


def parse_rule(spec: Any, *, source: str = "rule", index: int = 0, default_id: str | None = None) -> Rule:
    ctx = _Ctx(source, index)
    if not isinstance(spec, dict):
        raise RuleError(f"{source}: rule {index}: expected a table/object, got {type(spec).__name__}")
    for k in spec:
        if k not in RULE_KEYS:
            raise ctx.fail(k, f"unknown key (expected one of {', '.join(RULE_KEYS)})")
    rid = spec.get("id", default_id if default_id is not None else f"r{index}")
    if not isinstance(rid, str) or not rid or "/" in rid:
        raise ctx.fail("id", f"expected a non-empty string without '/', got {rid!r}")
    ctx.rule_id = rid
    unsafe = _bool(ctx, "unsafe", spec.get("unsafe", False))
    if "action" not in spec:
        raise ctx.fail("action", "required")
    rule = Rule(
        id=rid,
        match=_parse_match(ctx, spec.get("match", {})),
        action=_parse_action(ctx, spec["action"], unsafe),
        budget=_parse_budget(ctx, spec.get("budget", {})),
        unsafe=unsafe,
        spec={k: v for k, v in spec.items() if k != "id"},
    )
    return rule


def parse_rules(doc: Any, *, source: str = "rules", start_index: int = 0) -> list[Rule]:
    """Parse ``{"rules": [...]}`` or a bare list. Ids must be unique."""
    if isinstance(doc, dict):
        extra = set(doc) - {"rules"}
        if extra:
            raise RuleError(f"{source}: unknown top-level key '{sorted(extra)[0]}' (expected 'rules')")
        doc = doc.get("rules", [])
    if not isinstance(doc, list):
        raise RuleError(f"{source}: expected a list of rules or {{\"rules\": [...]}}")
    rules: list[Rule] = []
    seen: set[str] = set()
    for i, spec in enumerate(doc):
        r = parse_rule(spec, source=source, index=start_index + i)
        if r.id in seen:
            raise RuleError(f"{source}: rule {start_index + i} ({r.id}): key 'id': duplicate id")
        seen.add(r.id)
        rules.append(r)
    return rules


def load_rules_file(path: str | Path) -> list[Rule]:
    """Load rules from ``.toml`` or ``.json`` (decided by suffix; other suffixes try JSON then TOML)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise RuleError(f"{p}: cannot read rules file: {e.strerror}") from None
    doc: Any
    if p.suffix == ".toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise RuleError(f"{p}: invalid TOML: {e}") from None
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            if p.suffix == ".json":
                raise RuleError(f"{p}:{e.lineno}: invalid JSON: {e.msg}") from None
            try:
                doc = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                raise RuleError(f"{p}: neither valid JSON nor TOML") from None
    return parse_rules(doc, source=str(p))


# ---------------------------------------------------------------------------------------------
# Evaluation


@dataclass(slots=True)
class Decision:
    rule: Rule | None
    draw: float | None = None

    @property
    def action(self) -> Action:
        return self.rule.action if self.rule else FORWARD


FORWARD = Action("forward")


class RuleSet:
    """Ordered rules plus arming state; owned by the proxy's event loop (not thread-safe)."""

    def __init__(self, seed: int, start_mono: float) -> None:
        self.seed = seed
        self.start = start_mono
        self.rules: list[Rule] = []
        self.armed: dict[str, float] = {}

    def _seed_rule(self, r: Rule) -> None:
        r.rng = random.Random(f"{self.seed}/{r.id}")

    def add(self, rules: list[Rule]) -> list[str]:
        ids = {r.id for r in self.rules}
        for r in rules:
            if r.id in ids:
                raise RuleError(f"rule {r.id}: key 'id': a rule with this id already exists")
            ids.add(r.id)
        for r in rules:
            self._seed_rule(r)
            self.rules.append(r)
        return [r.id for r in rules]

    def remove(self, rule_id: str) -> bool:
        n = len(self.rules)
        self.rules = [r for r in self.rules if r.id != rule_id]
        return len(self.rules) != n

    def clear(self) -> int:
        n = len(self.rules)
        self.rules = []
        return n

    def arm(self, name: str, now: float) -> None:
        self.armed[name] = now

    def disarm(self, name: str) -> bool:
        return self.armed.pop(name, None) is not None

    def decide(self, f: FrameInfo, now: float) -> Decision:
        for r in self.rules:
            if not r.match.matches(f):
                continue
            b = r.budget
            ref = self.start
            if b.arm is not None:
                if b.arm not in self.armed:
                    continue
                ref = self.armed[b.arm]
            elapsed_ms = (now - ref) * 1000.0
            if b.from_ms is not None and elapsed_ms < b.from_ms:
                continue
            if b.until_ms is not None and elapsed_ms >= b.until_ms:
                continue
            r.matched += 1
            if r.matched <= b.skip:
                continue
            if b.times is not None and r.applied >= b.times:
                continue
            draw = None
            if b.probability < 1.0:
                draw = r.rng.random()
                if draw >= b.probability:
                    continue
            r.applied += 1
            return Decision(r, draw)
        return Decision(None)
