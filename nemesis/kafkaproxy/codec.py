"""Kafka frames: split, decode (header + body) and summarise for rules and events.

Role in the data path: the Kafka proxy (``nemesis.kafkaproxy.proxy``) hands this module a *copy*
of each frame; what comes back (``Decoded``, ``Summary``) feeds the rules' ``KafkaFrameInfo`` and
the ``kafka_frame`` event. The original bytes are forwarded whatever this finds: an unknown API
key or version, or bytes that do not decode, come back with ``body = None`` and a one-line
``parse_error``, never an exception.

Framing (Kafka's ``NetworkReceive``): a big-endian int32 size, then that many bytes. A request
starts with its header: ``api_key`` int16, ``api_version`` int16, ``correlation_id`` int32, then
(header v1+) ``client_id`` and (v2, flexible versions) tagged fields; a response starts with
``correlation_id`` (and tagged fields in header v1). Which header version a message uses is in its
schema, so the header is decoded with the body's schema's ``__header_schema__``.

Codec: ``kio`` (PyPI; Aiven's, Apache-2.0), whose entity classes and readers/writers are generated
from the JSON message schemas in Kafka's own source tree
(``clients/src/main/resources/common/message/*.json``), with a native (Rust) reader. It is pinned
to 0.6.2, the last release generated from Kafka 3.x schemas: it has every version 0..max that
Kafka 2.0 to 3.9 speak of LeaderAndIsr (4, v0-7), StopReplica (5, v0-4), UpdateMetadata (6,
v0-8), ControlledShutdown (7, v0-3), AlterPartition/AlterIsr (56, v0-3), Produce (0, v0-11),
Fetch (1, v0-17), Metadata (3, v0-12) and ApiVersions (18, v0-4). kio 0.6.3 and later follow
Kafka 4.0, which removed the ZooKeeper-mode inter-broker APIs and the old versions of Produce and
Fetch, so they cannot decode a 2.x or 3.x controller's traffic. The alternatives were weighed:
kafka-python's and aiokafka's ``protocol`` packages are hand-written Struct tables, cover client
APIs only (no LeaderAndIsr, UpdateMetadata, StopReplica), and stop at old versions.
"""

from __future__ import annotations

import dataclasses
import io
import re
import struct
import uuid
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer

# A Kafka broker refuses requests larger than socket.request.max.bytes (default 100 MiB).
KAFKA_MAX_FRAME = 104_857_600
MAX_PARTITIONS_IN_EVENT = 50  # an event lists at most this many partitions (partition_count says all)
MAX_ISR_IN_EVENT = 16

# API names as Kafka spells them (``ApiKeys``): LeaderAndIsr, AlterPartition, ...
API_NAMES: dict[int, str] = {k: "".join(w.capitalize() for w in v.split("_")) for k, v in api_key_map.items()}
API_NAMES[3] = "Metadata"
_ALIASES = {"AlterIsr": 56, "alter_isr": 56}  # AlterIsr (2.7-3.1) is AlterPartition's old name
API_KEYS: dict[str, int] = {**{n: k for k, n in API_NAMES.items()}, **{v: k for k, v in api_key_map.items()},
                            **_ALIASES}
# the highest version of each API Kafka 3.9's brokers speak (its ApiVersions), for the ones the
# epoch-fencing stories need; the codec must have 0..these (tests/unit/test_kafkaproxy_codec.py)
KAFKA_39_MAX_VERSIONS = {0: 11, 1: 17, 3: 12, 4: 7, 5: 4, 6: 8, 7: 3, 18: 4, 56: 3}


class DecodeError(ValueError):
    """Bytes the codec cannot decode (the frame is still forwarded)."""


def api_name(key: int | None) -> str | None:
    if key is None:
        return None
    return API_NAMES.get(key, f"Unknown({key})")


def api_key_of(x: int | str) -> int:
    """An API by name (``LeaderAndIsr``, ``leader_and_isr``, ``AlterIsr``) or key; KeyError if unknown."""
    if isinstance(x, bool):
        raise KeyError(x)
    if isinstance(x, int):
        if x not in API_NAMES:
            raise KeyError(x)
        return x
    if isinstance(x, str) and x.strip().lstrip("-").isdigit():
        return api_key_of(int(x))
    return API_KEYS[x]


def versions(key: int) -> tuple[int, ...]:
    """The versions of API ``key`` the codec can decode."""
    name = api_key_map.get(key)
    return tuple(sorted(schema_name_map[name])) if name in schema_name_map else ()


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_{code}"


@dataclass(slots=True)
class Decoded:
    """One frame body, decoded as far as it goes."""

    kind: str  # request | response
    api_key: int | None = None
    api_version: int | None = None
    correlation_id: int | None = None
    client_id: str | None = None
    body: Any = None  # the kio entity, or None (undecoded)
    parse_error: str | None = None

    @property
    def decoded(self) -> bool:
        return self.body is not None


