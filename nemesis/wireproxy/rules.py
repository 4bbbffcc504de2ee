"""Wire-proxy rules shared by every protocol: action, budget, parsing and evaluation.

Role in the data path: each proxy (``nemesis.zkproxy`` for ZooKeeper, ``nemesis.kafkaproxy`` for
Kafka) reads a frame, builds its protocol's *frame info*, and asks a :class:`RuleSet` what to do;
the rule engine here is the same for both. A protocol contributes only a :class:`Dialect`: how to
parse its ``match`` table (its match object has ``matches(info) -> bool``), which actions it
offers, and which of them need ``unsafe = true``.

Rule shape (JSON; TOML uses ``[[rules]]`` tables with the same keys)::

    {"id": "r1", "unsafe": false, "match": {...protocol keys...},
     "action": {"type": "delay", "delay_ms": 200},
     "budget": {"skip": 0, "times": 1, "probability": 1.0, "from_ms": 0, "until_ms": null,
                "arm": "partition-1"}}

``action`` may be a bare string for actions without parameters. Rules are evaluated in order; the
first rule that matches *and* whose budget lets it fire decides the frame; no rule means
``forward``.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from base.errors import UsageError

# Every action the engine knows; a dialect offers a subset (``Dialect.actions``).
ALL_ACTIONS = ("forward", "delay", "drop_then_blackhole", "drop_then_close", "close", "drop", "hold", "duplicate",
               "capture")
BLACKHOLE_MODES = ("s2c", "c2s", "both")
CLOSE_WHEN = ("before", "after")
BUDGET_KEYS = ("skip", "times", "probability", "from_ms", "until_ms", "arm")
ACTION_KEYS: dict[str, tuple[str, ...]] = {
    "forward": (),
    "delay": ("delay_ms",),
    "drop_then_blackhole": ("mode",),
    "drop_then_close": ("after_ms", "rst"),
    "close": ("when", "rst"),
    "drop": (),
    "hold": ("hold_ms",),  # keep the frame; later frames overtake it; release via the API or after hold_ms
    "duplicate": ("copies",),  # forward the frame, then ``copies`` more copies of it
    # forward the frame and keep a copy: the control API's /replay re-sends it later on a connection of its
    # own (a late duplicate of a request, without holding the sender's connection as ``hold`` does)
    "capture": (),
}
RULE_KEYS = ("id", "match", "action", "budget", "unsafe", "comment")
MAX_COPIES = 16


class RuleError(UsageError):
    """A rule that does not validate; the message is one line: source, rule index, key (a line
    break inside a quoted key or value is written as ``\\n``)."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg.replace("\r", "\\r").replace("\n", "\\n"))


class MatchLike(Protocol):
    def matches(self, f: Any) -> bool: ...


@dataclass(slots=True)
class Action:
    type: str = "forward"
    delay_ms: float = 0.0
    mode: str = "s2c"
    after_ms: float = 0.0
    rst: bool = False
    when: str = "before"
    hold_ms: float | None = None  # hold: release by itself after this long (None: only via the API)
    copies: int = 1  # duplicate: extra copies


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
    match: Any  # the dialect's match object (``MatchLike``)
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
# Parsing helpers (also used by the dialects' match parsers)


class Ctx:
    """Where a rule came from, for one-line errors that name the key."""

    def __init__(self, source: str, index: int, rule_id: str | None = None) -> None:
        self.source, self.index, self.rule_id = source, index, rule_id

    def fail(self, key: str, msg: str) -> RuleError:
        rid = f" ({self.rule_id})" if self.rule_id else ""
        return RuleError(f"{self.source}: rule {self.index}{rid}: key '{key}': {msg}")


def as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def choice_set(ctx: Ctx, key: str, v: Any, allowed: tuple[str, ...]) -> frozenset[str]:
    out = set()
    for x in as_list(v):
        if not isinstance(x, str) or x not in allowed:
            raise ctx.fail(key, f"{x!r} is not one of {', '.join(allowed)}")
        out.add(x)
    return frozenset(out)


