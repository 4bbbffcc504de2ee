"""A real Kafka broker's log → history events (``base.kafkalog``), on lines a Kafka 3.9.1 broker
wrote in a ``harness repro KAFKA-14845 --kafka 3.9.1 --zk-socket netty`` run (broker 2)."""

from __future__ import annotations

from base.kafkalog import log_time, parse_broker_log, to_events, with_view_epochs, with_wire_registrations
from history import Event

# verbatim, in log order (the continuation line of a stack trace included)
LOG = """\
[2026-11-23 23:00:43,571+0000] INFO Registered kafka:type=kafka.Log4jController MBean (kafka.utils.Log4jControllerRegistration$)
[2026-11-23 23:00:44,901+0000] INFO starting (kafka.server.KafkaServer)
[2026-11-23 23:00:46,434+0000] INFO Session establishment complete on server /127.0.0.1:45217, session id = 0x300024883eb0002, negotiated timeout = 3000 (org.apache.zookeeper.ClientCnxn)
\tzookeeper.session.timeout.ms = 3000
[2026-11-23 23:00:52,196+0000] INFO Registered broker 2 at path /brokers/ids/2 with addresses: PLAINTEXT://127.0.0.22:53137, czxid (broker epoch): 4294967341 (kafka.zk.KafkaZkClient)
[2026-11-23 23:00:52,231+0000] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)
[2026-11-23 23:00:56,624+0000] WARN Unable to reconnect to ZooKeeper service, session 0x300024883eb0002 has expired (org.apache.zookeeper.ClientCnxn)
[2026-11-23 23:00:56,625+0000] ERROR Unexpected throwable (org.apache.zookeeper.ClientCnxnSocketNetty)
org.apache.zookeeper.ClientCnxn$SessionExpiredException: Unable to reconnect to ZooKeeper service, session 0x300024883eb0002 has expired
[2026-11-23 23:00:58,499+0000] INFO Session establishment complete on server /127.0.0.1:42531, session id = 0x200024886330000, negotiated timeout = 3000 (org.apache.zookeeper.ClientCnxn)
[2026-11-23 23:00:58,546+0000] ERROR Error while creating ephemeral at /brokers/ids/2, node already exists and owner '0x100024883940001' does not match current session '0x200024886330000' (kafka.zk.KafkaZkClient$CheckedEphemeral)
[2026-11-23 23:00:58,573+0000] ERROR [Controller id=2] Error processing event RegisterBrokerAndReelect (kafka.controller.KafkaController)
"""

# a broker whose controller Startup failed on an expired session (the same Kafka 3.9.1)
FAILED_START = """\
[2026-11-23 22:57:50,614+0000] INFO starting (kafka.server.KafkaServer)
[2026-11-23 22:57:57,732+0000] ERROR [KafkaServer id=2] Fatal error during KafkaServer startup. Prepare to shutdown (kafka.server.KafkaServer)
[2026-11-23 22:57:59,430+0000] INFO Session establishment complete on server /127.0.0.1:39649, session id = 0x1000245f2200003, negotiated timeout = 3000 (org.apache.zookeeper.ClientCnxn)
[2026-11-23 22:57:59,596+0000] INFO Session: 0x1000245f2200003 closed (org.apache.zookeeper.ZooKeeper)
[2026-11-23 22:57:59,676+0000] INFO [KafkaServer id=2] shut down completed (kafka.server.KafkaServer)
"""


def test_log_time_reads_the_zone_and_defaults_to_utc():
    assert log_time("2026-11-23 23:00:44,901", "+0000") == log_time("2026-11-23 23:00:44,901", None)
    assert log_time("2026-11-23 23:00:44,901", "+0100") == log_time("2026-11-23 22:00:44,901", None)
    assert round(log_time("1970-01-01 00:00:01,250", None), 3) == 1.25