def _err(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())[:200]


def decode_request(body: bytes) -> Decoded:
    """A request frame's body (without the size prefix)."""
    d = Decoded("request")
    if len(body) < 8:
        d.parse_error = f"request shorter than its header ({len(body)} bytes)"
        return d
    d.api_key, d.api_version, d.correlation_id = struct.unpack_from(">hhi", body, 0)
    try:
        schema = load_request_schema(d.api_key, d.api_version)
    except Exception:  # noqa: BLE001 - kio's UnknownAPIKey/UnknownEntity: passed through undecoded
        d.parse_error = f"no schema for api key {d.api_key} version {d.api_version}"
        return d
    try:
        header, n = entity_reader(schema.__header_schema__)(body, 0)
        d.client_id = getattr(header, "client_id", None)
        entity, m = entity_reader(schema)(body, n)
        if n + m != len(body):
            raise DecodeError(f"{len(body) - n - m} bytes after the body")
        d.body = entity
    except Exception as e:  # noqa: BLE001 - any codec failure leaves the frame undecoded, never raises
        d.parse_error = _err(e)
    return d


def decode_response(body: bytes, api_key: int | None, api_version: int | None) -> Decoded:
    """A response frame's body, given the request it answers (None: unknown, left undecoded)."""
    d = Decoded("response", api_key, api_version)
    if len(body) < 4:
        d.parse_error = f"response shorter than its header ({len(body)} bytes)"
        return d
    d.correlation_id = struct.unpack_from(">i", body, 0)[0]
    if api_key is None or api_version is None:
        d.parse_error = "no request with this correlation id"
        return d
    try:
        schema = load_response_schema(api_key, api_version)
    except Exception:  # noqa: BLE001 - as in decode_request
        d.parse_error = f"no schema for api key {api_key} version {api_version}"
        return d
    try:
        _, n = entity_reader(schema.__header_schema__)(body, 0)
        entity, m = entity_reader(schema)(body, n)
        if n + m != len(body):
            raise DecodeError(f"{len(body) - n - m} bytes after the body")
        d.body = entity
    except Exception as e:  # noqa: BLE001 - as in decode_request
        d.parse_error = _err(e)
    return d


# ---------------------------------------------------------------------------------------------
# Summaries: what the epoch-fencing checkers need, found by field name in any version's schema

_SCALARS = ("controller_id", "controller_epoch", "broker_epoch", "replica_id", "broker_id", "replica_epoch")
_PARTITION_KEYS = ("partition_index", "partition", "index")
_TOPIC_KEYS = ("topic_name", "name", "topic")
_LEADER_KEYS = ("leader", "leader_id")
_ISR_KEYS = ("isr", "isr_nodes", "new_isr")
# AlterPartition v3 (KIP-903): the new ISR as (broker id, broker epoch) pairs
_ISR_WITH_EPOCHS_KEYS = ("new_isr_with_epochs",)
_EPOCH_KEYS = ("leader_epoch", "current_leader_epoch")
_INT_KEYS = ("partition_epoch", "fetch_offset")  # a partition's state version (zk_version); a replica's fetch position


@dataclass(slots=True)
class PartitionSummary:
    topic: str | None
    partition: int
    leader: int | None = None
    leader_epoch: int | None = None
    isr: tuple[int, ...] | None = None
    error: str | None = None
    # the topic's id where the frame names it beside its name (LeaderAndIsr v5+, UpdateMetadata v7+):
    # what maps the frames that name a topic by id only (AlterPartition v2+, Fetch v13+) to its name
    topic_id: str | None = None
    isr_epochs: tuple[int, ...] | None = None  # AlterPartition v3's broker epochs, in ``isr`` order
    ints: dict[str, int] = field(default_factory=dict)  # _INT_KEYS the schema carries

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"topic": self.topic, "partition": self.partition}
        if self.topic_id is not None:
            d["topic_id"] = self.topic_id
        if self.leader is not None:
            d["leader"] = self.leader
        if self.leader_epoch is not None:
            d["leader_epoch"] = self.leader_epoch
        if self.isr is not None:
            d["isr"] = list(self.isr[:MAX_ISR_IN_EVENT])
            if len(self.isr) > MAX_ISR_IN_EVENT:
                d["isr_size"] = len(self.isr)
        if self.isr_epochs is not None:
            d["isr_epochs"] = list(self.isr_epochs[:MAX_ISR_IN_EVENT])
        if self.error is not None:
            d["error"] = self.error
        d.update(self.ints)
        return d


@dataclass(slots=True)
class Summary:
    scalars: dict[str, int] = field(default_factory=dict)  # controller_id, controller_epoch, broker_epoch, ...
    partitions: list[PartitionSummary] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # every non-zero error code, by name, in order of first sight
    error: str | None = None  # the top-level error_code, by name


def _is_entity(v: Any) -> bool:
    return dataclasses.is_dataclass(v) and not isinstance(v, type)


