"""A real Kafka broker's log → the history events the checkers read from a broker (pure).

The Python agents write their own events (``agent_start``, ``session``, ``register``...); a real
Kafka broker writes only its log4j log. The lines that say the same things are parsed here into
the same kinds, under the same source (``agent:<broker id>``: the broker's own account), so the
registration checkers and the timeline read a real broker's run like an agent's:

- ``starting (kafka.server.KafkaServer)`` → ``agent_start`` (with the configured session timeout);
- ZooKeeper's ``Session establishment complete ..., session id = 0x..`` → ``session connected``;
  ``Unable to reconnect ..., session 0x.. has expired`` → ``session expired``;
  ``Session: 0x.. closed`` → ``session closed``;
- ``Registered broker N at path /brokers/ids/N ..., czxid (broker epoch): E`` → ``register ok``
  (epoch = czxid = E, under the session last established: Kafka does not log it); before 2.2 the
  line has no epoch, and with the ZooKeeper wire proxy in the brokers' path the session and czxid
  of the create it saw are filled in (``with_wire_registrations``, at merge time);
- CheckedEphemeral's ``Error while creating ephemeral at /brokers/ids/N, node already exists and
  owner '0x..' does not match current session '0x..'`` → ``register fail`` (NODEEXISTS, permanent:
  Kafka's ZooKeeper mode never retries it);
- 2.2's (KAFKA-7165) ``Was not possible to create the ephemeral at /brokers/ids/N, node already exists
  and owner '..' does not match current session '..', trying to delete and re-create it`` →
  ``register_delete`` (owner, current session; Kafka logs neither the recorded session nor the result);
- ``[KafkaServer id=N] Fatal error during KafkaServer startup`` → ``startup_failed``;
- the controller's ``[Controller id=N] N successfully elected as the controller. Epoch incremented to
  E and epoch zk version is now V`` → ``controller_elected`` (controller epoch E, the version V of
  /controller_epoch its election wrote);
- the controller's ``[Controller id=N] Newly added brokers: .., deleted brokers: .., [bounced brokers:
  .., ]all live brokers: ..`` (``KafkaController.BrokerChange.process``, logged each time it reads
  /brokers/ids) → ``broker_change`` with ``new``, ``dead`` and ``live`` (ids; each live broker's epoch
  is the registration current then, filled in at merge time by ``with_view_epochs``) and the
  ``controller_epoch`` of this broker's last election in its log (null if the log has none). KIP-380's ``bounced brokers`` (2.2 on; a 2.0/2.1
  controller has no such class) is kept as ``bounced_logged``, and ``bounced`` is null: the
  checkers tie an agent controller's ``bounced`` list to that controller's own sends, and a real
  controller's sends are the Kafka proxy's events, another source;
- ``[KafkaServer id=N] shut down completed`` → ``agent_stop``.

Timestamps are the log's (``[yyyy-MM-dd HH:mm:ss,SSS+zzzz]``, or without a zone: UTC, which the
harness sets for the broker JVM); the node's clock is the control node's on the embedded
inventory, and on external nodes as good as their clock sync.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from history import Event

_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d,\d{3})([+-]\d{4})?\] (\w+) (.*)$")
# before broker.id is read the server logs without its "[KafkaServer id=N] " prefix
_STARTING = re.compile(r"^(?:\[KafkaServer id=(\d+)\] )?starting \(kafka\.server\.KafkaServer\)")
_SHUTDOWN = re.compile(r"\[KafkaServer id=(\d+)\] shut down completed")
_FATAL = re.compile(r"\[KafkaServer id=(\d+)\] Fatal error during KafkaServer startup")
_ELECTED = re.compile(r"\[Controller id=(\d+)\] \d+ successfully elected as the controller\. Epoch incremented to "
                      r"(\d+) and epoch zk version is now (-?\d+)")
_BROKER_CHANGE = re.compile(r"\[Controller id=(\d+)\] Newly added brokers: ([\d,]*), deleted brokers: ([\d,]*), "
                            r"(?:bounced brokers: ([\d,]*), )?all live brokers: ([\d,]*)")
_ESTABLISHED = re.compile(r"Session establishment complete on server (\S+), session ?id = (0x[0-9a-fA-F]+), "
                          r"negotiated timeout = (\d+)")
_EXPIRED = re.compile(r"Unable to reconnect to ZooKeeper service, session (0x[0-9a-fA-F]+) has expired")
_CLOSED = re.compile(r"Session: (0x[0-9a-fA-F]+) closed")
# Kafka 2.2 (KIP-380) and later end the line with the broker epoch; 2.0 and 2.1 log no epoch at all
_REGISTERED = re.compile(r"Registered broker (\d+) at path (/brokers/ids/\d+) with addresses: (.*?)"
                         r"(?:, czxid \(broker epoch\): (-?\d+))?(?: \([\w.$]+\))?\s*$")
# Kafka 3.x writes the two session ids in hex, 2.x in decimal
_FOREIGN_OWNER = re.compile(r"Error while creating ephemeral at (\S+), node already exists and owner "
                            r"'(0x[0-9a-fA-F]+|\d+)' does not match current session '(0x[0-9a-fA-F]+|\d+)'")


# KAFKA-7165's fix (2.2 on): a foreign owner's ephemeral is deleted and created again
_DELETE_AND_RETRY = re.compile(r"Was not possible to create the ephemeral at (\S+), node already exists and owner "
                               r"'(0x[0-9a-fA-F]+|\d+)' does not match current session '(0x[0-9a-fA-F]+|\d+)', "
                               r"trying to delete and re-create it")


@dataclass
class ParsedEvent:
    """One event a log line says, before it gets its place in a history (``to_events``)."""

    t_wall: float
    f: str
    type: str = "event"
    value: dict[str, Any] = field(default_factory=dict)
    line: int = 0  # the 1-based log line it comes from


def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _session(text: str) -> int:
    return int(text, 16) if text.lower().startswith("0x") else int(text)


def log_time(stamp: str, zone: str | None) -> float:
    """Seconds since the epoch of a log4j ``yyyy-MM-dd HH:mm:ss,SSS`` stamp (UTC without a zone)."""
    t = datetime.strptime(stamp.replace("T", " ") + (zone or "+0000"), "%Y-%m-%d %H:%M:%S,%f%z")
    return t.astimezone(UTC).timestamp()


def parse_broker_log(lines: Iterable[str], broker_id: int, session_timeout_ms: int | None = None) -> list[ParsedEvent]:
    """The events broker ``broker_id``'s log says, in log order; other lines (and the continuation
    lines of multi-line messages) say none."""
    out: list[ParsedEvent] = []
    session: int | None = None  # the session the broker's ZooKeeper client last established
    controller_epoch: int | None = None  # the epoch of this broker's last election, as it logged it
    path = f"/brokers/ids/{broker_id}"
    for n, raw in enumerate(lines, 1):
        m = _LINE.match(raw.rstrip("\n"))
        if m is None:
            continue
        t, msg = log_time(m[1], m[2]), m[4]

        def add(f: str, type_: str = "event", _t: float = t, _n: int = n, **value: Any) -> None:
            out.append(ParsedEvent(_t, f, type_, {"broker_id": broker_id, **value}, _n))

        if (s := _STARTING.search(msg)) and (s[1] is None or int(s[1]) == broker_id):
            session = None
            add("agent_start", session_timeout_ms=session_timeout_ms)
        elif s := _ESTABLISHED.search(msg):
            session = int(s[2], 16)
            add("session", state="connected", session_id=session, negotiated_timeout_ms=int(s[3]))
        elif s := _EXPIRED.search(msg):
            last = out[-1] if out else None
            # ZooKeeper 3.5's client says it twice (WARN, then INFO "..., closing socket connection")
            if not (last and last.f == "session" and last.value.get("state") == "expired"
                    and last.value.get("session_id") == int(s[1], 16)):
                add("session", state="expired", session_id=int(s[1], 16))
            if session == int(s[1], 16):
                session = None
        elif s := _CLOSED.search(msg):
            add("session", state="closed", session_id=int(s[1], 16))
            if session == int(s[1], 16):
                session = None
        elif (s := _REGISTERED.search(msg)) and int(s[1]) == broker_id:
            # before KIP-380 the registration carries no epoch: the checkers that need one say unknown
            epoch = {"epoch": int(s[4]), "czxid": int(s[4])} if s[4] is not None else {}
            add("register", "ok", session_id=session, addr=s[3], **epoch)
        elif (s := _FOREIGN_OWNER.search(msg)) and s[1] == path:
            add("register", "fail", session_id=_session(s[3]), owner=_session(s[2]), error="NODEEXISTS",
                permanent=True, retryable=False)
        elif (s := _DELETE_AND_RETRY.search(msg)) and s[1] == path:
            add("register_delete", owner=_session(s[2]), session_id=_session(s[3]))
        elif (s := _ELECTED.search(msg)) and int(s[1]) == broker_id:
            controller_epoch = int(s[2])
            add("controller_elected", controller_epoch=controller_epoch, epoch_zk_version=int(s[3]), session_id=session)
        elif (s := _BROKER_CHANGE.search(msg)) and int(s[1]) == broker_id:
            add("broker_change", controller_epoch=controller_epoch, new=_ids(s[2]), dead=_ids(s[3]), bounced=None,
                bounced_logged=_ids(s[4]) if s[4] is not None else None,
                live={str(b): None for b in _ids(s[5])}, reason="watch")
        elif (s := _FATAL.search(msg)) and int(s[1]) == broker_id:
            add("startup_failed", reason="Fatal error during KafkaServer startup")
        elif (s := _SHUTDOWN.search(msg)) and int(s[1]) == broker_id:
            add("agent_stop", reason="shut down completed", session_id=session)
            session = None
    return out


def to_events(parsed: list[ParsedEvent], broker_id: int, run: str = "") -> list[Event]:
    """History events (``agent:<broker id>``, numbered in log order) of a broker's parsed log."""
    return [Event(run=run, src=f"agent:{broker_id}", seq=i, t_wall=p.t_wall, t_mono=0, type=p.type, f=p.f,
                  process=broker_id, value=p.value) for i, p in enumerate(parsed, 1)]