def test_registration_expiry_and_the_checked_ephemeral_refusal():
    got = parse_broker_log(LOG.splitlines(), broker_id=2, session_timeout_ms=3000)
    assert [(e.f, e.type) for e in got] == [
        ("agent_start", "event"), ("session", "event"), ("register", "ok"), ("session", "event"),
        ("session", "event"), ("register", "fail")]
    start, s1, reg, expired, s3, refused = got
    assert start.value == {"broker_id": 2, "session_timeout_ms": 3000} and start.line == 2
    assert s1.value == {"broker_id": 2, "state": "connected", "session_id": 0x300024883eb0002,
                        "negotiated_timeout_ms": 3000}
    # Kafka logs no session with the registration: it is the one last established
    assert reg.value["epoch"] == reg.value["czxid"] == 4294967341 and reg.value["session_id"] == 0x300024883eb0002
    assert expired.value["state"] == "expired" and expired.value["session_id"] == 0x300024883eb0002
    assert s3.value["session_id"] == 0x200024886330000
    assert refused.value == {"broker_id": 2, "session_id": 0x200024886330000, "owner": 0x100024883940001,
                             "error": "NODEEXISTS", "permanent": True, "retryable": False}
    assert refused.t_wall == log_time("2026-11-23 23:00:58,546", "+0000")


def test_other_brokers_lines_and_paths_say_nothing_about_this_one():
    assert [e.f for e in parse_broker_log(LOG.splitlines(), broker_id=1)] == ["agent_start", "session", "session",
                                                                               "session"]


def test_failed_startup_close_and_shutdown():
    got = parse_broker_log(FAILED_START.splitlines(), broker_id=2)
    assert [(e.f, e.value.get("state")) for e in got] == [
        ("agent_start", None), ("startup_failed", None), ("session", "connected"), ("session", "closed"),
        ("agent_stop", None)]
    assert got[-1].value["session_id"] is None  # closed before the shutdown completed


def test_events_are_the_brokers_own_source_numbered_in_log_order():
    events = to_events(parse_broker_log(LOG.splitlines(), broker_id=2), broker_id=2, run="r1")
    assert [e.id for e in events] == [f"agent:2/{i}" for i in range(1, 7)]
    assert all(e.process == 2 and e.run == "r1" for e in events)
    assert [e.t_wall for e in events] == sorted(e.t_wall for e in events)


# Kafka 2.8.2 (ZooKeeper client 3.5.9): "sessionid", and the expiry said twice
LOG_2_8 = """\
[2026-11-23 23:12:52,969+0000] INFO Session establishment complete on server localhost/127.0.0.1:37279, sessionid = 0x3000253a3be0000, negotiated timeout = 3000 (org.apache.zookeeper.ClientCnxn)
[2026-11-23 23:13:01,536+0000] WARN Unable to reconnect to ZooKeeper service, session 0x3000253a3be0000 has expired (org.apache.zookeeper.ClientCnxn)
[2026-11-23 23:13:01,537+0000] INFO Unable to reconnect to ZooKeeper service, session 0x3000253a3be0000 has expired, closing socket connection (org.apache.zookeeper.ClientCnxn)
"""


def test_the_zookeeper_3_5_client_of_kafka_2_8():
    got = parse_broker_log(LOG_2_8.splitlines(), broker_id=2)
    assert [(e.value["state"], e.value["session_id"]) for e in got] == [
        ("connected", 0x3000253a3be0000), ("expired", 0x3000253a3be0000)]


def test_kafka_2_8_names_the_foreign_owner_in_decimal():
    line = ("[2026-11-23 23:14:37,049+0000] ERROR Error while creating ephemeral at /brokers/ids/2, node already "
            "exists and owner '72060158440243204' does not match current session '144117752486625281' "
            "(kafka.zk.KafkaZkClient$CheckedEphemeral)")
    (refused,) = parse_broker_log([line], broker_id=2)
    assert (refused.f, refused.type) == ("register", "fail")
    assert refused.value["owner"] == 0x100025512_4a0004 and refused.value["session_id"] == 144117752486625281


