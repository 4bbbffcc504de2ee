"""The broker process: a Kafka broker in ZooKeeper mode, reduced to what the fencing protocols need.

``BrokerAgent`` wires the parts together and owns the ZooKeeper session: the registrar
(``agent.registrar``), the controller (``agent.controller``), the replica manager
(``agent.replica``), the controller event thread (``agent.event_manager``) and the control-plane
listener (``agent.net``), whose requests ``handle`` routes.

Threads: kazoo's own; the controller event thread (this process's main thread: registration after
expiry, election, broker/topic changes, AlterPartition, ControlledShutdown all run there, one at a
time, and ``hold``/``release`` pause it); the control-plane listener (one thread per connection);
a follower fetcher; the leader's ISR maintenance; and one sender per target broker while this
broker is the controller.

No ZooKeeper call ever runs inside a kazoo callback: watches and state changes only enqueue.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from agent import errors
from agent import znodes as zn
from agent.config import AgentConfig
from agent.controller import Controller, ControllerMoved
from agent.event_manager import ControllerEventManager
from agent.net import ControlServer, request, use_token
from agent.registrar import Registrar
from agent.replica import ReplicaManager
from history import Event, EventWriter


class BrokerAgent:
    def __init__(self, cfg: AgentConfig) -> None:
        self.cfg = cfg
        # A restarted agent appends to the same file; EventWriter continues its seq numbering.
        self.events = EventWriter(cfg.events_path, src=f"agent:{cfg.broker_id}", run=cfg.run)
        self.startup_done = False
        self.stopping = threading.Event()
        self.shutdown_requested = threading.Event()
        self._shutdown_thread: threading.Thread | None = None
        self._stopped = False
        self._last_seen: tuple[str, int | None] | None = None
        self.event_manager = ControllerEventManager(self.stopping, self._process)
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
        self.registrar = Registrar(self)
        self.replica = ReplicaManager(self)
        self.controller = Controller(self)
        use_token(cfg.control_token)  # this agent's own requests to its peers
        self.server = ControlServer(cfg.listen_host, cfg.port, self.handle, cfg.control_token)
        if cfg.port == 0:
            cfg.port = self.server.port

    # -- basics -------------------------------------------------------------------------------
    @property
    def broker_epoch(self) -> int | None:
        return self.registrar.epoch

    @property
    def registered(self) -> bool:
        reg = self.registrar.registered_session
        return reg is not None and reg == self.session_id()

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
        return self.event_manager.enqueue(name, fn)

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
                data, _ = self.zk.get(zn.broker_path(bid))
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
            self.emit("session", state="lost", session_id=self.registrar.registered_session)
        self.event_manager.put("SessionState", state)

    # -- controller event thread ------------------------------------------------------------------
    def run(self) -> int:
        self.emit("agent_start", pid=os.getpid(), toggles=self.cfg.toggles.to_dict(),
                  session_timeout_ms=self.cfg.session_timeout_ms, port=self.cfg.port, extra=self.cfg.extra)
        self.server.start()
        self.zk.start(timeout=max(30.0, self.cfg.session_timeout_ms / 1000.0 * 3))
        for p in (zn.BROKER_IDS, zn.BROKER_TOPICS):
            self.zk.ensure_path(p)
        self.replica.start()
        ok = self.registrar.register(pipelined=False)
        self.startup_done = True
        if not ok and self.cfg.extra.get("exit_on_startup_failure", True):
            # KafkaServer.startup fails: the process exits (K37 behaviour; R = -1 at startup).
            self.emit("startup_failed", reason="registration failed")
            return 1
        self._install_watches()
        self.enqueue("Startup", self.controller.elect)
        self.event_manager.run(tick=self._maybe_start_shutdown)
        return 0

    def _install_watches(self) -> None:
        initial_read = [True]

        def on_controller(data: bytes | None, stat: Any, event: Any = None) -> None:
            # The first call is the initial read (Startup elects). Not ``event is None``: kazoo's
            # DataWatch also calls without an event when /controller is deleted and re-created
            # before it re-reads, and that change must not be lost.
            if initial_read[0]:
                initial_read[0] = False
                return
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

    def _maybe_start_shutdown(self) -> None:
        if self.shutdown_requested.is_set() and self._shutdown_thread is None:
            # Controlled shutdown runs beside the event loop: this broker may be the controller.
            self._shutdown_thread = threading.Thread(target=self._shutdown, name="shutdown", daemon=True)
            self._shutdown_thread.start()

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
        reg = self.registrar
        if state == KazooState.CONNECTED:
            if self.startup_done and sid is not None and sid != reg.registered_session:
                if reg.ever_registered and not self.cfg.toggles.reregister_on_expiry:
                    self.emit("register_skipped", session_id=sid, reason="reregister_on_expiry=false")
                    return
                # RegisterBrokerAndReelect
                pipelined = self.cfg.toggles.pipeline_on_connect and reg.ever_registered
                if reg.register(pipelined=pipelined):
                    try:
                        self._reelect()
                    except ControllerMoved:
                        self.controller.resign("controller moved")
        elif state == KazooState.LOST:
            # Expire: resign before the new session exists.
            self.controller.resign("session expired")
            reg.session_lost()

    # -- control plane dispatch -------------------------------------------------------------------
    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        kind = msg.get("type")
        rm, ctl, ev = self.replica, self.controller, self.event_manager
        if kind in ("LeaderAndIsr", "UpdateMetadata", "StopReplica"):
            return rm.handle_control(msg)
        if kind == "fetch":
            return rm.handle_fetch(msg)
        if kind == "produce":
            return rm.handle_produce(msg)
        if kind == "metadata":
            return rm.metadata_reply()
        if kind == "AlterPartition":
            return ev.call("AlterPartition", lambda: ctl.handle_alter_partition(msg))
        if kind == "ControlledShutdown":
            return ev.call("ControlledShutdown", lambda: ctl.handle_controlled_shutdown(msg))
        if kind == "state":
            return self.state()
        if kind == "hold":
            ev.hold()
            self.emit("controller_hold")
            return {"error_code": 0, "held": True}
        if kind == "release":
            ev.release()
            self.emit("controller_release", queued=ev.qsize())
            return {"error_code": 0, "held": False}
        if kind == "controlled_shutdown":
            return self.controlled_shutdown(msg.get("broker_epoch"))
        if kind == "debug_build":
            body = ctl.channel.debug_build(msg["kind"], int(msg["target"]), msg.get("topic"),
                                           msg.get("partition"), msg.get("broker_epoch"),
                                           bool(msg.get("delete_partitions", False)))
            return {"error_code": 0, "request": body, "request_id": body["request_id"]}
        if kind == "debug_send":
            return ctl.channel.debug_send(msg["request_id"], msg.get("target"))
        if kind == "debug_requests":
            return {"error_code": 0, "requests": ctl.channel.debug_requests()}
        if kind == "debug_controller_write":
            return ctl.debug_write(msg["topic"], int(msg["partition"]), msg.get("leader"), msg.get("isr"))
        if kind == "debug_alter_partition":
            return rm.debug_alter_partition(msg)
        if kind == "hold_alter_partition":
            rm.hold_alters = True
            return {"error_code": 0}
        if kind == "release_alter_partition":
            return {"error_code": 0, "replies": rm.release_alters()}
        if kind == "held_alter_partitions":
            return {"error_code": 0, "requests": list(rm.held_alters)}
        return {"error_code": errors.INVALID_REQUEST, "error": f"unknown request type {kind!r}"}

    def controlled_shutdown(self, broker_epoch: int | None = None, timeout: float = 5.0) -> dict[str, Any]:
        """Broker → controller ControlledShutdown with this broker's epoch (or an override)."""
        be = self.broker_epoch if broker_epoch is None else int(broker_epoch)
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
            "epoch": self.broker_epoch,
            "session_id": self.session_id(),
            "registered": self.registered,
            "recorded_session": self.registrar.recorded_session,
            "held": self.event_manager.held.is_set(),
            "queued_events": self.event_manager.qsize(),
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
        self.emit("agent_stop", reason=reason, epoch=self.broker_epoch, session_id=self.session_id())
        try:
            self.controller.stop()
            self.replica.close()
            self.server.close()
            self.zk.stop()
            self.zk.close()
        finally:
            self.events.close()