def broker_events(log_files: Sequence[Path | None], broker_id: int, session_timeout_ms: int | None,
                  run: str = "") -> list[Event] | None:
    """A broker's events from its log files, oldest first (None entries and missing files are
    skipped); None when it wrote no log at all."""
    present = [p for p in log_files if p is not None and p.exists()]
    if not present:
        return None
    lines = [line for p in present for line in p.read_text(errors="replace").splitlines()]
    return to_events(parse_broker_log(lines, broker_id, session_timeout_ms), broker_id, run)


# a broker's log line follows the reply of its create by the time the client takes to hand it to
# Kafka and log4j to write it; the proxy's clock is the control node's (docs/events.md)
WIRE_SLACK_S = 1.0


def wire_creations(events: Iterable[Event]) -> dict[str, list[tuple[float, int, int, str]]]:
    """``{path: [(t_wall, session id, czxid, event id)]}``: every znode under /brokers/ids that the
    ZooKeeper wire proxy saw created (a ``create`` or a ``multi`` reply without error, in time
    order). A write's reply header carries its transaction's zxid (ZooKeeper's FinalRequestProcessor:
    ``new ReplyHeader(cxid, rc.zxid, err)``), which is the created znode's czxid."""
    out: dict[str, list[tuple[float, int, int, str]]] = {}
    for e in events:
        v = e.value
        if e.src != "zkproxy" or e.f != "frame" or v.get("kind") != "reply" or v.get("err") != 0 \
                or not isinstance(v.get("zxid"), int) or not isinstance(v.get("session_id"), int):
            continue
        if v.get("op_name") == "create" and isinstance(v.get("path"), str):
            paths = [v["path"]]
        elif v.get("op_name") == "multi" and not v.get("multi_failed"):
            paths = [p for p in v.get("created_paths") or [] if isinstance(p, str)]
        else:
            continue
        for path in paths:
            if path.startswith("/brokers/ids/"):
                out.setdefault(path, []).append((e.t_wall, v["session_id"], v["zxid"], e.id))
    for created in out.values():
        created.sort()
    return out