def test_teardown_salvage_parses_a_real_brokers_log_into_its_events(tmp_path):
    """After a SIGKILL of the control node, ``harness teardown`` salvages the run: a Kafka broker's
    events come from its log files (the earlier start's may be missing), fetched from its node."""
    import shutil

    from harness.salvage import SALVAGED, salvage
    from history import read_events

    node_dir, run_dir = tmp_path / "node", tmp_path / "run"
    node_dir.mkdir()
    run_dir.mkdir()
    (node_dir / "kafka.log").write_text(LOG)

    def fetch(node: str, remote: str, local):  # noqa: ANN001 - the embedded nodes' files are local
        assert node == "b2"
        try:
            shutil.copyfile(remote, local)
        except OSError:
            return False
        return True

    state = {"run_dir": str(run_dir), "run_id": "r1", "agent_events": {},
             "kafka_logs": {"b2": [2, 3000, [str(node_dir / "kafka-previous.log"), str(node_dir / "kafka.log")]]}}
    assert salvage(state, fetch) == 7
    events = list(read_events(run_dir / "history.jsonl"))
    assert [(e.src, e.f, e.type) for e in events if e.src == "agent:2"][2] == ("agent:2", "register", "ok")
    assert events[-1].f == "run_interrupted" and events[-1].value["reason"] == SALVAGED
    assert (run_dir / "logs" / "b2-kafka-1.log").read_text() == LOG, "the log itself is kept with the run"


def test_a_registration_before_kip_380_carries_no_epoch():
    """Kafka 2.0 and 2.1 log the registration without a czxid (a 2.1.1 broker's line, verbatim): the
    event says so by lacking the epoch, and the checkers that need one say unknown, never "not
    registered"."""
    line = ("[2026-11-27 21:43:58,528+0000] INFO Registered broker 1 at path /brokers/ids/1 with addresses: "
            "ArrayBuffer(EndPoint(127.0.0.21,55973,ListenerName(PLAINTEXT),PLAINTEXT)) (kafka.zk.KafkaZkClient)\n")
    (reg,) = [e for e in parse_broker_log([line], 1) if e.f == "register"]
    assert reg.type == "ok" and reg.value == {
        "broker_id": 1, "session_id": None, "addr": "ArrayBuffer(EndPoint(127.0.0.21,55973,ListenerName(PLAINTEXT),PLAINTEXT))"}


def _wire(seq: int, t: float, **value) -> Event:  # noqa: ANN003
    return Event("r", "zkproxy", seq, t, 0, "event", "frame", None,
                 {"dir": "s2c", "kind": "reply", "err": 0, **value})


def test_a_registration_without_an_epoch_gets_the_session_and_czxid_the_wire_proxy_saw_create_it():
    """Before KIP-380 the log names neither: the ZooKeeper wire proxy saw the create (a plain create
    in 2.0/2.1, a multi from 2.2) and its reply's zxid, which is the znode's czxid. Each registration
    takes the last creation of its path up to the slack after its log line; a failed create, another
    broker's path and a registration that already has its epoch are left alone."""
    s1, s2 = 0x100, 0x200
    wire = [
        _wire(1, 10.0, op_name="create", path="/brokers/ids/1", session_id=s1, zxid=0x10),
        _wire(2, 10.1, op_name="create", path="/brokers/ids/2", session_id=s2, zxid=0x11),
        _wire(3, 20.0, op_name="create", path="/brokers/ids/1", session_id=s1, zxid=0x20, err=-110),  # NODEEXISTS
        _wire(4, 30.0, op_name="multi", created_paths=["/brokers/ids/1"], session_id=s2, zxid=0x30),
    ]
    broker = [Event("r", "agent:1", n, t, 0, "ok", "register", 1, {"broker_id": 1, "session_id": None, **extra})
              for n, t, extra in ((1, 10.4, {}), (2, 30.9, {}), (3, 31.0, {"epoch": 7, "czxid": 7}))]
    early = Event("r", "agent:1", 4, 5.0, 0, "ok", "register", 1, {"broker_id": 1})  # before any creation seen
    (got,) = with_wire_registrations([[*broker, early]], wire)
    got = list(got)
    assert [(e.value.get("session_id"), e.value.get("epoch"), e.value.get("wire_event")) for e in got] == [
        (s1, 0x10, "zkproxy/1"), (s2, 0x30, "zkproxy/4"), (None, 7, None), (None, None, None)]
    assert got[0].value["czxid"] == 0x10 and got[2] is broker[2] and got[3] is early
    assert with_wire_registrations([broker], []) == [broker]  # no proxy in the path: unchanged


