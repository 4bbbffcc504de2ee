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
  before the answer (``base.kafkalog``; none before 2.2, whose log names no epoch). A request with no
  answer (dropped, held past its connection, the broker killed) says nothing of what the broker did,
  and maps to no ``control_recv``;
- a broker's ControlledShutdown → ``controlled_shutdown`` invoke, and its answer ok/fail.

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

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from history import Event, read_events

SOURCE = "kafkawire"
CONTROL_APIS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")


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


def _own_epoch(epochs: dict[int, list[tuple[float, int]]], broker: int | None, t: float) -> int | None:
    if broker is None:
        return None
    current = None
    for at, epoch in epochs.get(broker, []):
        if at <= t:
            current = epoch
    return current


def _partitions(frame: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in frame.get("partitions") or [] if isinstance(p, dict)]


def wire_events(frames: Iterable[Event], broker_events: Iterable[Event] = (), run: str = "") -> list[Event]:
    """The ``kafkawire`` events of a run's ``kafka_frame`` events (any order; the proxy's ``seq``
    decides), with own epochs from the brokers' ``register ok`` events."""
    epochs = registration_epochs(broker_events)
    out: list[Event] = []
    requests: dict[int, Event] = {}

    def add(f: str, t: float, who: int | None, type_: str = "event", **value: Any) -> None:
        out.append(Event(run=run, src=SOURCE, seq=len(out) + 1, t_wall=t, t_mono=0, type=type_, f=f,
                         process=who, value={"broker_id": who, **value}))

    for e in sorted((e for e in frames if e.f == "kafka_frame"), key=lambda e: e.seq):
        v = e.value
        if not v.get("decoded"):
            continue
        api, kind = v.get("api"), v.get("kind")
        rid = f"{v.get('conn')}:{v.get('correlation_id')}"
        if kind == "request":
            requests[e.seq] = e
            if api in CONTROL_APIS:
                add("control_send", e.t_wall, v.get("controller_id"), request_id=rid, kind=api,
                    target=v.get("dst_broker"), controller_epoch=v.get("controller_epoch"),
                    broker_epoch=v.get("broker_epoch"), max_broker_epoch=None, epoch_map=None, full=None,
                    partitions=_partitions(v))
            elif api == "ControlledShutdown":
                add("controlled_shutdown", e.t_wall, v.get("src_broker"), "invoke", broker=v.get("src_broker"),
                    request_id=rid, broker_epoch=v.get("broker_epoch"))
            continue
        req = requests.get(v["req_seq"]) if isinstance(v.get("req_seq"), int) else None
        if req is None:
            continue
        rv = req.value
        code = error_code(v.get("error"))
        if api in CONTROL_APIS:
            broker = rv.get("dst_broker")
            add("control_recv", e.t_wall, broker, request_id=rid, kind=api, **{"from": rv.get("controller_id")},
                controller_epoch=rv.get("controller_epoch"), broker_epoch=rv.get("broker_epoch"),
                max_broker_epoch=None, own_epoch=_own_epoch(epochs, broker, e.t_wall), max_controller_epoch_seen=None,
                outcome="applied" if code == 0 else "rejected", error_code=code, full=None,
                partitions=_partitions(rv),
                partition_errors=[p for p in _partitions(v) if p.get("error")] or None)
        elif api == "ControlledShutdown":
            add("controlled_shutdown", e.t_wall, rv.get("src_broker"), "ok" if code == 0 else "fail",
                broker=rv.get("src_broker"), request_id=rid, broker_epoch=rv.get("broker_epoch"), error_code=code,
                remaining_partitions=_partitions(v), error=v.get("error"))
    return out


def map_run_frames(events_dir: Path, run_id: str = "") -> Path | None:
    """A run's ``kafkaproxy.jsonl`` mapped as ``kafkawire.jsonl`` beside it, with the brokers' own
    epochs from their logs' events (``kafka-<N>.jsonl``); None when the run had no Kafka proxy."""
    frames = events_dir / "kafkaproxy.jsonl"
    if not frames.exists():
        return None
    from base.kafkalog import write_events

    logs = [e for p in sorted(events_dir.glob("kafka-*.jsonl")) for e in read_events(p)]
    return write_events(wire_events(read_events(frames), logs, run_id), events_dir / "kafkawire.jsonl")