def with_wire_registrations(sources: list[Iterable[Event]], wire: Iterable[Event]) -> list[Iterable[Event]]:
    """``sources`` (one stream of events per source, read lazily) with each real broker's
    registration that names no epoch (Kafka before 2.2 logs none, and no session) completed from the
    ZooKeeper wire proxy's events ``wire``: the session that created ``/brokers/ids/N`` and its
    czxid, the last creation up to ``WIRE_SLACK_S`` after the log line, cited as ``wire_event``.
    Without the proxy in the brokers' path (``--zkproxy``, or a repro on real brokers) nothing
    changes, and the checkers that need the epoch say unknown."""
    created = wire_creations(wire)
    if not created:
        return sources

    def fill(e: Event) -> Event:
        v = e.value
        if e.f != "register" or e.type != "ok" or not e.src.startswith("agent:") or "epoch" in v \
                or not isinstance(v.get("broker_id"), int):
            return e
        seen = [c for c in created.get(f"/brokers/ids/{v['broker_id']}", []) if c[0] <= e.t_wall + WIRE_SLACK_S]
        if not seen:
            return e
        _, session, czxid, wire_id = seen[-1]
        return Event(e.run, e.src, e.seq, e.t_wall, e.t_mono, e.type, e.f, e.process,
                     {**v, "session_id": session, "epoch": czxid, "czxid": czxid, "wire_event": wire_id})

    return [map(fill, events) for events in sources]