def _topic_of(v: Any) -> str | None:
    for k in _TOPIC_KEYS:
        t = getattr(v, k, None)
        if isinstance(t, str):
            return t
    t = getattr(v, "topic_id", None)
    return str(t) if isinstance(t, uuid.UUID) else None


def summarise(entity: Any) -> Summary:
    """Walk a decoded request or response (any API, any version) for epochs, partitions and errors."""
    s = Summary()
    top = getattr(entity, "error_code", None)
    if top is not None and int(top) != 0:
        s.error = error_name(int(top))

    def note_error(code: Any) -> str | None:
        if code is None or int(code) == 0:
            return None
        name = error_name(int(code))
        if name not in s.errors:
            s.errors.append(name)
        return name

    note_error(top)

    def walk(v: Any, topic: str | None, depth: int, scalars: bool = True, tid: str | None = None) -> None:
        """``scalars``: the top level or a single nested entity (Fetch's replica_state), not an
        element of a list (LeaderAndIsr's live_leaders have broker ids of their own)."""
        if depth > 8:
            return
        if isinstance(v, tuple):
            for x in v:
                if _is_entity(x):
                    walk(x, topic, depth + 1, False, tid)
            return
        if not _is_entity(v):
            return
        own_topic = _topic_of(v) or topic
        own_tid = str(t) if isinstance(t := getattr(v, "topic_id", None), uuid.UUID) else tid
        part = next((getattr(v, k) for k in _PARTITION_KEYS if isinstance(getattr(v, k, None), int)), None)
        if part is not None and depth > 0:
            ps = PartitionSummary(own_topic, int(part))
            ps.leader = next((int(x) for k in _LEADER_KEYS if isinstance(x := getattr(v, k, None), int)), None)
            ps.leader_epoch = next((int(x) for k in _EPOCH_KEYS if isinstance(x := getattr(v, k, None), int)), None)
            ps.isr = next((tuple(int(i) for i in x) for k in _ISR_KEYS if isinstance(x := getattr(v, k, None), tuple)),
                          None)
            pairs = next((x for k in _ISR_WITH_EPOCHS_KEYS if isinstance(x := getattr(v, k, None), tuple)), None)
            if ps.isr is None and pairs is not None:
                ps.isr = tuple(int(e.broker_id) for e in pairs)
                ps.isr_epochs = tuple(int(e.broker_epoch) for e in pairs)
            ps.ints = {k: int(x) for k in _INT_KEYS if isinstance(x := getattr(v, k, None), int)
                       and not isinstance(x, bool)}
            if own_tid is not None and own_topic != own_tid:  # named both ways: the id is worth keeping
                ps.topic_id = own_tid
            ps.error = note_error(getattr(v, "error_code", None))
            s.partitions.append(ps)
        elif depth > 0:
            note_error(getattr(v, "error_code", None))
            # a topic with a list of bare partition indexes (StopReplica v1-2: topics[].partition_indexes)
            indexes = getattr(v, "partition_indexes", None)
            if isinstance(indexes, tuple):
                s.partitions += [PartitionSummary(own_topic, int(i)) for i in indexes if isinstance(i, int)]
        if part is None and scalars:
            for k in _SCALARS:
                x = getattr(v, k, None)
                if isinstance(x, int) and not isinstance(x, bool) and k not in s.scalars:
                    s.scalars[k] = int(x)
        for f in dataclasses.fields(v):
            x = getattr(v, f.name)
            if isinstance(x, tuple) or _is_entity(x):
                walk(x, own_topic, depth + 1, True, own_tid)

    walk(entity, None, 0)
    return s


_BROKER_IN_CLIENT_ID = re.compile(r"(?:broker|controller)-(\d+)")


def broker_from_client_id(client_id: str | None) -> int | None:
    """The broker id in a broker's client id (``broker-2-fetcher-0``, ``controller-1``...)."""
    m = _BROKER_IN_CLIENT_ID.search(client_id or "")
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------------------------
# Encoding (tests, benches and the fuzz harness build real frames with the same schemas)


def _write(entity: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def encode_request(entity: Any, correlation_id: int, client_id: str | None = "zkfence") -> bytes:
    """A whole request frame (size prefix, header, body) for a kio request entity."""
    hs = type(entity).__header_schema__
    names = {f.name for f in dataclasses.fields(hs)}
    kw: dict[str, Any] = {"request_api_key": type(entity).__api_key__,
                          "request_api_version": type(entity).__version__, "correlation_id": correlation_id}
    if "client_id" in names:
        kw["client_id"] = client_id
    data = _write(hs(**kw)) + _write(entity)
    return struct.pack(">i", len(data)) + data


def encode_response(entity: Any, correlation_id: int) -> bytes:
    """A whole response frame (size prefix, header, body) for a kio response entity."""
    data = _write(type(entity).__header_schema__(correlation_id=correlation_id)) + _write(entity)
    return struct.pack(">i", len(data)) + data