def test_kafka_2_2_deletes_and_recreates_a_foreign_owners_ephemeral():
    """KAFKA-7165's fix as a 2.2.0 broker logged it (verbatim, in a KAFKA-6584 repro): the step is a
    ``register_delete`` naming the owner and the current session, then the registration with its epoch."""
    lines = [
        "[2026-11-28 07:00:09,355+0000] INFO Was not possible to create the ephemeral at /brokers/ids/2, node already "
        "exists and owner '72060917718122497' does not match current session '144118512974036992', trying to delete "
        "and re-create it with the newest Zookeeper session (kafka.zk.KafkaZkClient$CheckedEphemeral)\n",
        "[2026-11-28 07:00:09,371+0000] INFO Registered broker 2 at path /brokers/ids/2 with addresses: "
        "ArrayBuffer(EndPoint(127.0.0.22,58685,ListenerName(PLAINTEXT),PLAINTEXT)), czxid (broker epoch): 8589934596 "
        "(kafka.zk.KafkaZkClient)\n"]
    deleted, registered = parse_broker_log(lines, 2)
    assert (deleted.f, deleted.value) == ("register_delete", {"broker_id": 2, "owner": 72060917718122497,
                                                              "session_id": 144118512974036992})
    assert (registered.f, registered.type, registered.value["epoch"]) == ("register", "ok", 8589934596)
    assert parse_broker_log(lines[:1], 1) == []  # another broker's path


def test_the_controllers_election_and_reads_of_the_broker_ids_and_their_epochs_at_merge() -> None:
    """2.1's BrokerChange line has no bounced class; 2.2's (KIP-380) has, kept as ``bounced_logged``:
    the checkers' ``bounced`` ties an agent controller's list to its own sends, another source here."""
    lines = [
        "[2026-11-28 08:59:59,000] INFO [Controller id=1] 1 successfully elected as the controller. Epoch "
        "incremented to 4 and epoch zk version is now 3 (kafka.controller.KafkaController)",
        "[2026-11-28 09:00:00,000] INFO [Controller id=1] Newly added brokers: 3, deleted brokers: , all live "
        "brokers: 1,2,3 (kafka.controller.KafkaController)",
        "[2026-11-28 09:00:05,000] INFO [Controller id=1] Newly added brokers: , deleted brokers: 2, bounced brokers: "
        "3, all live brokers: 1,3 (kafka.controller.KafkaController)",
        "[2026-11-28 09:00:06,000] INFO [Controller id=2] Newly added brokers: 9, deleted brokers: , all live "
        "brokers: 9 (kafka.controller.KafkaController)",  # another broker's controller: not this log's
    ]
    elected, first, second = (p.value for p in parse_broker_log(lines, 1))
    assert elected == {"broker_id": 1, "controller_epoch": 4, "epoch_zk_version": 3, "session_id": None}
    assert first["controller_epoch"] == second["controller_epoch"] == 4
    assert first["new"] == [3] and first["dead"] == [] and first["bounced"] is None
    assert first["bounced_logged"] is None and first["live"] == {"1": None, "2": None, "3": None}
    assert second["dead"] == [2] and second["bounced_logged"] == [3] and second["bounced"] is None
    t0 = log_time("2026-11-28 09:00:00,000", None)
    reg = [Event("r", "agent:3", 1, t0 - 1, 0, "ok", "register", 3, {"broker_id": 3, "epoch": 40}),
           Event("r", "agent:3", 2, t0 + 4.5, 0, "ok", "register", 3, {"broker_id": 3, "epoch": 77})]
    controller = to_events(parse_broker_log(lines, 1), 1)
    out = with_view_epochs([controller, reg], [0, 1])
    views = [e.value["live"] for e in out[0] if e.f == "broker_change"]
    assert views == [{"1": None, "2": None, "3": 40}, {"1": None, "3": 77}]