def registration_epochs(events: Iterable[Event]) -> dict[int, list[tuple[float, int]]]:
    """Broker id → its ``register ok`` (time, epoch) from its log's events, oldest first."""
    out: dict[int, list[tuple[float, int]]] = {}
    for e in events:
        if e.f == "register" and e.type == "ok" and isinstance(e.value.get("epoch"), int):
            out.setdefault(int(e.value["broker_id"]), []).append((e.t_wall, int(e.value["epoch"])))
    return {b: sorted(v) for b, v in out.items()}


def epoch_at(epochs: dict[int, list[tuple[float, int]]], broker: int | None, t: float) -> int | None:
    """Broker ``broker``'s registration epoch current at ``t`` (its last one at or before)."""
    if broker is None:
        return None
    current = None
    for at, epoch in epochs.get(broker, []):
        if at <= t:
            current = epoch
    return current


def with_view_epochs(sources: list[Iterable[Event]], brokers: Sequence[int]) -> list[Iterable[Event]]:
    """``sources`` with each ``broker_change`` of a real controller's log (the streams at indexes
    ``brokers``, read here) given, for each live broker, the epoch of its registration current
    then (``register ok`` up to ``WIRE_SLACK_S`` after the line: the controller reads the czxid with
    the ids, and the broker logs its registration after the create's reply); None where no
    registration names one (before 2.2 without the ZooKeeper proxy)."""
    read = {i: list(sources[i]) for i in brokers}
    regs = registration_epochs(e for events in read.values() for e in events)

    def epoch_of(b: str, t: float) -> int | None:
        return epoch_at(regs, int(b), t + WIRE_SLACK_S) if b.isdigit() else None

    def fill(e: Event) -> Event:
        live = e.value.get("live")
        if e.f != "broker_change" or not isinstance(live, dict) or any(v is not None for v in live.values()):
            return e
        return Event(e.run, e.src, e.seq, e.t_wall, e.t_mono, e.type, e.f, e.process,
                     {**e.value, "live": {b: epoch_of(b, e.t_wall) for b in live}})

    return [[fill(e) for e in read[i]] if i in read else s for i, s in enumerate(sources)]


def write_events(events: Iterable[Event], path: Path) -> Path:
    """One broker's events as its event file (one JSON line each, the agents' format)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(e.to_json() + "\n" for e in events))
    return path
