"""Agent process: a Kafka broker in ZooKeeper mode, reduced to what the fencing protocols need.

Threads: kazoo's own; the controller event thread (this process's main thread, K37
``ControllerEventManager``: registration after expiry, election, broker/topic changes,
AlterPartition, ControlledShutdown all run here, one at a time, and ``hold``/``release`` pause it);
the control-plane listener (one thread per connection); a follower fetcher; the leader's ISR
maintenance; and one sender per target broker while this broker is the controller.

No ZooKeeper call ever runs inside a kazoo callback: watches and state changes only enqueue.
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from agent import errors
from agent import znodes as zn
from agent.config import AgentConfig, ConfigError
from agent.controller import Controller, ControllerMoved
from agent.net import ControlServer, request
from agent.registration import NO_SESSION, AfterNodeExists, after_node_exists, retry_policy
from agent.replica import ReplicaManager
from history import Event, EventWriter


def broker_path(broker_id: int) -> str:
    return zn.broker_path(broker_id)


def broker_json(cfg: AgentConfig) -> bytes:
    """BrokerIdZNode v5 payload as Kafka writes it (K37 ZkData)."""
    return zn.broker_payload(cfg.host, cfg.port)


class RegistrationFailed(Exception):
    """Kafka's NodeExistsException out of CheckedEphemeral: the event fails, nothing retries."""


