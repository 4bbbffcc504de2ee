"""The Kafka wire proxy's frames → the events the epoch-fencing checkers read from the agents (pure).

The agents write what their control plane does (``control_send``, ``control_recv``,
``controlled_shutdown``...); a real broker writes none of it, but its requests and answers pass the
Kafka proxy (docs/kafkaproxy.md), whose ``kafka_frame`` events say the same things on the wire:

- a controller's LeaderAndIsr, UpdateMetadata or StopReplica request (``dir`` c2s) →
  ``control_send`` by the controller (``broker_id`` = its ``controller_id``) to ``target`` (the
  broker whose listener it reached), with its controller and broker epochs, at the time the proxy
  read it (a held request's too: it was sent then);
- the broker's answer (s2c, paired with its request by ``req_seq``) → ``control_recv`` by that
  broker: ``outcome`` ``rejected`` with the ``error_code`` when the top-level error is not none
  (STALE_BROKER_EPOCH is 77, STALE_CONTROLLER_EPOCH 11) or every partition of a LeaderAndIsr or
  StopReplica was refused (the first one's code: ``control_outcome``), else ``applied``, with the
  refused partitions, if any, in ``partition_errors``; the request's epochs, and
  ``own_epoch``: the broker's registration epoch current then, from its log's last ``register ok``
  before the answer (``base.kafkalog``; before 2.2, whose log names no epoch, the ZooKeeper proxy's
  create of its znode fills it in: ``map_run_frames``, else none); and ``max_controller_epoch_seen``:
  the highest controller epoch among this broker's applied answers that reached the proxy before
  this request did (none: null). Only those are known to have been handled first: a broker handles
  requests from different connections on its own threads and answers them in any order, so an
  answer that came back after this request went out may be to a request handled after it or
  before it (seen on 3.9.1 under load: a new controller's UpdateMetadata answered 0.4 ms before an
  older controller's LeaderAndIsr that had waited 4.6 s, and was handled, first). A request with no
  answer (dropped, held past its connection, the broker killed) says nothing of what the broker did,
  and maps to no ``control_recv``; nor does an answer that cannot tell (a cut list of refused
  partitions, ``control_outcome``);
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

- the ISR expansion's account (``isr_events``; Kafka 2.7+, whose leaders ask the controller with
  AlterIsr, renamed AlterPartition in 3.2), for ``isr_expansion``:

  - a replica's Fetch to a partition's leader that the leader answered without an error for that
    partition → ``fetch`` by the leader (``broker_id`` = ``leader`` = the broker whose listener it
    reached), ``replica`` its replica id, ``replica_epoch`` the fetching broker's epoch as the request
    carries it (Fetch v15+, KIP-903's ReplicaState; -1 when the broker did not know it yet; a 3.9.1
    broker in ZooKeeper mode sends its registration's czxid, seen in the KAFKA-14139 runs), -1
    when the version carries none (before v15:
    like the -1 Kafka sends, it names no incarnation and the checker judges it by the replica's
    process starts), null for a v15+ frame written without it, ``fetch_offset`` and ``leader_epoch`` (the
    request's current leader epoch) per partition. A fetch dropped, or answered with an error for
    the partition, did not reach the leader's follower state and maps to none. Fetch sessions
    (KIP-227) name a partition only when the follower's position changed, so a caught-up follower's
    empty fetches say nothing: the last fetch naming the partition is the one that moved it;
  - a leader's AlterPartition (AlterIsr) request → ``alter_partition`` by it (``request_id``
    ``<conn>:<correlation id>``, the request's broker epoch, leader epoch, partition epoch and new
    ISR, with its epochs from v3, else -1), ``held`` when a proxy rule held it. ``based_on_fetch``
    is INFERRED: for each replica of the new ISR, the last ``fetch`` above by that replica to this
    leader for the partition before the request, by the proxy's order. Kafka's leader sends the
    expansion from the fetch that caught the follower up (Partition.maybeExpandIsr runs in the
    fetch's handling) and one fetcher thread fetches a partition, so that is the fetch it rests on;
    a replica with no such fetch is left out (the checker then says unknown);
  - the controller's answer → ``alter_partition_handled`` by the broker whose listener the request
    reached (the controller), one per partition: ``outcome`` ``accepted`` when neither the top level
    nor the partition carries an error (a ZooKeeper-mode controller answers so only after its
    conditional write of the new state), else ``rejected``; ``isr``, ``leader_epoch`` and
    ``partition_epoch`` (the new state's znode version) as answered; ``live`` and ``ineligible`` null
    (the controller's view is not on the wire). A request with no answer maps to none.

  Frames from 2.8 on name topics by id in AlterPartition v2+ and Fetch v13+; the names come from the
  LeaderAndIsr/UpdateMetadata frames that carry both (``topic_names``), and an id no frame names
  stays the id. The committed states with their zxids are the observer's (``harness.observer``).
``full`` is null: the wire has no flag for the UpdateMetadata a controller sends a broker it has
just seen start (``KafkaController.onBrokerStartup``), and which partitions it must name is the
controller's state (those with a leader, 3.x), not the wire's: a partition list seen before is no
guide (after every broker was down, a new broker's first one names none). ``bounce_handling``
takes any UpdateMetadata for such an event (docs/checking.md).

Each derived event keeps the frame's time and is numbered in the proxy's order under source
``kafkawire``, with ``broker_id`` naming whose account it is; ``request_id`` is
``<conn>:<correlation id>`` (unique per proxy connection). The fields the contract says every writer
writes (``history.kinds.WRITTEN``) are present, null where the wire does not carry them
(``max_broker_epoch``: ZooKeeper-mode requests have none; ``full``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from base.kafkalog import epoch_at, registration_epochs, wire_creations, with_wire_registrations, write_events
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


def creation_epochs(zk_events: Iterable[Event]) -> dict[int, list[tuple[float, int]]]:
    """Broker id → (time, czxid) of each create of ``/brokers/ids/N`` the ZooKeeper wire proxy saw."""
    out: dict[int, list[tuple[float, int]]] = {}
    for path, created in wire_creations(zk_events).items():
        tail = path.removeprefix("/brokers/ids/")
        if tail.isdigit():
            out[int(tail)] = [(t, czxid) for t, _, czxid, _ in created]
    return out


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
    applied: dict[Any, list[tuple[int, int]]] = {}  # broker -> (answer's frame seq, controller epoch) applied

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
            decided = control_outcome(v)
            if decided is None:  # the answer does not say whether the broker acted on any partition
                continue
            outcome, code, refused = decided
            broker = rv.get("dst_broker")
            before = [ce for at, ce in applied.get(broker, []) if at < req.seq]
            add(e.seq, "control_recv", e.t_wall, broker, request_id=rid, kind=api, **{"from": rv.get("controller_id")},
                controller_epoch=rv.get("controller_epoch"), **inferred.get(req.seq, {"broker_epoch": None}),
                max_broker_epoch=None, own_epoch=epoch_at(epochs, broker, e.t_wall),
                max_controller_epoch_seen=max(before, default=None),
                outcome=outcome, error_code=code, full=None, partitions=_partitions(rv), partition_errors=refused)
            if outcome == "applied" and isinstance(rv.get("controller_epoch"), int):
                applied.setdefault(broker, []).append((e.seq, rv["controller_epoch"]))
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


def control_outcome(answer: dict[str, Any]) -> tuple[str, int, list[dict[str, Any]] | None] | None:
    """(outcome, error_code, partition_errors) of a control request's answer frame (module docstring),
    None when it cannot be told.

    A top-level error refuses the whole request. Without one, LeaderAndIsr and StopReplica answer an
    error per partition (v0-4 a flat list, LeaderAndIsr v5+ grouped by topic id; the proxy lists
    them either way): Kafka checks a request's controller (and, from 2.2, broker) epoch at the top,
    then each partition's leader epoch, so a request whose every partition was refused changed no
    partition's state, which is what "applied" claims: it is ``rejected``, with the first refused
    partition's code. Some refused and some not: ``applied``, the refused ones in
    ``partition_errors``. The proxy lists at most 50 partitions; ``partition_error_count`` counts
    the refused ones among all, and a frame written before it had it, whose listed partitions were
    all refused and whose list was cut, does not say whether an unlisted one was accepted."""
    top = error_code(answer.get("error"))
    listed = _partitions(answer)
    refused = [p for p in listed if p.get("error")]
    if top:
        return "rejected", top, refused or None
    if not refused:
        return "applied", 0, None
    if len(refused) < len(listed):
        return "applied", 0, refused
    total = answer.get("partition_count", len(listed))
    counted = answer.get("partition_error_count")
    if isinstance(counted, int) and isinstance(total, int):
        every = counted >= total
    elif total == len(listed):
        every = True
    else:
        return None
    return ("rejected", error_code(refused[0]["error"]), refused) if every else ("applied", 0, refused)


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
    epoch = epoch_at(at_send, whose, t)
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


FETCH_REPLICA_STATE = 15  # Fetch v15 (Kafka 3.5, KIP-903): ReplicaState {ReplicaId, ReplicaEpoch}
# what a Kafka proxy rule did with a frame that the broker then read (``nemesis.wireproxy`` actions)
_DELIVERED = ("forward", "delay", "duplicate", "hold")


def topic_names(frames: Iterable[Event]) -> dict[str, str]:
    """Topic id → name, from the frames that carry both (LeaderAndIsr v5+, UpdateMetadata v7+)."""
    out: dict[str, str] = {}
    for e in frames:
        for p in _partitions(e.value) if e.f == "kafka_frame" else []:
            if isinstance(p.get("topic_id"), str) and isinstance(p.get("topic"), str) and p["topic"] != p["topic_id"]:
                out[p["topic_id"]] = p["topic"]
    return out


def isr_events(frames: Iterable[Event], run: str = "") -> list[Event]:
    """The ``fetch``, ``alter_partition`` and ``alter_partition_handled`` events of a run's
    ``kafka_frame`` events (the module's docstring says what each is and what is inferred), in the
    proxy's order of the frames they come from, numbered 1.. under ``kafkawire`` (``based_on_fetch``
    cites those numbers; ``map_run_frames`` renumbers them with the control plane's)."""
    ordered = sorted((e for e in frames if e.f == "kafka_frame" and e.value.get("decoded")), key=lambda e: e.seq)
    names = topic_names(ordered)
    answers = {e.value["req_seq"]: e for e in ordered if e.value.get("kind") == "response"
               and e.value.get("api") in ("Fetch", "AlterPartition") and isinstance(e.value.get("req_seq"), int)}
    made: list[tuple[int, int, Event]] = []  # (frame seq, order within it, event)
    last_fetch: dict[tuple[Any, ...], Event] = {}  # (leader, replica, topic, partition) → its last fetch
    bases: list[tuple[Event, dict[str, Event]]] = []

    def add(at: Event, f: str, who: Any, **value: Any) -> Event:
        ev = Event(run=run, src=SOURCE, seq=0, t_wall=at.t_wall, t_mono=0, type="event", f=f, process=who,
                   value={"broker_id": who, **value})
        made.append((at.seq, len(made), ev))
        return ev

    def name(p: dict[str, Any]) -> Any:
        return names.get(p.get("topic"), p.get("topic"))

    for e in ordered:
        v = e.value
        if v.get("kind") != "request" or v.get("api") not in ("Fetch", "AlterPartition"):
            continue
        rid, answer = f"{v.get('conn')}:{v.get('correlation_id')}", answers.get(e.seq)
        if v.get("api") == "Fetch":
            replica = v.get("replica_id")
            if not isinstance(replica, int) or replica < 0 or answer is None or answer.value.get("error") \
                    or v.get("action") not in _DELIVERED:
                continue  # a consumer's fetch, or one the leader did not act on
            refused = {(name(p), p.get("partition")) for p in _partitions(answer.value) if p.get("error")}
            # v15+ carries the epoch (a frame written without it says nothing); before v15 none is sent
            epoch = v.get("replica_epoch") if (v.get("api_version") or 0) >= FETCH_REPLICA_STATE else -1
            for p in _partitions(v):
                if (name(p), p.get("partition")) in refused:
                    continue
                last_fetch[(v.get("dst_broker"), replica, name(p), p.get("partition"))] = add(
                    e, "fetch", v.get("dst_broker"), topic=name(p), partition=p.get("partition"), replica=replica,
                    replica_epoch=epoch if isinstance(epoch, int) else None, fetch_offset=p.get("fetch_offset"),
                    leader=v.get("dst_broker"), leader_epoch=p.get("leader_epoch"), request_id=rid)
            continue
        leader = v.get("src_broker")
        asked: dict[tuple[Any, Any], list[dict[str, int]]] = {}
        for p in _partitions(v):
            isr = [int(r) for r in p.get("isr") or []]
            with_epochs = [{"id": r, "epoch": int(ep)} for r, ep in zip(isr, p.get("isr_epochs") or [-1] * len(isr),
                                                                       strict=False)]
            asked[(name(p), p.get("partition"))] = with_epochs
            based = {str(r): f for r in isr if r != leader
                     and (f := last_fetch.get((leader, r, name(p), p.get("partition")))) is not None}
            ev = add(e, "alter_partition", leader, request_id=rid, topic=name(p), partition=p.get("partition"),
                     leader=leader, leader_epoch=p.get("leader_epoch"), partition_epoch=p.get("partition_epoch"),
                     new_isr_with_epochs=with_epochs, based_on_fetch={}, broker_epoch=v.get("broker_epoch"),
                     held=v.get("action") == "hold")
            bases.append((ev, based))
        if answer is None:
            continue
        top = error_code(answer.value.get("error"))
        for p in _partitions(answer.value):
            code = top or error_code(p.get("error"))
            add(answer, "alter_partition_handled", v.get("dst_broker"), request_id=rid, topic=name(p),
                partition=p.get("partition"), leader=leader, broker_epoch=v.get("broker_epoch"),
                new_isr_with_epochs=asked.get((name(p), p.get("partition"))),
                outcome="accepted" if code == 0 else "rejected", error_code=code,
                isr=p.get("isr") if code == 0 else None, leader_epoch=p.get("leader_epoch"),
                partition_epoch=p.get("partition_epoch"), live=None, ineligible=None)
    out = [ev for _, _, ev in sorted(made, key=lambda m: (m[0], m[1]))]
    for i, ev in enumerate(out, 1):
        ev.seq = i
    for ev, based in bases:
        ev.value["based_on_fetch"] = {r: f.id for r, f in based.items()}
    return out


def merged(control: list[Event], isr: list[Event]) -> list[Event]:
    """``wire_events``' and ``isr_events``' events as one ``kafkawire`` stream: merged by time (each
    is in the proxy's order already, and the proxy stamps its frames as it reads them), numbered
    again, and ``based_on_fetch`` citing the fetches' new ids."""
    if not isr:
        return control
    old = [(ev, ev.id) for ev in isr]  # the ids based_on_fetch cites (the control events' may be the same)
    out = list(heapq.merge(control, isr, key=lambda e: e.t_wall))
    for i, ev in enumerate(out, 1):
        ev.seq = i
    renamed = {was: ev.id for ev, was in old}
    for ev in isr:
        if ev.f == "alter_partition":
            ev.value["based_on_fetch"] = {r: renamed[f] for r, f in ev.value["based_on_fetch"].items()}
    return out


def map_run_frames(events_dir: Path, run_id: str = "") -> Path | None:
    """A run's ``kafkaproxy.jsonl`` mapped as ``kafkawire.jsonl`` beside it, with the brokers' own
    epochs from their logs' events (``kafka-<N>.jsonl``), a pre-2.2 log's registrations completed
    from the ZooKeeper wire proxy's creates (``zkproxy.jsonl``, when the run has it: such a log names
    no epoch); None when the run had no Kafka proxy."""
    frames = events_dir / "kafkaproxy.jsonl"
    if not frames.exists():
        return None

    logs: list[Event] = [e for p in sorted(events_dir.glob("kafka-*.jsonl")) for e in read_events(p)]
    created = None
    zk = events_dir / "zkproxy.jsonl"
    if zk.exists():
        zk_events = list(read_events(zk))
        logs = [e for src in with_wire_registrations([logs], zk_events) for e in src]
        created = creation_epochs(zk_events)
    read = list(read_events(frames))  # both mappings walk it: one read of the proxy's (large) file
    control = wire_events(read, logs, run_id, created)
    return write_events(merged(control, isr_events(read, run_id)), events_dir / "kafkawire.jsonl")
