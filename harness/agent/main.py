"""Agent process: a kazoo session to ZooKeeper (through the agent's proxies), broker
registration with Kafka's CheckedEphemeral rules, re-registration after the session is lost,
and an event for every step.

State changes arrive on kazoo's thread and are handed to the main loop through a queue, so no
ZooKeeper call ever runs inside a kazoo callback.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import ZnodeStat

from harness.agent.config import AgentConfig, ConfigError
from harness.agent.registration import NO_SESSION, AfterNodeExists, after_node_exists
from harness.events import EventWriter


def broker_path(broker_id: int) -> str:
    return f"/brokers/ids/{broker_id}"


def broker_json(cfg: AgentConfig) -> bytes:
    """BrokerIdZNode v5 payload as Kafka writes it (K37 ZkData)."""
    endpoint = f"PLAINTEXT://{cfg.host}:{cfg.port}"
    return json.dumps(
        {
            "version": 5,
            "host": cfg.host,
            "port": cfg.port,
            "endpoints": [endpoint],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "jmx_port": -1,
            "timestamp": str(int(time.time() * 1000)),
            "features": {},
        }
    ).encode()


class RegistrationFailed(Exception):
    """Kafka's NodeExistsException out of CheckedEphemeral: the event fails, nothing retries."""


class BrokerAgent:
    def __init__(self, cfg: AgentConfig) -> None:
        self.cfg = cfg
        self.events = EventWriter(cfg.events_path, src=f"agent:{cfg.broker_id}", run=cfg.run)
        self.path = broker_path(cfg.broker_id)
        self.recorded_session = NO_SESSION  # R: set after every successful create
        self.registered_session: int | None = None
        self.epoch: int | None = None
        self.attempts = 0
        self.ever_registered = False
        self.stopping = threading.Event()
        self._stopped = False
        self._last_seen: tuple[str, int | None] | None = None
        self.state_changes: queue.Queue[str] = queue.Queue()
        self.zk = KazooClient(
            hosts=cfg.zk_connect,
            timeout=cfg.session_timeout_ms / 1000.0,
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        )
        self.zk.add_listener(self._on_state)

    # -- kazoo thread ------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        self.state_changes.put(state)

    # -- main thread -------------------------------------------------------------------
    def session_id(self) -> int | None:
        cid = self.zk.client_id
        return cid[0] if cid else None

    def emit(self, f: str, type: str = "event", **value: Any) -> None:
        self.events.emit(f, type=type, process=self.cfg.broker_id, broker_id=self.cfg.broker_id, **value)

    def run(self) -> int:
        self.emit(
            "agent_start",
            pid=os.getpid(),
            toggles=self.cfg.toggles.to_dict(),
            session_timeout_ms=self.cfg.session_timeout_ms,
        )
        self.zk.start(timeout=max(30.0, self.cfg.session_timeout_ms / 1000.0 * 3))
        self.zk.ensure_path("/brokers/ids")
        self._handle_state(KazooState.CONNECTED)
        while not self.stopping.is_set():
            try:
                state = self.state_changes.get(timeout=0.2)
            except queue.Empty:
                continue
            self._handle_state(state)
        return 0

    def _handle_state(self, state: str) -> None:
        sid = self.session_id()
        if self._last_seen == (state, sid):
            return  # kazoo repeats CONNECTED for the listener added before start()
        self._last_seen = (state, sid)
        if state == KazooState.CONNECTED:
            self.emit(
                "session",
                state="connected",
                session_id=sid,
                negotiated_timeout_ms=self.zk._session_timeout,  # noqa: SLF001 - kazoo keeps it private
            )
            if sid is not None and sid != self.registered_session:
                if self.ever_registered and not self.cfg.toggles.reregister_on_expiry:
                    self.emit("register_skipped", session_id=sid, reason="reregister_on_expiry=false")
                    return
                self.register()
        elif state == KazooState.SUSPENDED:
            self.emit("session", state="suspended", session_id=sid)
        elif state == KazooState.LOST:
            lost = self.registered_session
            self.emit("session", state="lost", session_id=lost)
            if lost is not None:
                self.emit("deregistered", epoch=self.epoch, session_id=lost, reason="session lost")
            self.registered_session = None

    def register(self) -> None:
        """registerBroker → CheckedEphemeral.create, retried only on connection loss."""
        self.attempts += 1
        current = self.session_id()
        mode = self.cfg.toggles.registration
        self.emit("register", type="invoke", attempt=self.attempts, mode=mode, session_id=current)
        data = broker_json(self.cfg)
        while not self.stopping.is_set():
            current = self.session_id()
            try:
                stat, owner, existed = self._checked_create(data, current, mode)
            except (ConnectionLoss, OperationTimeoutError):
                # retryRequestUntilConnected: resend once reconnected (maybe on a new session).
                self._wait_connected()
                continue
            except SessionExpiredError:
                self.emit("register", type="info", error="SESSIONEXPIRED", session_id=current)
                return
            except RegistrationFailed as e:
                owner = e.args[0]
                self.emit(
                    "register",
                    type="fail",
                    error="NODEEXISTS",
                    owner=owner,
                    session_id=current,
                    recorded_session=self.recorded_session,
                    retryable=False,
                    permanent=True,
                )
                return
            previous_r = self.recorded_session
            self.recorded_session = current if current is not None else NO_SESSION
            self.registered_session = current
            self.epoch = stat.czxid
            self.ever_registered = True
            self.emit(
                "register",
                type="ok",
                epoch=stat.czxid,
                czxid=stat.czxid,
                session_id=current,
                recorded_session=previous_r,
                owner=owner,
                path_existed=existed,
            )
            return

    def _checked_create(self, data: bytes, current: int | None, mode: str) -> tuple[ZnodeStat, int, bool]:
        while True:
            txn = self.zk.transaction()
            txn.create(self.path, b"", ephemeral=True)
            txn.set_data(self.path, data, version=0)
            results = txn.commit()
            if isinstance(results[1], ZnodeStat):
                return results[1], results[1].ephemeralOwner, False
            if not isinstance(results[0], NodeExistsError):
                err = next((r for r in results if isinstance(r, Exception)), results)
                if isinstance(err, Exception):
                    raise err
                raise RuntimeError(f"unexpected multi result {results!r}")
            try:
                _, stat = self.zk.get(self.path)
            except NoNodeError:
                continue  # gone in between: try the multi again
            owner = stat.ephemeralOwner
            decision = after_node_exists(mode, owner, current if current is not None else NO_SESSION,
                                         self.recorded_session)
            if decision is AfterNodeExists.SUCCESS:
                return stat, owner, True
            if decision is AfterNodeExists.DELETE_AND_RETRY:
                try:
                    self.zk.delete(self.path)
                    result = "OK"
                except NoNodeError:
                    result = "NONODE"
                self.emit("register_delete", owner=owner, session_id=current,
                          recorded_session=self.recorded_session, result=result)
                continue
            raise RegistrationFailed(owner)

    def _wait_connected(self) -> None:
        while not self.stopping.is_set() and not self.zk.connected:
            time.sleep(0.05)

    def stop(self, reason: str) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.stopping.set()
        self.emit("agent_stop", reason=reason, epoch=self.epoch, session_id=self.session_id())
        try:
            self.zk.stop()
            self.zk.close()
        finally:
            self.events.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness-agent")
    parser.add_argument("--config", required=True, help="agent config JSON written by the harness")
    args = parser.parse_args(argv)
    try:
        cfg = AgentConfig.load(args.config)
    except (ConfigError, OSError) as e:
        print(f"harness-agent: {e}", file=sys.stderr)
        return 254
    agent = BrokerAgent(cfg)

    def on_signal(signum: int, _frame: object) -> None:
        agent.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        agent.run()
    finally:
        agent.stop("signal" if agent.stopping.is_set() else "exit")
    return 0