class BrokerAgent:
    def __init__(self, cfg: AgentConfig) -> None:
        self.cfg = cfg
        # A restarted agent appends to the same file; EventWriter continues its seq numbering.
        self.events = EventWriter(cfg.events_path, src=f"agent:{cfg.broker_id}", run=cfg.run)
        self.path = broker_path(cfg.broker_id)
        self.recorded_session = NO_SESSION  # R: set after every successful create
        self.registered_session: int | None = None
        self.epoch: int | None = None
        self.attempts = 0
        self.ever_registered = False
        self.startup_done = False
        self.stopping = threading.Event()
        self.shutdown_requested = threading.Event()
        self._shutdown_thread: threading.Thread | None = None
        self._stopped = False
        self._last_seen: tuple[str, int | None] | None = None
        self.events_q: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.held = threading.Event()
        self.busy = threading.Event()
        extra = cfg.extra
        self.event_delay = float(extra.get("controller_event_delay_ms", 0)) / 1000.0
        self.broker_change_delay = float(extra.get("broker_change_delay_ms", 0)) / 1000.0
        self.endpoints: dict[int, dict[str, Any]] = {}
        self._watches: list[Any] = []
        self.zk = KazooClient(
            hosts=cfg.zk_connect,
            timeout=cfg.session_timeout_ms / 1000.0,
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        )
        self.zk.add_listener(self._on_state)
        self.replica = ReplicaManager(self)
        self.controller = Controller(self)
        self.server = ControlServer(cfg.listen_host, cfg.port, self.handle)
        if cfg.port == 0:
            cfg.port = self.server.port

    # -- basics -------------------------------------------------------------------------------
    @property
    def broker_epoch(self) -> int | None:
        return self.epoch

    @property
    def registered(self) -> bool:
        return self.registered_session is not None and self.registered_session == self.session_id()

    def session_id(self) -> int | None:
        cid = self.zk.client_id
        return cid[0] if cid else None

    def emit(self, f: str, type: str = "event", **value: Any) -> Event:
        value.setdefault("broker_id", self.cfg.broker_id)
        return self.events.emit(f, type=type, process=self.cfg.broker_id, **value)

    def wait_connected(self) -> None:
        while not self.stopping.is_set() and not self.zk.connected:
            time.sleep(0.05)

    def enqueue(self, name: str, fn: Any) -> Future:
        fut: Future = Future()
        self.events_q.put((name, (fn, fut)))
        return fut

    # -- addresses ----------------------------------------------------------------------------
    def learn_broker_endpoint(self, bid: int, data: bytes) -> None:
        try:
            d = zn.parse_broker_payload(data)
            self.endpoints[bid] = {"host": d["host"], "port": int(d["port"])}
        except (ValueError, KeyError, TypeError):
            pass

    def endpoint_of(self, bid: int) -> dict[str, Any]:
        return self.endpoints.get(bid, {})

    def broker_addr(self, bid: int) -> str:
        if bid in self.cfg.peers:
            return self.cfg.peers[bid]
        if bid == self.cfg.broker_id:
            return f"{self.cfg.listen_host}:{self.cfg.port}"
        ep = self.endpoints.get(bid)
        if ep is None:
            try:
                data, _ = self.zk.get(broker_path(bid))
                self.learn_broker_endpoint(bid, data)
                ep = self.endpoints[bid]
            except (KazooException, KeyError) as e:
                raise ConnectionError(f"no address for broker {bid}") from e
        return f"{ep['host']}:{ep['port']}"

    def request_broker(self, bid: int, msg: dict[str, Any], timeout: float = 2.0) -> dict[str, Any]:
        return request(self.broker_addr(bid), msg, timeout=timeout)

    def send_to_controller(self, msg: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        """Send to the active controller (learnt from control requests, else /controller)."""
        cid = self.replica.controller_id
        for attempt in range(2):
            if cid is None or cid < 0 or attempt:
                try:
                    data, _ = self.zk.get(zn.CONTROLLER)
                    cid = zn.parse_controller_id(data)
                except (KazooException, NoNodeError):
                    cid = None
            if cid is None:
                continue
            try:
                reply = self.request_broker(cid, msg, timeout=timeout)
            except OSError as e:
                return {"error_code": errors.NETWORK_EXCEPTION, "error": str(e), "controller_id": cid}
            if reply.get("error_code") != errors.NOT_CONTROLLER:
                return {**reply, "controller_id": cid}
        return {"error_code": errors.NOT_CONTROLLER, "controller_id": cid}

    # -- kazoo thread ---------------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        sid = self.session_id()
        if self._last_seen == (state, sid):
            return  # kazoo repeats CONNECTED for the listener added before start()
        self._last_seen = (state, sid)
        if state == KazooState.CONNECTED:
            self.emit("session", state="connected", session_id=sid,
                      negotiated_timeout_ms=self.zk._session_timeout)  # noqa: SLF001 - kazoo keeps it private
        elif state == KazooState.SUSPENDED:
            self.emit("session", state="suspended", session_id=sid)
        else:
            self.emit("session", state="lost", session_id=self.registered_session)
        self.events_q.put(("SessionState", state))

    # -- controller event thread ------------------------------------------------------------------
    def run(self) -> int:
        self.emit("agent_start", pid=os.getpid(), toggles=self.cfg.toggles.to_dict(),
                  session_timeout_ms=self.cfg.session_timeout_ms, port=self.cfg.port, extra=self.cfg.extra)
        self.server.start()
        self.zk.start(timeout=max(30.0, self.cfg.session_timeout_ms / 1000.0 * 3))
        for p in (zn.BROKER_IDS, zn.BROKER_TOPICS):
            self.zk.ensure_path(p)
        self.replica.start()
        ok = self.register(pipelined=False)
        self.startup_done = True
        if not ok and self.cfg.extra.get("exit_on_startup_failure", True):
            # KafkaServer.startup fails: the process exits (K37 behaviour; R = -1 at startup).
            self.emit("startup_failed", reason="registration failed")
            return 1
        self._install_watches()
        self.enqueue("Startup", self.controller.elect)
        self._loop()
        return 0

    def _install_watches(self) -> None:
        def on_controller(data: bytes | None, stat: Any, event: Any = None) -> None:
            if event is None:
                return  # initial read: Startup elects
            if data is None:
                self.enqueue("Reelect", self._reelect)
            else:
                self.enqueue("ControllerChange", lambda: self.controller.maybe_resign("controller changed"))

        def on_brokers(children: list[str]) -> None:
            self.enqueue("BrokerChange", self.controller.on_broker_change)

        def on_topics(children: list[str]) -> None:
            self.enqueue("TopicChange", self.controller.on_topic_change)

        self._watches = [
            DataWatch(self.zk, zn.CONTROLLER, on_controller),
            ChildrenWatch(self.zk, zn.BROKER_IDS, on_brokers),
            ChildrenWatch(self.zk, zn.BROKER_TOPICS, on_topics),
        ]
        if self.cfg.toggles.preferred_controller:
            def on_next(data: bytes | None, stat: Any, event: Any = None) -> None:
                self.enqueue("NextControllerChange", lambda: self._on_next_controller(data))

            def on_ready(data: bytes | None, stat: Any, event: Any = None) -> None:
                if event is None and data is None:
                    return
                self.enqueue("ReadyToServeChange", lambda: self.controller.on_ready_to_serve(data))

            self._watches += [DataWatch(self.zk, zn.NEXT_CONTROLLER, on_next),
                              DataWatch(self.zk, zn.READY_TO_SERVE, on_ready)]

    def _reelect(self) -> None:
        self.controller.maybe_resign("controller deleted")
        self.controller.elect()

    def _on_next_controller(self, data: bytes | None) -> None:
        """KIP-39: the named broker announces itself with the ready_to_serve ephemeral."""
        try:
            pref = int(data.decode()) if data else None
        except ValueError:
            pref = None
        if pref != self.cfg.broker_id or not self.registered:
            return
        try:
            self.zk.create(zn.READY_TO_SERVE, str(self.cfg.broker_id).encode(), ephemeral=True, makepath=True)
            self.emit("ready_to_serve", created=True, session_id=self.session_id())
        except NodeExistsError:
            self.emit("ready_to_serve", created=False, session_id=self.session_id())

    def _loop(self) -> None:
        while not self.stopping.is_set():
            if self.shutdown_requested.is_set() and self._shutdown_thread is None:
                # Controlled shutdown runs beside the event loop: this broker may be the controller.
                self._shutdown_thread = threading.Thread(target=self._shutdown, name="shutdown", daemon=True)
                self._shutdown_thread.start()
            if self.held.is_set():
                time.sleep(0.05)
                continue
            try:
                name, payload = self.events_q.get(timeout=0.2)
            except queue.Empty:
                continue
            while self.held.is_set() and not self.stopping.is_set():
                time.sleep(0.05)  # held after this event was dequeued: it waits too
            if self.stopping.is_set():
                break
            self.busy.set()
            try:
                self._process(name, payload)
            finally:
                self.busy.clear()

    def _process(self, name: str, payload: Any) -> None:
        if self.event_delay:
            time.sleep(self.event_delay)
        if name == "BrokerChange" and self.broker_change_delay:
            time.sleep(self.broker_change_delay)
        if name == "SessionState":
            self._handle_state(payload)
            return
        fn, fut = payload
        try:
            result = fn()
            fut.set_result(result)
        except ControllerMoved:
            self.controller.resign("controller moved")
            fut.set_result({"error_code": errors.NOT_CONTROLLER})
        except Exception as e:  # noqa: BLE001 - ControllerEventManager logs and goes on
            self.emit("controller_event_error", event=name, error=f"{type(e).__name__}: {e}")
            fut.set_result({"error_code": errors.UNKNOWN_SERVER_ERROR, "error": str(e)})

    def _handle_state(self, state: str) -> None:
        sid = self.session_id()
        if state == KazooState.CONNECTED:
            if self.startup_done and sid is not None and sid != self.registered_session:
                if self.ever_registered and not self.cfg.toggles.reregister_on_expiry:
                    self.emit("register_skipped", session_id=sid, reason="reregister_on_expiry=false")
                    return
                # RegisterBrokerAndReelect
                pipelined = self.cfg.toggles.pipeline_on_connect and self.ever_registered
                if self.register(pipelined=pipelined):
                    try:
                        self._reelect()
                    except ControllerMoved:
                        self.controller.resign("controller moved")
        elif state == KazooState.LOST:
            # Expire: resign before the new session exists.
            self.controller.resign("session expired")
            lost = self.registered_session
            if lost is not None:
                self.emit("deregistered", epoch=self.epoch, session_id=lost, reason="session lost")
            self.registered_session = None

    # -- registration (CheckedEphemeral) -------------------------------------------------------------
    def register(self, pipelined: bool = False) -> bool:
        """registerBroker → CheckedEphemeral.create, resent only on connection loss; ``retry14845``
        retries NODEEXISTS failures. Returns True once registered."""
        mode = self.cfg.toggles.registration
        extra_attempts, backoff = retry_policy(mode, self.cfg.session_timeout_ms)
        data = broker_json(self.cfg)
        if pipelined:
            self._pipelined_attempt(data, mode)
        failures = 0
        while not self.stopping.is_set():
            self.attempts += 1
            self.emit("register", type="invoke", attempt=self.attempts, mode=mode, session_id=self.session_id())
            try:
                stat, owner, existed, current = self._checked_create(data, mode)
            except SessionExpiredError:
                self.emit("register", type="info", error="SESSIONEXPIRED", session_id=self.session_id())
                return False
            except RegistrationFailed as e:
                owner, current = e.args
                failures += 1
                retryable = failures <= extra_attempts
                self.emit("register", type="fail", error="NODEEXISTS", owner=owner, session_id=current,
                          recorded_session=self.recorded_session, retryable=retryable, permanent=not retryable)
                if retryable and not self.stopping.wait(backoff):
                    continue
                return False
            except KazooException as e:
                self.emit("register", type="fail", error=type(e).__name__, owner=None,
                          session_id=self.session_id(), recorded_session=self.recorded_session,
                          retryable=False, permanent=True)
                return False
            previous_r = self.recorded_session
            self.recorded_session = current if current is not None else NO_SESSION
            self.registered_session = current
            self.epoch = stat.czxid
            self.ever_registered = True
            self.emit("register", type="ok", epoch=stat.czxid, czxid=stat.czxid, session_id=current,
                      recorded_session=previous_r, owner=owner, path_existed=existed)
            return True
        return False

    def _checked_create(self, data: bytes, mode: str) -> tuple[ZnodeStat, int, bool, int | None]:
        while True:
            try:
                txn = self.zk.transaction()
                txn.create(self.path, b"", ephemeral=True)
                txn.set_data(self.path, data, version=0)
                results = txn.commit()
            except (ConnectionLoss, OperationTimeoutError):
                # retryRequestUntilConnected: resend once reconnected (maybe on a new session).
                self.emit("register_resend", reason="CONNECTIONLOSS", session_id=self.session_id())
                self.wait_connected()
                continue
            if isinstance(results[1], ZnodeStat):
                return results[1], results[1].ephemeralOwner, False, self.session_id()
            if not isinstance(results[0], NodeExistsError):
                err = next((r for r in results if isinstance(r, Exception)), None)
                if isinstance(err, Exception):
                    raise err
                raise RuntimeError(f"unexpected multi result {results!r}")
            try:
                _, stat = self.zk.get(self.path)
            except NoNodeError:
                continue  # gone in between: try the multi again
            except (ConnectionLoss, OperationTimeoutError):
                self.wait_connected()
                continue
            owner = stat.ephemeralOwner
            current = self.session_id()
            decision = after_node_exists(mode, owner, current if current is not None else NO_SESSION,
                                         self.recorded_session)
            if decision is AfterNodeExists.SUCCESS:
                return stat, owner, True, current
            if decision is AfterNodeExists.DELETE_AND_RETRY:
                try:
                    self.zk.delete(self.path)
                    result = "OK"
                except NoNodeError:
                    result = "NONODE"
                self.emit("register_delete", owner=owner, session_id=current,
                          recorded_session=self.recorded_session, result=result)
                continue
            raise RegistrationFailed(owner, current)

    def _pipelined_attempt(self, data: bytes, mode: str) -> None:
        """Netty-client emulation (KAFKA-14845): ConnectRequest + registration multi on one raw socket
        through the project's wire codec. If the ConnectResponse is lost, the session that ran the multi
        is never learnt; the agent then falls back to kazoo and resends the multi."""
        from zkwire import pipelined_register
        from zkwire.codec import OpCode, encode_request

        target = self.cfg.extra.get("zk_pipeline_connect") or self.cfg.zk_pipeline_connect or self.cfg.zk_connect
        hosts = [h for h in target.split(",") if h]
        n_hosts = max(1, len(self.cfg.zk_connect.split(",")))
        addr = hosts[self.attempts % len(hosts)]
        t = self.cfg.session_timeout_ms
        self.attempts += 1
        self.emit("register", type="invoke", attempt=self.attempts, mode=mode, session_id=None, pipelined=True,
                  addr=addr)
        try:
            res = pipelined_register(addr, self.path, data, timeout_ms=max(100, t // n_hosts),
                                     session_timeout_ms=t, keep_open=True)
        except OSError as e:
            self.emit("pipeline_register", addr=addr, connected=False, error=str(e), session_learned=False,
                      session_id=None)
            self.emit("register", type="info", error="CONNECTIONLOSS", session_id=None, pipelined=True)
            return
        learned = res.connect_response is not None and not res.session_expired
        self.emit("pipeline_register", addr=addr, connected=True, session_learned=learned,
                  session_id=res.session_id if learned else None,
                  negotiated_timeout_ms=res.negotiated_timeout_ms, multi_err=res.err, timed_out=res.timed_out,
                  closed_by_peer=res.closed_by_peer)
        if res.sock is not None:
            try:
                if learned:
                    # We know this session: close it so its ephemeral goes, then register via kazoo.
                    res.sock.sendall(encode_request(2, OpCode.CLOSE_SESSION))
                    res.sock.settimeout(1.0)
                    try:
                        res.sock.recv(4096)
                    except OSError:
                        pass
            finally:
                res.sock.close()
        if res.ok and learned:
            self.emit("register", type="info", error="PIPELINE_SESSION_CLOSED", session_id=res.session_id,
                      pipelined=True)
        else:
            self.emit("register", type="info", error="CONNECTIONLOSS", session_id=None, pipelined=True)

    # -- control plane dispatch -------------------------------------------------------------------
    def _via_controller_thread(self, name: str, fn: Any, timeout: float = 10.0) -> dict[str, Any]:
        fut = self.enqueue(name, fn)
        try:
            return fut.result(timeout=timeout)
        except TimeoutError:
            return {"error_code": errors.REQUEST_TIMED_OUT, "error": f"{name} not processed in {timeout}s"}

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        kind = msg.get("type")
        rm, ctl = self.replica, self.controller
        if kind in ("LeaderAndIsr", "UpdateMetadata", "StopReplica"):
            return rm.handle_control(msg)
        if kind == "fetch":
            return rm.handle_fetch(msg)
        if kind == "produce":
            return rm.handle_produce(msg)
        if kind == "metadata":
            return rm.metadata_reply()
        if kind == "AlterPartition":
            return self._via_controller_thread("AlterPartition", lambda: ctl.handle_alter_partition(msg))
        if kind == "ControlledShutdown":
            return self._via_controller_thread("ControlledShutdown", lambda: ctl.handle_controlled_shutdown(msg))
        if kind == "state":
            return self.state()
        if kind == "hold":
            self.held.set()
            end = time.monotonic() + 10.0
            while self.busy.is_set() and time.monotonic() < end:
                time.sleep(0.02)  # an event already running finishes first; nothing starts after
            self.emit("controller_hold")
            return {"error_code": 0, "held": True}
        if kind == "release":
            self.held.clear()
            self.emit("controller_release", queued=self.events_q.qsize())
            return {"error_code": 0, "held": False}
        if kind == "controlled_shutdown":
            return self.controlled_shutdown(msg.get("broker_epoch"))
        if kind == "debug_build":
            body = ctl.debug_build(msg["kind"], int(msg["target"]), msg.get("topic"), msg.get("partition"),
                                   msg.get("broker_epoch"), bool(msg.get("delete_partitions", False)))
            return {"error_code": 0, "request": body, "request_id": body["request_id"]}
        if kind == "debug_send":
            return ctl.debug_send(msg["request_id"], msg.get("target"))
        if kind == "debug_requests":
            return {"error_code": 0, "requests": [
                {"key": k, "target": t, "kind": b["type"], "request_id": b["request_id"],
                 "broker_epoch": b["broker_epoch"], "max_broker_epoch": b["max_broker_epoch"],
                 "controller_epoch": b["controller_epoch"]} for k, (t, b) in list(ctl.stored.items())]}
        if kind == "debug_controller_write":
            return ctl.debug_write(msg["topic"], int(msg["partition"]), msg.get("leader"), msg.get("isr"))
        if kind == "debug_alter_partition":
            return self.debug_alter_partition(msg)
        if kind == "hold_alter_partition":
            rm.hold_alters = True
            return {"error_code": 0}
        if kind == "release_alter_partition":
            return {"error_code": 0, "replies": rm.release_alters()}
        if kind == "held_alter_partitions":
            return {"error_code": 0, "requests": list(rm.held_alters)}
        return {"error_code": errors.INVALID_REQUEST, "error": f"unknown request type {kind!r}"}

    def debug_alter_partition(self, msg: dict[str, Any]) -> dict[str, Any]:
        rm = self.replica
        with rm.lock:
            lp = rm.partitions.get((msg["topic"], int(msg["partition"])))
            if lp is None or lp.role != "leader":
                return {"error_code": errors.NOT_LEADER_OR_FOLLOWER}
        entries = msg.get("new_isr_with_epochs")
        isr = [int(e["id"]) for e in entries] if entries else [int(x) for x in msg["isr"]]
        reply = rm.send_alter_partition(lp, isr, isr_with_epochs=entries, force_send=True)
        return reply or {"error_code": errors.UNKNOWN_SERVER_ERROR}

    def controlled_shutdown(self, broker_epoch: int | None = None, timeout: float = 5.0) -> dict[str, Any]:
        """Broker → controller ControlledShutdown with this broker's epoch (or an override)."""
        be = self.epoch if broker_epoch is None else int(broker_epoch)
        be = -1 if be is None else be
        rid = self.replica.next_id("cs")
        self.emit("controlled_shutdown", type="invoke", request_id=rid, broker_epoch=be)
        reply = self.send_to_controller({"type": "ControlledShutdown", "request_id": rid,
                                         "broker_id": self.cfg.broker_id, "broker_epoch": be}, timeout=timeout)
        code = reply.get("error_code")
        self.emit("controlled_shutdown", type="ok" if code == 0 else "fail", request_id=rid, broker_epoch=be,
                  error_code=code, remaining_partitions=reply.get("remaining_partitions"))
        return reply

    def state(self) -> dict[str, Any]:
        return {
            "error_code": 0,
            "broker_id": self.cfg.broker_id,
            "epoch": self.epoch,
            "session_id": self.session_id(),
            "registered": self.registered,
            "recorded_session": self.recorded_session,
            "held": self.held.is_set(),
            "queued_events": self.events_q.qsize(),
            "controller_id": self.replica.controller_id,
            "max_controller_epoch_seen": self.replica.max_controller_epoch_seen,
            "controller": self.controller.snapshot(),
            "partitions": self.replica.snapshot(),
            "port": self.cfg.port,
        }

    # -- shutdown -------------------------------------------------------------------------------------
    def _shutdown(self) -> None:
        try:
            if self.registered and self.cfg.extra.get("controlled_shutdown", True):
                timeout = float(self.cfg.extra.get("controlled_shutdown_timeout_ms", 3000)) / 1000.0
                self.controlled_shutdown(timeout=timeout)
        except Exception as e:  # noqa: BLE001 - shutdown goes on regardless
            self.emit("controlled_shutdown", type="info", error=str(e))
        finally:
            self.stopping.set()

    def stop(self, reason: str) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.stopping.set()
        self.emit("agent_stop", reason=reason, epoch=self.epoch, session_id=self.session_id())
        try:
            self.controller.stop()
            self.replica.close()
            self.server.close()
            self.zk.stop()
            self.zk.close()
        finally:
            self.events.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness-agent")
    parser.add_argument("--config", required=True, help="agent config JSON written by the harness")
    parser.add_argument("--toggle", action="append", default=[], metavar="NAME=VALUE",
                        help="override a toggle from the config file (repeatable)")
    args = parser.parse_args(argv)
    try:
        cfg = AgentConfig.load(args.config)
        if args.toggle:
            from agent.config import Toggles, parse_toggle_args

            cfg.toggles = Toggles.from_dict({**cfg.toggles.to_dict(), **parse_toggle_args(args.toggle)})
    except (ConfigError, OSError) as e:
        print(f"harness-agent: {e}", file=sys.stderr)
        return 254
    return run_agent(cfg)


def run_agent(cfg: AgentConfig) -> int:
    agent = BrokerAgent(cfg)
    stop_requested = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        if stop_requested.is_set() or not agent.startup_done:
            agent.stopping.set()  # second signal, or still starting: stop now
        stop_requested.set()
        agent.shutdown_requested.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    rc = 0
    try:
        rc = agent.run()
    finally:
        agent.stop("signal" if stop_requested.is_set() else ("startup_failed" if rc else "exit"))
    return rc
