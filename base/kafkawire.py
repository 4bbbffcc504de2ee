"""The Kafka wire proxy's frames → the events the epoch-fencing checkers read from the agents (pure).

The agents write what their control plane does (``control_send``, ``control_recv``,
``controlled_shutdown``...); a real broker writes none of it, but its requests and answers pass the
Kafka proxy (docs/kafkaproxy.md), whose ``kafka_frame`` events say the same things on the wire:

- a controller's LeaderAndIsr, UpdateMetadata or StopReplica request (``dir`` c2s) →
  ``control_send`` by the controller (``broker_id`` = its ``controller_id``) to ``target`` (the
  broker whose listener it reached), with its controller and broker epochs, at the time the proxy
  read it (a held request's too: it was sent then);
- the broker's answer (s2c, paired with its request by ``req_seq``) → ``control_recv`` by that
  broker: ``outcome`` ``applied`` when the top-level error is none, else ``rejected`` with the
  ``error_code`` (STALE_BROKER_EPOCH is 77, STALE_CONTROLLER_EPOCH 11), the request's epochs, and
  ``own_epoch``: the broker's registration epoch current then, from its log's last ``register ok``
  before the answer (``base.kafkalog``; before 2.2, whose log names no epoch, the ZooKeeper proxy's
  create of its znode fills it in: ``map_run_frames``, else none). A request with no
  answer (dropped, held past its connection, the broker killed) says nothing of what the broker did,
  and maps to no ``control_recv``;
- a broker's ControlledShutdown → ``controlled_shutdown`` invoke, and its answer ok/fail;
- the controller's answer to a ControlledShutdown also → ``controlled_shutdown_handled`` by the
  controller (``broker_id`` the requester, ``process`` the controller, at the answer's time), from
  what the wire shows and these inferences, each named in the event:
  ``cached_epoch`` (``cached_epoch_from: "last control request"``) is the broker epoch of the last
  control request that controller sent to the requester before answering: the incarnation the
  controller last addressed, which is what its cache held (KIP-380's controller builds every
  request from that cache; a pre-2.2 one from the registration it read); none sent yet: null, and
  the checker cannot judge that shutdown. A cache updated since that request (a registration the
  controller read and has sent nothing for yet) makes it older than the truth: that can hide a
  stale shutdown, not invent one. ``stop_replicas`` are the partitions of the StopReplica
  requests that controller sent to the requester, and ``leader_moves`` the partitions whose
  LeaderAndIsr (to anyone) named another leader than the requester where its last one named the
  requester, from the shutdown request until ``CAUSE_SLACK_S`` after the answer (the controller
  queues them while it handles the shutdown and its request threads send them on their own, before
  or after the answer): attributed by time, which is exact while nothing else changes leaders in
  that second (the stories), and otherwise may count another cause's requests.

Broker epochs before KIP-380 (2.2): LeaderAndIsr v0-1, UpdateMetadata v0-4, StopReplica v0 and
ControlledShutdown v0-1 carry none. For such a request ``broker_epoch`` is the epoch of the
incarnation it was built for: the registration epoch (czxid of ``/brokers/ids/N``) of its target
(of its sender, for a ControlledShutdown) current when the request was first sent, a replayed
frame's original's time (``replay_of``), marked ``broker_epoch_from: "registration at send"``. The
registrations are the ZooKeeper wire proxy's creates of ``/brokers/ids/N`` when the run has it
(``base.kafkalog.wire_creations``: ZooKeeper's own reply, before any controller can know of the
registration), else the brokers' ``register ok`` events. Taking the creation's time errs on the
side of the newer incarnation: a request sent in the instant after a re-registration counts as
built for the new one, so the inference can hide a stale request sent then, never invent one. A
2.2+ request's own ``broker_epoch`` is taken as it is (no ``broker_epoch_from``).

Each derived event keeps the frame's time and is numbered in the proxy's order under source
``kafkawire``, with ``broker_id`` naming whose account it is; ``request_id`` is
``<conn>:<correlation id>`` (unique per proxy connection). The fields the contract says every writer
writes (``history.kinds.WRITTEN``) are present, null where the wire does not carry them
(``max_broker_epoch``: ZooKeeper-mode requests have none; ``full``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from history import Event, read_events

SOURCE = "kafkawire"
CONTROL_APIS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")
AT_SEND = "registration at send"  # broker_epoch_from: inferred (a pre-KIP-380 request carries none)
LAST_REQUEST = "last control request"  # cached_epoch_from
CAUSE_SLACK_S = 1.0  # a shutdown's requests leave the controller's request threads within this of its answer


def error_code(name: str | None) -> int:
    """A Kafka error's code from the name the proxy writes (``STALE_BROKER_EPOCH`` → 77); 0 for none."""
    if name is None:
        return 0
    if name.startswith("UNKNOWN_ERROR_"):
        return int(name.removeprefix("UNKNOWN_ERROR_"))
    from kio.schema.errors import ErrorCode

    return int(ErrorCode[name.lower()].value)


