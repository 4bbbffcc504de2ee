"""Kafka proxy rules: Kafka's match keys on the shared rule engine (``nemesis.wireproxy.rules``).

Role in the data path: the Kafka proxy builds a ``KafkaFrameInfo`` for every frame; a rule's
``KafkaMatch`` decides whether it applies. Budget, actions and evaluation are the shared engine's.

Match keys (all optional, absent = any; a list means "any of")::

    {"dir": "c2s" | "s2c", "kind": "request" | "response",
     "api": "LeaderAndIsr" | 4 | ["StopReplica", "UpdateMetadata"], "version": 7 | [5, 6, 7],
     "src_broker": 1, "dst_broker": 2, "controller_id": 1,
     "topic": "t", "partition": 0, "error": "STALE_BROKER_EPOCH" | 77,
     "upstream": 0 | "127.0.0.1:9092", "conn": 3}

For a response, ``api``, ``version``, ``src_broker``, ``dst_broker``, ``controller_id``, ``topic``
and ``partition`` are those of the request it answers (matched by correlation id); ``error``
matches a response carrying any of the errors (top level or per partition). ``dst_broker`` is the
broker whose listener the connection reached (``--broker-ids``); ``src_broker`` the sender's id
from the request body (``controller_id``, a fetch's ``replica_id``, ``broker_id``) or else its
client id (``broker-2-fetcher-0``). An unknown API name, or a version the codec has no schema for,
is a one-line error (exit 254).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from nemesis.kafkaproxy.codec import api_key_of, api_name, error_name, versions
from nemesis.wireproxy import rules as _engine
from nemesis.wireproxy.rules import (
    ALL_ACTIONS,
    Ctx,
    Dialect,
    Rule,
    as_list,
    choice_set,
    int_value,
    parse_upstream,
    table,
)

DIRS = ("c2s", "s2c")
KINDS = ("request", "response")
MATCH_KEYS = ("dir", "kind", "api", "version", "src_broker", "dst_broker", "controller_id", "topic", "partition",
              "error", "upstream", "conn")


@dataclass(slots=True)
class KafkaFrameInfo:
    """What rules see of one Kafka frame."""

    conn: int
    upstream: int  # listener index
    upstream_addr: str
    dir: str
    kind: str  # request | response
    api_key: int | None = None
    api_version: int | None = None
    src_broker: int | None = None
    dst_broker: int | None = None
    controller_id: int | None = None
    partitions: list[tuple[str | None, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass(slots=True)
class KafkaMatch:
    dir: frozenset[str] | None = None
    kind: frozenset[str] | None = None
    api: frozenset[int] | None = None
    version: frozenset[int] | None = None
    src_broker: frozenset[int] | None = None
    dst_broker: frozenset[int] | None = None
    controller_id: frozenset[int] | None = None
    topic: frozenset[str] | None = None
    partition: frozenset[int] | None = None
    error: frozenset[str] | None = None
    upstream: frozenset[int | str] | None = None
    conn: frozenset[int] | None = None

    def matches(self, f: KafkaFrameInfo) -> bool:
        checks = (
            (self.dir, f.dir), (self.kind, f.kind), (self.api, f.api_key), (self.version, f.api_version),
            (self.src_broker, f.src_broker), (self.dst_broker, f.dst_broker),
            (self.controller_id, f.controller_id), (self.conn, f.conn),
        )
        for want, got in checks:
            if want is not None and got not in want:
                return False
        if self.upstream is not None and f.upstream not in self.upstream and f.upstream_addr not in self.upstream:
            return False
        if self.topic is not None or self.partition is not None:
            if not any((self.topic is None or t in self.topic) and (self.partition is None or p in self.partition)
                       for t, p in f.partitions):
                return False
        return self.error is None or any(e in self.error for e in f.errors)


def _ints(ctx: Ctx, key: str, v: Any, minimum: int | None = None) -> frozenset[int]:
    return frozenset(int_value(ctx, key, x, minimum=minimum) for x in as_list(v))


def _parse_match(ctx: Ctx, spec: Any) -> KafkaMatch:
    d = table(ctx, "match", spec, MATCH_KEYS)
    m = KafkaMatch()
    if "dir" in d:
        m.dir = choice_set(ctx, "match.dir", d["dir"], DIRS)
    if "kind" in d:
        m.kind = choice_set(ctx, "match.kind", d["kind"], KINDS)
    if "api" in d:
        keys = set()
        for x in as_list(d["api"]):
            try:
                keys.add(api_key_of(x))
            except (KeyError, TypeError, ValueError):
                raise ctx.fail("match.api", f"unknown Kafka API {x!r} (a name like LeaderAndIsr, or its key)") from None
        m.api = frozenset(keys)
    if "version" in d:
        m.version = _ints(ctx, "match.version", d["version"], minimum=0)
        for v in sorted(m.version):
            lacking = [api_name(k) for k in sorted(m.api or ()) if v not in versions(k)]
            if lacking:
                raise ctx.fail("match.version", f"the codec has no {lacking[0]} v{v} "
                                                f"(it has v{min(versions(api_key_of(lacking[0])))}-"
                                                f"v{max(versions(api_key_of(lacking[0])))})")
    for key in ("src_broker", "dst_broker", "controller_id"):
        if key in d:
            setattr(m, key, _ints(ctx, f"match.{key}", d[key]))
    if "topic" in d:
        topics = as_list(d["topic"])
        if not topics or not all(isinstance(t, str) and t for t in topics):
            raise ctx.fail("match.topic", f"expected topic name(s), got {d['topic']!r}")
        m.topic = frozenset(topics)
    if "partition" in d:
        m.partition = _ints(ctx, "match.partition", d["partition"], minimum=0)
    if "error" in d:
        names = set()
        for x in as_list(d["error"]):
            if isinstance(x, int) and not isinstance(x, bool):
                try:
                    ErrorCode(x)
                except ValueError:
                    raise ctx.fail("match.error", f"unknown Kafka error code {x}") from None
                names.add(error_name(x))
            elif isinstance(x, str) and x.lower() in ErrorCode.__members__:
                names.add(x.upper())
            else:
                raise ctx.fail("match.error", f"unknown Kafka error {x!r} (a name like STALE_BROKER_EPOCH, or its code)")
        m.error = frozenset(names)
    if "upstream" in d:
        m.upstream = parse_upstream(ctx, d["upstream"])
    if "conn" in d:
        m.conn = _ints(ctx, "match.conn", d["conn"], minimum=1)
    return m


DIALECT = Dialect(name="kafkaproxy", parse_match=_parse_match, actions=ALL_ACTIONS)


def parse_rule(spec: Any, *, source: str = "rule", index: int = 0, default_id: str | None = None) -> Rule:
    return _engine.parse_rule(spec, DIALECT, source=source, index=index, default_id=default_id)


def parse_rules(doc: Any, *, source: str = "rules", start_index: int = 0) -> list[Rule]:
    return _engine.parse_rules(doc, DIALECT, source=source, start_index=start_index)


def load_rules_file(path: str | Path) -> list[Rule]:
    return _engine.load_rules_file(path, DIALECT)