def int_value(ctx: Ctx, key: str, v: Any, *, minimum: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ctx.fail(key, f"expected an integer, got {v!r}")
    if minimum is not None and v < minimum:
        raise ctx.fail(key, f"must be >= {minimum}, got {v}")
    return v


def num_value(ctx: Ctx, key: str, v: Any, *, minimum: float = 0.0) -> float:
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


def bool_value(ctx: Ctx, key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ctx.fail(key, f"expected true or false, got {v!r}")
    return v


def table(ctx: Ctx, key: str, v: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ctx.fail(key, f"expected a table/object, got {type(v).__name__}")
    for k in v:
        if k not in allowed:
            raise ctx.fail(f"{key}.{k}", f"unknown key (expected one of {', '.join(allowed)})")
    return v


def parse_upstream(ctx: Ctx, v: Any) -> frozenset[int | str]:
    """``match.upstream`` (every dialect): listener indexes or ``host:port`` strings."""
    ups: set[int | str] = set()
    for x in as_list(v):
        if isinstance(x, str) and ":" in x:
            ups.add(x)
        else:
            ups.add(int_value(ctx, "match.upstream", x, minimum=0))
    return frozenset(ups)


@dataclass(frozen=True)
class Dialect:
    """What one protocol adds to the engine: its match parser, its actions, and the actions that
    need ``unsafe = true`` (action -> why, said in the error)."""

    name: str
    parse_match: Callable[[Ctx, Any], Any]
    actions: tuple[str, ...]
    unsafe_actions: dict[str, str] = field(default_factory=dict)
    # action -> (the match it needs, why): None when the match allows it, else the one-line reason
    action_needs: dict[str, Callable[[Any], str | None]] = field(default_factory=dict)


def parse_action(ctx: Ctx, spec: Any, unsafe: bool, dialect: Dialect) -> Action:
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, dict):
        raise ctx.fail("action", f"expected an action name or table, got {type(spec).__name__}")
    t = spec.get("type")
    if t not in dialect.actions:
        raise ctx.fail("action.type", f"{t!r} is not one of {', '.join(dialect.actions)}")
    table(ctx, "action", spec, ("type", *ACTION_KEYS[t]))
    a = Action(type=t)
    if t == "delay":
        if "delay_ms" not in spec:
            raise ctx.fail("action.delay_ms", "required for delay")
        a.delay_ms = num_value(ctx, "action.delay_ms", spec["delay_ms"])
    elif t == "drop_then_blackhole":
        mode = spec.get("mode", "s2c")
        if mode not in BLACKHOLE_MODES:
            raise ctx.fail("action.mode", f"{mode!r} is not one of {', '.join(BLACKHOLE_MODES)}")
        a.mode = mode
    elif t == "drop_then_close":
        a.after_ms = num_value(ctx, "action.after_ms", spec.get("after_ms", 0))
        a.rst = bool_value(ctx, "action.rst", spec.get("rst", False))
    elif t == "close":
        when = spec.get("when", "before")
        if when not in CLOSE_WHEN:
            raise ctx.fail("action.when", f"{when!r} is not one of {', '.join(CLOSE_WHEN)}")
        a.when = when
        a.rst = bool_value(ctx, "action.rst", spec.get("rst", False))
    elif t == "hold":
        if spec.get("hold_ms") is not None:
            a.hold_ms = num_value(ctx, "action.hold_ms", spec["hold_ms"])
    elif t == "duplicate":
        a.copies = int_value(ctx, "action.copies", spec.get("copies", 1), minimum=1)
        if a.copies > MAX_COPIES:
            raise ctx.fail("action.copies", f"must be <= {MAX_COPIES}, got {a.copies}")
    if t in dialect.unsafe_actions and not unsafe:
        raise ctx.fail("action.type", dialect.unsafe_actions[t])
    return a


def parse_budget(ctx: Ctx, spec: Any) -> Budget:
    d = table(ctx, "budget", spec, BUDGET_KEYS)
    b = Budget()
    if "skip" in d:
        b.skip = int_value(ctx, "budget.skip", d["skip"], minimum=0)
    if d.get("times") is not None:
        b.times = int_value(ctx, "budget.times", d["times"], minimum=0)
    if "probability" in d:
        p = num_value(ctx, "budget.probability", d["probability"])
        if p > 1:
            raise ctx.fail("budget.probability", f"must be in [0, 1], got {p}")
        b.probability = p
    if d.get("from_ms") is not None:
        b.from_ms = num_value(ctx, "budget.from_ms", d["from_ms"])
    if d.get("until_ms") is not None:
        b.until_ms = num_value(ctx, "budget.until_ms", d["until_ms"])
    if b.from_ms is not None and b.until_ms is not None and b.until_ms <= b.from_ms:
        raise ctx.fail("budget.until_ms", f"must be greater than from_ms ({b.from_ms})")
    if d.get("arm") is not None:
        if not isinstance(d["arm"], str) or not d["arm"]:
            raise ctx.fail("budget.arm", f"expected a non-empty name, got {d['arm']!r}")
        b.arm = d["arm"]
    return b


def parse_rule(spec: Any, dialect: Dialect, *, source: str = "rule", index: int = 0,
               default_id: str | None = None) -> Rule:
    ctx = Ctx(source, index)
    if not isinstance(spec, dict):
        raise RuleError(f"{source}: rule {index}: expected a table/object, got {type(spec).__name__}")
    for k in spec:
        if k not in RULE_KEYS:
            raise ctx.fail(k, f"unknown key (expected one of {', '.join(RULE_KEYS)})")
    rid = spec.get("id", default_id if default_id is not None else f"r{index}")
    if not isinstance(rid, str) or not rid or "/" in rid:
        raise ctx.fail("id", f"expected a non-empty string without '/', got {rid!r}")
    ctx.rule_id = rid
    unsafe = bool_value(ctx, "unsafe", spec.get("unsafe", False))
    if "action" not in spec:
        raise ctx.fail("action", "required")
    match = dialect.parse_match(ctx, spec.get("match", {}))
    action = parse_action(ctx, spec["action"], unsafe, dialect)
    needs = dialect.action_needs.get(action.type)
    if needs is not None and (why := needs(match)) is not None:
        raise ctx.fail("action.type", why)
    return Rule(
        id=rid,
        match=match,
        action=action,
        budget=parse_budget(ctx, spec.get("budget", {})),
        unsafe=unsafe,
        spec={k: v for k, v in spec.items() if k != "id"},
    )


def parse_rules(doc: Any, dialect: Dialect, *, source: str = "rules", start_index: int = 0) -> list[Rule]:
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
        r = parse_rule(spec, dialect, source=source, index=start_index + i)
        if r.id in seen:
            raise RuleError(f"{source}: rule {start_index + i} ({r.id}): key 'id': duplicate id")
        seen.add(r.id)
        rules.append(r)
    return rules


def load_rules_file(path: str | Path, dialect: Dialect) -> list[Rule]:
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
    return parse_rules(doc, dialect, source=str(p))


# ---------------------------------------------------------------------------------------------
# Evaluation


FORWARD = Action("forward")


@dataclass(slots=True)
class Decision:
    rule: Rule | None
    draw: float | None = None

    @property
    def action(self) -> Action:
        return self.rule.action if self.rule else FORWARD


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

    def decide(self, f: Any, now: float) -> Decision:
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