def registration_epochs(events: Iterable[Event]) -> dict[int, list[tuple[float, int]]]:
    """Broker id → its ``register ok`` (time, epoch) from its log's events, oldest first."""
    out: dict[int, list[tuple[float, int]]] = {}
    for e in events:
        if e.f == "register" and e.type == "ok" and isinstance(e.value.get("epoch"), int):
            out.setdefault(int(e.value["broker_id"]), []).append((e.t_wall, int(e.value["epoch"])))
    return {b: sorted(v) for b, v in out.items()}


def creation_epochs(zk_events: Iterable[Event]) -> dict[int, list[tuple[float, int]]]:
    """Broker id → (time, czxid) of each create of ``/brokers/ids/N`` the ZooKeeper wire proxy saw."""
    from base.kafkalog import wire_creations

    out: dict[int, list[tuple[float, int]]] = {}
    for path, created in wire_creations(zk_events).items():
        tail = path.removeprefix("/brokers/ids/")
        if tail.isdigit():
            out[int(tail)] = [(t, czxid) for t, _, czxid, _ in created]
    return out


def _epoch_at(epochs: dict[int, list[tuple[float, int]]], broker: int | None, t: float) -> int | None:
    """Broker ``broker``'s registration epoch current at ``t`` (its last one at or before)."""
    if broker is None:
        return None
    current = None
    for at, epoch in epochs.get(broker, []):
        if at <= t:
            current = epoch
    return current


def _partitions(frame: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in frame.get("partitions") or [] if isinstance(p, dict)]


def wire_events(frames: Iterable[Event], broker_events: Iterable[Event] = (), run: str = "",
                created: dict[int, list[tuple[float, int]]] | None = None) -> list[Event]:
    """The ``kafkawire`` events of a run's ``kafka_frame`` events (any order; the proxy's ``seq``
    decides), with own epochs from the brokers' ``register ok`` events; ``created``: the registrations
    a pre-2.2 request's epoch is inferred from (``creation_epochs``; default: the ``register ok`` events)."""
    epochs = registration_epochs(broker_events)
    at_send = created if created else epochs
    keyed: list[tuple[float, Event]] = []
    requests: dict[int, Event] = {}
    inferred: dict[int, dict[str, Any]] = {}  # request frame seq → its broker_epoch (+ _from)
    shutdowns: list[tuple[Event, Event]] = []  # (request, answer) of each ControlledShutdown

    def add(key: float, f: str, t: float, who: int | None, type_: str = "event", **value: Any) -> None:
        keyed.append((key, Event(run=run, src=SOURCE, seq=0, t_wall=t, t_mono=0, type=type_, f=f, process=who,
                                 value={"broker_id": who, **value})))

    ordered = sorted((e for e in frames if e.f == "kafka_frame"), key=lambda e: e.seq)
    by_seq = {e.seq: e for e in ordered}
    for e in ordered:
        v = e.value
        if not v.get("decoded"):
            continue
        api, kind = v.get("api"), v.get("kind")
        rid = f"{v.get('conn')}:{v.get('correlation_id')}"
        if kind == "request":
            requests[e.seq] = e
            if api in CONTROL_APIS or api == "ControlledShutdown":
                whose = v.get("src_broker") if api == "ControlledShutdown" else v.get("dst_broker")
                inferred[e.seq] = _request_epoch(v, at_send, whose, _sent_at(e, by_seq))
            if api in CONTROL_APIS:
                add(e.seq, "control_send", e.t_wall, v.get("controller_id"), request_id=rid, kind=api,
                    target=v.get("dst_broker"), controller_epoch=v.get("controller_epoch"),
                    **inferred[e.seq], max_broker_epoch=None, epoch_map=None, full=None,
                    partitions=_partitions(v))
            elif api == "ControlledShutdown":
                add(e.seq, "controlled_shutdown", e.t_wall, v.get("src_broker"), "invoke", broker=v.get("src_broker"),
                    request_id=rid, **inferred[e.seq])
            continue
        req = requests.get(v["req_seq"]) if isinstance(v.get("req_seq"), int) else None
        if req is None:
            continue
        rv = req.value
        code = error_code(v.get("error"))
        if api in CONTROL_APIS:
            broker = rv.get("dst_broker")
            add(e.seq, "control_recv", e.t_wall, broker, request_id=rid, kind=api, **{"from": rv.get("controller_id")},
                controller_epoch=rv.get("controller_epoch"), **inferred.get(req.seq, {"broker_epoch": None}),
                max_broker_epoch=None, own_epoch=_epoch_at(epochs, broker, e.t_wall), max_controller_epoch_seen=None,
                outcome="applied" if code == 0 else "rejected", error_code=code, full=None,
                partitions=_partitions(rv),
                partition_errors=[p for p in _partitions(v) if p.get("error")] or None)
        elif api == "ControlledShutdown":
            add(e.seq, "controlled_shutdown", e.t_wall, rv.get("src_broker"), "ok" if code == 0 else "fail",
                broker=rv.get("src_broker"), request_id=rid, **inferred.get(req.seq, {"broker_epoch": None}),
                error_code=code, remaining_partitions=_partitions(v), error=v.get("error"))
            shutdowns.append((req, e))
    sends = [ev for _, ev in keyed if ev.f == "control_send"]
    for req, answer in shutdowns:
        value = _shutdown_handled(req, answer, sends, inferred.get(req.seq, {"broker_epoch": None}))
        add(answer.seq + 0.5, "controlled_shutdown_handled", answer.t_wall, req.value.get("dst_broker"), **value)
    keyed.sort(key=lambda ke: ke[0])
    out = []
    for i, (_, ev) in enumerate(keyed, 1):
        ev.seq = i
        out.append(ev)
    return out


