"""The event contract: every kind of event a source writes and its value fields, declared once.

A declarative table (no logic beyond building it). Writers (agents, the ZooKeeper wire proxy,
the nemesis, the observer, the harness, workload clients) emit these kinds; checkers declare which
kinds and fields they read from this table, and the Spark loader parses exactly those fields, with
the types given here. ``docs/events.md`` describes the same kinds; a test holds the two equal, and
another holds every literal ``emit(...)`` in the writers to this table.

A field has one canonical type (``FIELD_TYPES``); a kind that uses the name for something else says
so inline (``bounced:bool`` in ``broker_startup_handled``). ``TYPES`` maps each alias to the Spark
SQL type the loader parses with; the control node's plain-Python reader converts the same way.
``json`` is any JSON value kept as its text. Fields are optional: a writer may leave one out, and a
reader gets null for a missing or wrong-typed field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# Type aliases used in this table -> the Spark SQL type the loader parses with.
TYPES: Mapping[str, str] = MappingProxyType({
    "int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN", "str": "STRING", "json": "STRING",
    "ints": "ARRAY<BIGINT>", "strs": "ARRAY<STRING>",
    "int_map": "MAP<STRING,BIGINT>", "str_map": "MAP<STRING,STRING>",
})

# An event's ``type``: Jepsen's op types (``info``: outcome unknown), or ``event`` for a plain event.
OP_TYPES = ("invoke", "ok", "fail", "info", "event")

# Sources (the ``src`` of an event): ``agent:<broker id>``, ``client`` (workload clients; a client
# built with its own writer uses that writer's src), and the four singletons.
AGENT, CLIENT, OBSERVER, NEMESIS, HARNESS, ZKPROXY = "agent", "client", "observer", "nemesis", "harness", "zkproxy"
KAFKAPROXY = "kafkaproxy"
KAFKAWIRE = "kafkawire"  # the Kafka proxy's frames mapped onto the agents' kinds (base.kafkawire)
SOURCES = (AGENT, CLIENT, OBSERVER, NEMESIS, HARNESS, ZKPROXY, KAFKAPROXY, KAFKAWIRE)

# The canonical type of every value field name. JSON integers are 64-bit: session ids, czxids and
# zxids stay exact as ``int``.
FIELD_TYPES: Mapping[str, str] = MappingProxyType({
    # identity, sessions, registration
    "broker_id": "int", "broker": "int", "pid": "int", "port": "int", "toggles": "json", "extra": "json",
    "session_timeout_ms": "int", "negotiated_timeout_ms": "int", "requested_session_id": "int",
    "session_id": "int", "recorded_session": "int", "owner": "int", "epoch": "int", "czxid": "int",
    "mzxid": "int", "zxid": "int", "exists": "bool", "final": "bool", "state": "str", "reason": "str",
    "error": "str", "attempt": "int", "mode": "str", "pipelined": "bool", "addr": "str",
    "path_existed": "bool", "retryable": "bool", "permanent": "bool", "result": "str", "connected": "bool",
    "session_learned": "bool", "multi_err": "json", "timed_out": "bool", "closed_by_peer": "bool",
    "created": "bool",
    # controller
    "controller_epoch": "int", "controller_id": "int", "expected_epoch": "int", "epoch_zk_version": "int",
    "checked_version": "int", "op": "str", "path": "str", "preferred": "int", "queued": "int", "event": "str",
    "live": "int_map", "new": "ints", "dead": "ints", "bounced": "ints", "brokers": "ints", "epochs": "int_map",
    "partitions": "json", "request_id": "str", "kind": "str", "target": "int", "from": "int",
    "broker_epoch": "int", "max_broker_epoch": "int", "epoch_map": "int_map", "full": "bool", "shared": "bool",
    "debug": "bool", "own_epoch": "int", "max_controller_epoch_seen": "int", "outcome": "str",
    "error_code": "int", "partition_errors": "json", "cached_epoch": "int", "leader_moves": "json",
    "stop_replicas": "json", "remaining_leaders": "json", "remaining_partitions": "json",
    "broker_epoch_from": "str", "cached_epoch_from": "str", "replay": "bool", "replay_of": "int",
    "shutdown_answer_delay_ms": "float",
    # partitions and data
    "topic": "str", "partition": "int", "role": "str", "leader": "int", "leader_epoch": "int", "isr": "ints",
    "zk_version": "int", "leo": "int", "hw": "int", "deleted": "bool", "to_offset": "int", "dropped": "json",
    "checkpointed": "bool", "dropped_hw": "json",
    "replica": "int", "replica_epoch": "int", "fetch_offset": "int", "partition_epoch": "int",
    "new_isr_with_epochs": "json", "based_on_fetch": "str_map", "held": "bool", "ineligible": "ints",
    "offset": "int", "consumer": "int", "value": "json", "acks": "json", "offsets": "ints", "values": "json", "replicas": "json",
    # harness
    "live_brokers": "ints", "test": "str", "schedule": "str", "scenario": "str", "fixed": "bool",
    "what": "str", "seed": "int", "jira": "str", "variant": "str",
    # nemesis
    "phase": "str", "stage": "str", "targets": "strs", "instant": "bool", "links": "strs",
    "toxics_removed": "json", "grudge_map": "json", "nodes": "json", "tables_removed": "json", "stream": "str", "grudge": "str", "direction": "str",
    "latency_ms": "float", "jitter_ms": "float", "rate_kb": "float", "timeout_ms": "int", "delay_ms": "float",
    "rules": "json", "rule_ids": "json", "rules_removed": "json", "zkproxy_rules_cleared": "json",
    "kafkaproxy_rules_cleared": "json",
    "released": "json", "held_requests": "json", "delivered": "json", "hooks_released": "json",
    "held_requests_dropped": "json", "to": "json", "healed": "json", "refused": "json", "noop": "bool",
    "ended": "strs",
    # ZooKeeper wire proxy
    "conn": "int", "upstream": "str", "upstream_local": "str", "listener": "int", "client": "str",
    "dir": "str", "bytes": "int", "xid": "int", "op_name": "str", "sub_ops": "json", "err": "int",
    "action": "str", "rule_id": "str", "held_ms": "float", "p_draw": "float", "req_seq": "int",
    "multi_errs": "json", "multi_failed": "bool", "created_paths": "json",
    "parse_error": "str", "last_zxid_seen": "int", "read_only": "bool", "protocol_version": "int",
    "expired": "bool", "connect_result": "str", "client_closed": "bool", "raw_hex": "str", "max_frame": "int",
    "ephemeral": "bool", "flags": "int", "event_type": "int", "event_name": "str",
    "closed_first": "str", "frames": "json", "pending": "json", "blackhole": "json", "dirs": "strs",
    "cause_seq": "int", "after_ms": "float", "rst": "bool", "frame_seq": "int", "forwarded_to_client": "bool",
    "expected": "int", "got": "int", "word": "str", "name": "str", "armed": "bool", "was_armed": "bool",
    "rule": "json", "count": "int", "listeners": "json", "held_on_close": "json", "connections": "int",
    "sessions": "int",
    # Kafka wire proxy
    "api": "str", "api_key": "int", "api_version": "int", "correlation_id": "int", "client_id": "str",
    "src_broker": "int", "dst_broker": "int", "replica_id": "int", "partition_count": "int",
    "partition_error_count": "int", "errors": "strs",
    "decoded": "bool", "copies": "int", "hold_ms": "float", "how": "str",
    # register workload (ZooKeeper znodes as registers)
    "key": "str", "version": "int", "server": "str",
})


@dataclass(frozen=True, slots=True)
class Kind:
    name: str  # the event's ``f``
    sources: tuple[str, ...]
    types: tuple[str, ...]  # the event types it is written with (``event``, or op types)
    fields: Mapping[str, str]  # value field -> type alias (``TYPES``)
    open: bool = False  # writers add fields beyond these (fault details, free-form steps): not readable

    def spark_type(self, field: str) -> str:
        return TYPES[self.fields[field]]


def _kind(name: str, sources: str, types: str, fields: str, *, open: bool = False) -> Kind:
    """``fields``: space-separated names, each ``name`` (canonical type) or ``name:alias``."""
    out: dict[str, str] = {}
    for spec in fields.split():
        field, _, alias = spec.partition(":")
        out[field] = alias or FIELD_TYPES[field]
    return Kind(name, tuple(sources.split()), tuple(types.split()), MappingProxyType(out), open)


def _agent(name: str, fields: str, types: str = "event") -> Kind:
    """An agent event: every one carries broker_id (the agent's own id, or the row's own meaning)."""
    return _kind(name, AGENT, types, f"broker_id {fields}")


def _zkproxy(name: str, fields: str) -> Kind:
    return _kind(name, ZKPROXY, "event", fields)


def _wireproxy(name: str, fields: str) -> Kind:
    """A kind both wire proxies write (``nemesis.wireproxy``: connections, rules, delivery)."""
    return _kind(name, f"{ZKPROXY} {KAFKAPROXY}", "event", fields)


OPS = "invoke ok fail info"

# Faults the nemesis writes as an op (``type = info``; ``stage`` invoke/complete/error, ``phase``
# start/stop). The catalogue is ``nemesis.registry.FAULTS``; this package is shipped to the brokers and
# imports nothing of the nemesis, so it keeps the names itself, and a test
# (tests/unit/test_contract_writers.py) holds them equal and names the fault missing on either side.
FAULTS = (
    "isolate", "cut", "partition", "net_partition", "latency", "bandwidth", "reset_peer", "slow_close", "kill", "pause", "shutdown",
    "bounce", "fast_bounce", "wipe", "zk_rules", "hold_controller", "hold_alter_partition", "delay_request",
    "hold_control", "drop_control", "delay_alter_partition", "kafka_rules", "replay_control",
)
_FAULT_FIELDS = (
    "phase stage targets error reason instant seed result:json links toxics_removed grudge_map stream grudge direction "
    "latency_ms jitter_ms kind rate_kb timeout_ms delay_ms rules rule_ids rules_removed held:json released "
    "held_requests delivered to topic partition nodes tables_removed hold_ms api replayed:json "
    "shutdown_answer_delay_ms"
)

KINDS: Mapping[str, Kind] = MappingProxyType({k.name: k for k in (
    # --- agents (src agent:<N>, process N) -------------------------------------------------------------
    _agent("agent_start", "pid toggles session_timeout_ms port extra"),
    _agent("agent_stop", "reason epoch session_id"),
    _agent("startup_failed", "reason"),
    _agent("session", "state session_id negotiated_timeout_ms"),
    _agent("register", "attempt mode session_id pipelined addr epoch czxid recorded_session owner "
                       "path_existed error retryable permanent", OPS),
    _agent("register_resend", "reason session_id"),
    _agent("register_delete", "owner session_id recorded_session result"),
    _agent("register_skipped", "session_id reason"),
    _agent("pipeline_register", "addr connected session_learned session_id negotiated_timeout_ms multi_err "
                                "timed_out closed_by_peer error"),
    _agent("deregistered", "epoch session_id reason"),
    _agent("controller_election", "expected_epoch epoch_zk_version session_id controller_epoch controller_id error",
           "invoke fail"),
    _agent("election_skipped", "preferred"),
    _agent("controller_elected", "controller_epoch epoch_zk_version session_id"),
    _agent("controller_resigned", "controller_epoch reason"),
    _agent("controller_hold", ""),
    _agent("controller_release", "queued"),
    _agent("controller_event_error", "event error"),
    _agent("controller_zk_write", "controller_epoch checked_version op path zxid error", "ok fail"),
    _agent("broker_change", "controller_epoch live new dead bounced reason"),
    _agent("broker_failure_handled", "controller_epoch brokers partitions"),
    _agent("broker_startup_handled", "controller_epoch brokers bounced:bool epochs partitions"),
    _agent("topics_created", "controller_epoch partitions"),
    _kind("control_send", f"{AGENT} {KAFKAWIRE}", "event", "broker_id request_id kind target controller_epoch "
          "broker_epoch max_broker_epoch epoch_map full partitions shared debug broker_epoch_from"),
    _agent("control_response", "request_id kind target error_code partition_errors"),
    _kind("control_recv", f"{AGENT} {KAFKAWIRE}", "event", "broker_id request_id kind from controller_epoch "
          "broker_epoch max_broker_epoch own_epoch max_controller_epoch_seen outcome error_code full partitions "
          "partition_errors broker_epoch_from"),
    _agent("replica_state", "topic partition role leader leader_epoch isr zk_version leo hw request_id "
                            "deleted"),
    _agent("truncate", "topic partition to_offset dropped reason"),
    _agent("log_open", "topic partition leo hw checkpointed"),
    _agent("hw_checkpoint", "partitions dropped dropped_hw"),
    _kind("controlled_shutdown", f"{AGENT} {CLIENT} {KAFKAWIRE}", OPS, "broker_id broker request_id broker_epoch error_code "
          "remaining_partitions error broker_epoch_from"),
    _kind("controlled_shutdown_handled", f"{AGENT} {KAFKAWIRE}", "event", "broker_id request_id broker_epoch "
          "cached_epoch outcome error_code leader_moves stop_replicas remaining_leaders broker_epoch_from "
          "cached_epoch_from"),
    # the agents write these; with real brokers, the Kafka proxy's frames mapped (base.kafkawire.isr_events)
    _kind("fetch", f"{AGENT} {KAFKAWIRE}", "event",
          "broker_id topic partition replica replica_epoch fetch_offset leader leader_epoch request_id"),
    _kind("alter_partition", f"{AGENT} {KAFKAWIRE}", "event", "broker_id request_id topic partition leader "
          "leader_epoch partition_epoch new_isr_with_epochs based_on_fetch broker_epoch held"),
    _agent("alter_partition_response", "request_id topic partition error_code isr partition_epoch"),
    _kind("alter_partition_handled", f"{AGENT} {KAFKAWIRE}", "event", "broker_id request_id topic partition leader "
          "broker_epoch new_isr_with_epochs outcome error_code isr leader_epoch partition_epoch live ineligible"),
    # the agents' controllers write it; with real brokers, the observer's reads of the state znodes
    _kind("partition_state", f"{AGENT} {OBSERVER}", "event",
          "broker_id topic partition leader leader_epoch isr controller_epoch zk_version zxid"),
    _agent("preferred_controller_handover", "controller_epoch preferred"),
    _agent("ready_to_serve", "created session_id"),
    _agent("produce_handled", "topic partition offset value acks leader_epoch hw error_code"),
    _agent("log_end", "topic partition offsets values hw leo"),
    # --- workload clients (src client, or a client's own writer) ---------------------------------------
    _kind("append", CLIENT, OPS, "topic partition value acks offset leader error_code error"),
    _kind("create_topic", CLIENT, OPS, "topic partitions:int replicas error"),
    _kind("send", CLIENT, OPS, "topic partition value acks offset leader error_code error"),
    _kind("poll", CLIENT, OPS, "topic partition consumer offset offsets values hw leader leader_epoch error_code error"),
    _kind("final_read", CLIENT, OPS, "topic partition offsets values hw leader leader_epoch error_code error"),
    _kind("reg_create", CLIENT, OPS, "key version server error"),
    _kind("reg_read", CLIENT, OPS, "key mode value version server error"),
    _kind("reg_write", CLIENT, OPS, "key value version server error"),
    _kind("reg_cas", CLIENT, OPS, "key value expected version server error"),
    # --- the harness's observer: its own ZooKeeper session, never faulted -------------------------------
    _kind("broker_znode", OBSERVER, "event", "broker_id exists czxid owner mzxid final"),
    _kind("broker_znode_unreadable", OBSERVER, "info", "broker_id error"),
    # --- the harness ------------------------------------------------------------------------------------
    _kind("run_start", HARNESS, "event", "brokers test toggles schedule scenario fixed seed jira variant",
          open=True),
    _kind("run_end", HARNESS, "event", "live_brokers"),
    _kind("run_error", HARNESS, "event", "error"),
    _kind("run_interrupted", HARNESS, "event", "reason"),
    _kind("repro_step", HARNESS, "event", "what", open=True),
    # --- the nemesis: one kind per fault, and heal --------------------------------------------------------
    *(_kind(f, NEMESIS, "info", _FAULT_FIELDS, open=True) for f in FAULTS),
    _kind("heal", NEMESIS, "info", "phase stage reason error toxics_removed zkproxy_rules_cleared "
          "kafkaproxy_rules_cleared hooks_released "
          "held_requests_dropped tables_removed noop ended", open=True),
    # --- the ZooKeeper wire proxy (src zkproxy) -----------------------------------------------------------
    _zkproxy("frame", "conn upstream dir kind bytes session_id xid op:int op_name path:json sub_ops zxid err "
                      "action rule_id delay_ms held_ms p_draw req_seq latency_ms multi_errs multi_failed "
                      "created_paths parse_error timeout_ms last_zxid_seen read_only protocol_version "
                      "expired connect_result client_closed ephemeral flags event_type event_name"),
    _wireproxy("conn_open", "conn upstream listener client upstream_local error replay"),
    _wireproxy("conn_close", "conn upstream closed_first reason state blackhole bytes:json frames pending "
                           "session_id replay"),
    _zkproxy("session_established", "conn upstream session_id requested_session_id new:bool "
                                    "negotiated_timeout_ms frame_seq forwarded_to_client connect_result"),
    _zkproxy("session_orphaned", "conn upstream session_id frame_seq reason"),
    _wireproxy("client_close", "conn upstream reason state session_id held_ms held_on_close"),
    _zkproxy("notification_unparsed", "conn upstream frame_seq bytes raw_hex parse_error"),
    _zkproxy("session_rejected", "conn upstream requested_session_id frame_seq forwarded_to_client"),
    _wireproxy("blackhole", "conn upstream dirs rule_id session_id cause_seq"),
    _wireproxy("close_scheduled", "conn upstream rule_id after_ms rst cause_seq"),
    _wireproxy("proxy_close", "conn upstream rule_id rst session_id cause_seq"),
    _wireproxy("frame_discarded", "conn upstream dir frame_seq reason"),
    _wireproxy("frame_released", "conn upstream dir frame_seq"),
    _zkproxy("xid_mismatch", "conn upstream expected got req_seq"),
    _zkproxy("unmatched_reply", "conn upstream xid"),
    _wireproxy("protocol_error", "conn upstream dir error"),
    _zkproxy("four_letter", "conn upstream dir word"),
    _wireproxy("rule_added", "rule_id rule"),
    _wireproxy("rule_removed", "rule_id"),
    _wireproxy("rules_cleared", "count"),
    _wireproxy("rule_armed", "name armed rule_ids was_armed"),
    _wireproxy("proxy_start", "listeners rules seed held_on_close max_frame"),
    _wireproxy("proxy_stop", "connections sessions"),
    _wireproxy("hold_released", "conn upstream dir frame_seq rule_id how"),
    # --- the Kafka wire proxy (src kafkaproxy) ------------------------------------------------------------
    _kind("kafka_frame", KAFKAPROXY, "event",
          "conn upstream dir kind bytes api api_key api_version correlation_id client_id decoded parse_error "
          "src_broker dst_broker controller_id controller_epoch broker_epoch replica_id replica_epoch partitions "
          "partition_count errors error action rule_id delay_ms held_ms hold_ms copies p_draw req_seq latency_ms "
          "replay_of partition_error_count"),
)})


@dataclass(frozen=True)
class Need:
    """Value fields a checker cannot decide without, on events of ``kind`` (of the op ``types``, all
    when empty; only on events whose fields hold one of the listed values, ``when``)."""

    kind: str
    fields: tuple[str, ...]
    types: tuple[str, ...] = ()
    when: tuple[tuple[str, tuple[object, ...]], ...] = ()

    def missing(self, record: Mapping[str, object]) -> tuple[str, ...]:
        """The needed fields the event lacks (none when the need does not apply to it). A ``when``
        field the event lacks cannot say the need does not apply: it applies."""
        if self.types and record["type"] not in self.types:
            return ()
        value = record.get("value") or {}
        assert isinstance(value, Mapping)
        if any(f in value and value[f] not in allowed for f, allowed in self.when):
            return ()
        return tuple(f for f in self.fields if f not in value)

    def within(self, fields: tuple[str, ...]) -> Need | None:
        """This need cut to ``fields`` (what a checker reads), or None if it keeps none of them."""
        kept = tuple(f for f in self.fields if f in fields)
        return Need(self.kind, kept, self.types, self.when) if kept else None


# The fields every writer of a kind writes on it (agents, the observer, the wire proxy, workload
# clients, and the real brokers' log parser), present even when null. A checker that reads one of
# them needs it (``checkers.checker.needs_of``): an event without it is damaged, not evidence. A field
# only some writers write (``owner`` of a real broker's registration) is not here.
WRITTEN: tuple[Need, ...] = (
    Need("register", ("broker_id", "epoch", "czxid", "session_id"), ("ok",)),
    Need("broker_znode", ("broker_id", "exists")),
    Need("broker_znode", ("czxid", "owner", "mzxid"), when=(("exists", (True,)),)),
    Need("control_recv", ("request_id", "kind", "from", "controller_epoch", "broker_epoch", "max_broker_epoch",
                          "own_epoch", "max_controller_epoch_seen", "outcome", "error_code", "full")),
    Need("control_send", ("request_id", "kind", "target", "controller_epoch", "broker_epoch", "max_broker_epoch",
                          "epoch_map", "full")),
    Need("broker_change", ("controller_epoch", "live", "new", "dead", "bounced")),
    Need("controller_elected", ("controller_epoch", "epoch_zk_version")),
    Need("controller_zk_write", ("controller_epoch", "checked_version", "op", "path", "zxid")),
    Need("controlled_shutdown_handled", ("broker_epoch", "cached_epoch", "outcome", "error_code", "leader_moves",
                                         "stop_replicas")),
    Need("partition_state", ("topic", "partition", "leader", "leader_epoch", "isr", "controller_epoch",
                             "zk_version", "zxid")),
    Need("fetch", ("topic", "partition", "replica", "replica_epoch", "leader", "leader_epoch", "fetch_offset")),
    Need("alter_partition", ("request_id", "topic", "partition", "broker_epoch", "based_on_fetch")),
    Need("alter_partition_handled", ("request_id", "topic", "partition", "broker_epoch", "outcome", "error_code",
                                     "leader", "live")),
    Need("alter_partition_handled", ("isr", "partition_epoch"), when=(("outcome", ("accepted",)),)),
    Need("frame", ("dir", "session_id")),
    Need("frame", ("zxid",), when=(("dir", ("s2c",)), ("kind", ("reply", "notification", "ping", "auth", "close")))),
    Need("send", ("topic", "partition", "value", "acks")),
    Need("send", ("offset", "leader"), ("ok",)),
    Need("poll", ("topic", "partition", "consumer")),
    Need("poll", ("offset", "offsets", "values", "hw", "leader", "leader_epoch"), ("ok",)),
    Need("final_read", ("topic", "partition")),
    Need("final_read", ("offsets", "values", "hw", "leader", "leader_epoch"), ("ok",)),
    Need("reg_read", ("key", "mode")),
    Need("reg_read", ("server", "value", "version"), ("ok",)),
    Need("reg_write", ("key", "value")),
    Need("reg_write", ("server", "version"), ("ok",)),
)

# The session that owns a registration's znode: the agents write it with the registration, a real
# broker's log does not say it. A checker that compares owners needs it (``Checker.needs``).
REGISTRATION_OWNER = Need("register", ("owner",), ("ok",))


def kinds_of(source: str) -> tuple[str, ...]:
    """Every kind a source writes (e.g. each nemesis fault, for a checker that reads any nemesis op)."""
    return tuple(k.name for k in KINDS.values() if source in k.sources)
