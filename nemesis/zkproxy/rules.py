"""ZooKeeper proxy rules: the ZooKeeper match keys on the shared rule engine (``nemesis.wireproxy.rules``).

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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nemesis.wireproxy import rules as _engine
from nemesis.wireproxy.rules import (
    ACTION_KEYS,
    BLACKHOLE_MODES,
    BUDGET_KEYS,
    CLOSE_WHEN,
    FORWARD,
    RULE_KEYS,
    Action,
    Budget,
    Ctx,
    Decision,
    Dialect,
    Rule,
    RuleError,
    RuleSet,
    as_list,
    bool_value,
    choice_set,
    int_value,
    parse_upstream,
    table,
)
from zkwire import OP_NAMES, op_code

DIRS = ("c2s", "s2c")
KINDS = ("connect_req", "connect_resp", "request", "reply", "notification", "ping", "auth", "close")
# the ZooKeeper proxy's actions (``duplicate`` is the Kafka proxy's: a repeated ZooKeeper frame breaks
# the client's xid order); ``hold`` only for watch notifications (xid -1: no reply order to break,
# the client hands them to its event thread), so a watcher learns of a change late (KAFKA-7235's
# fast bounce: the controller reads /brokers/ids after the broker is back)
ACTIONS = ("forward", "delay", "drop_then_blackhole", "drop_then_close", "close", "drop", "hold")
# what a ConnectResponse did: a session for a request with id 0 (or another id), the requested
# session again, or "expired" (session id 0 / timeOut 0: ZooKeeperServer.finishSessionInit)
CONNECT_RESULTS = ("new", "reattached", "expired")

MATCH_KEYS = ("dir", "kind", "op", "path_prefix", "ephemeral", "session_id", "upstream", "conn", "connect_result")

__all__ = [
    "ACTIONS", "ACTION_KEYS", "BLACKHOLE_MODES", "BUDGET_KEYS", "CLOSE_WHEN", "CONNECT_RESULTS", "DIALECT", "DIRS",
    "FORWARD", "KINDS", "MATCH_KEYS", "RULE_KEYS", "Action", "Budget", "Decision", "FrameInfo", "Match", "Rule",
    "RuleError", "RuleSet", "load_rules_file", "parse_rule", "parse_rules",
]


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


def _parse_match(ctx: Ctx, spec: Any) -> Match:
    d = table(ctx, "match", spec, MATCH_KEYS)
    m = Match()
    if "dir" in d:
        m.dir = choice_set(ctx, "match.dir", d["dir"], DIRS)
    if "kind" in d:
        m.kind = choice_set(ctx, "match.kind", d["kind"], KINDS)
    if "op" in d:
        ops = set()
        for x in as_list(d["op"]):
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
        pp = as_list(d["path_prefix"])
        if not pp or not all(isinstance(p, str) and p.startswith("/") for p in pp):
            raise ctx.fail("match.path_prefix", f"expected absolute path(s) starting with '/', got {d['path_prefix']!r}")
        m.path_prefix = tuple(pp)
    if "ephemeral" in d:
        m.ephemeral = bool_value(ctx, "match.ephemeral", d["ephemeral"])
    if "session_id" in d:
        sids = []
        for x in as_list(d["session_id"]):
            if isinstance(x, str):
                try:
                    x = int(x, 0)
                except ValueError:
                    raise ctx.fail("match.session_id", f"not an integer or 0x-hex string: {x!r}") from None
            sids.append(int_value(ctx, "match.session_id", x))
        m.session_id = frozenset(sids)
    if "upstream" in d:
        m.upstream = parse_upstream(ctx, d["upstream"])
    if "connect_result" in d:
        m.connect_result = choice_set(ctx, "match.connect_result", d["connect_result"], CONNECT_RESULTS)
    if "conn" in d:
        m.conn = frozenset(int_value(ctx, "match.conn", x, minimum=1) for x in as_list(d["conn"]))
    return m


DIALECT = Dialect(
    name="zkproxy",
    parse_match=_parse_match,
    actions=ACTIONS,
    unsafe_actions={
        "drop": "'drop' discards one frame and forwards later ones, which corrupts clients (xid mismatch, "
                "or the next frame misread as the ConnectResponse); use drop_then_blackhole/drop_then_close, "
                "or set unsafe = true",
    },
    action_needs={
        "hold": lambda m: None if m.kind == frozenset({"notification"}) else
        "'hold' is for watch notifications only (match.kind = \"notification\"): a held reply breaks the "
        "client's xid order",
    },
)


def parse_rule(spec: Any, *, source: str = "rule", index: int = 0, default_id: str | None = None) -> Rule:
    return _engine.parse_rule(spec, DIALECT, source=source, index=index, default_id=default_id)


def parse_rules(doc: Any, *, source: str = "rules", start_index: int = 0) -> list[Rule]:
    """Parse ``{"rules": [...]}`` or a bare list. Ids must be unique."""
    return _engine.parse_rules(doc, DIALECT, source=source, start_index=start_index)


def load_rules_file(path: str | Path) -> list[Rule]:
    """Load rules from ``.toml`` or ``.json`` (decided by suffix; other suffixes try JSON then TOML)."""
    return _engine.load_rules_file(path, DIALECT)