def _sent_at(e: Event, by_seq: dict[int, Event]) -> float:
    """When a request was first sent: a replayed frame's original's time (a copy of it), else its own."""
    orig = by_seq.get(e.value["replay_of"]) if isinstance(e.value.get("replay_of"), int) else None
    return orig.t_wall if orig is not None else e.t_wall


def _request_epoch(v: dict[str, Any], at_send: dict[int, list[tuple[float, int]]], whose: int | None,
                   t: float) -> dict[str, Any]:
    """A control request's or ControlledShutdown's broker epoch: its own (2.2+), else the registration
    of ``whose`` current at ``t`` (module docstring), marked as inferred."""
    if "broker_epoch" in v:
        return {"broker_epoch": v["broker_epoch"]}
    epoch = _epoch_at(at_send, whose, t)
    return {"broker_epoch": epoch, "broker_epoch_from": AT_SEND} if epoch is not None else {"broker_epoch": None}


def _shutdown_handled(req: Event, answer: Event, sends: list[Event], epoch: dict[str, Any]) -> dict[str, Any]:
    """The controller's handling of one ControlledShutdown as the wire shows it (module docstring)."""
    rv, av = req.value, answer.value
    b, controller = rv.get("src_broker"), rv.get("dst_broker")
    code = error_code(av.get("error"))
    mine = [s for s in sends if s.value.get("broker_id") == controller]
    before = [s for s in mine if s.value.get("target") == b and s.t_wall <= answer.t_wall]
    cached = before[-1].value.get("broker_epoch") if before else None
    end = answer.t_wall + CAUSE_SLACK_S
    leader: dict[str, int] = {}  # partition → the leader the last LeaderAndIsr named
    moves: list[dict[str, Any]] = []
    stops: list[str] = []
    for s in mine:
        if s.t_wall > end:
            break
        in_window = s.t_wall >= req.t_wall
        parts = [(f"{p.get('topic')}-{p.get('partition')}", p) for p in s.value.get("partitions") or []]
        if s.value.get("kind") == "StopReplica" and s.value.get("target") == b and in_window:
            stops += [name for name, _ in parts]
        elif s.value.get("kind") == "LeaderAndIsr":
            for name, p in parts:
                new = p.get("leader")
                if in_window and leader.get(name) == b and isinstance(new, int) and new != b:
                    moves.append({"partition": name, "from": b, "to": new, "request_id": s.value.get("request_id")})
                if isinstance(new, int):
                    leader[name] = new
    return {"request_id": f"{av.get('conn')}:{av.get('correlation_id')}", "broker_id": b, **epoch,
            "cached_epoch": cached, **({"cached_epoch_from": LAST_REQUEST} if cached is not None else {}),
            "outcome": "accepted" if code == 0 else "rejected", "error_code": code,
            "leader_moves": moves, "stop_replicas": sorted(set(stops)),
            "remaining_leaders": [f"{p.get('topic')}-{p.get('partition')}" for p in _partitions(av)]}


def map_run_frames(events_dir: Path, run_id: str = "") -> Path | None:
    """A run's ``kafkaproxy.jsonl`` mapped as ``kafkawire.jsonl`` beside it, with the brokers' own
    epochs from their logs' events (``kafka-<N>.jsonl``), a pre-2.2 log's registrations completed
    from the ZooKeeper wire proxy's creates (``zkproxy.jsonl``, when the run has it: such a log names
    no epoch); None when the run had no Kafka proxy."""
    frames = events_dir / "kafkaproxy.jsonl"
    if not frames.exists():
        return None
    from base.kafkalog import with_wire_registrations, write_events

    logs: list[Event] = [e for p in sorted(events_dir.glob("kafka-*.jsonl")) for e in read_events(p)]
    created = None
    zk = events_dir / "zkproxy.jsonl"
    if zk.exists():
        zk_events = list(read_events(zk))
        logs = [e for src in with_wire_registrations([logs], zk_events) for e in src]
        created = creation_epochs(zk_events)
    return write_events(wire_events(read_events(frames), logs, run_id, created), events_dir / "kafkawire.jsonl")
