"""Broker registration (K37 ``KafkaZkClient.registerBroker`` and its ``CheckedEphemeral``): create
``/brokers/ids/N`` with ``multi[create(EPHEMERAL), setData(payload, version 0)]`` and take the
czxid as the broker epoch (KIP-380).

A create that lost its connection is resent once kazoo reconnects; NODEEXISTS is resolved by
``agent.registration.after_node_exists``. With ``pipeline_on_connect`` the first attempt after an
expiry goes out on a raw socket right behind the ConnectRequest (KAFKA-14845), like the Java Netty
client, through ``zkwire.client.pipelined_register``.
"""

from __future__ import annotations

from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.protocol.states import ZnodeStat

from agent import znodes as zn
from agent.broker_api import BrokerApi
from agent.registration import NO_SESSION, AfterNodeExists, after_node_exists, retry_policy
from zkwire.client import pipelined_register
from zkwire.constants import OpCode
from zkwire.messages import encode_request


class RegistrationFailed(Exception):
    """Kafka's NodeExistsException out of CheckedEphemeral: the event fails, nothing retries."""


class Registrar:
    """This broker's registration state: R (``recorded_session``), the session it is registered
    under, and its broker epoch."""

    def __init__(self, broker: BrokerApi) -> None:
        self.broker = broker
        self.cfg = broker.cfg
        self.zk = broker.zk
        self.emit = broker.emit
        self.path = zn.broker_path(broker.cfg.broker_id)
        self.recorded_session = NO_SESSION  # R: set after every successful create
        self.registered_session: int | None = None
        self.epoch: int | None = None
        self.attempts = 0
        self.ever_registered = False

    def session_lost(self) -> None:
        """The session expired: the ephemeral is gone with it."""
        lost = self.registered_session
        if lost is not None:
            self.emit("deregistered", epoch=self.epoch, session_id=lost, reason="session lost")
        self.registered_session = None

    def register(self, pipelined: bool = False) -> bool:
        """registerBroker → CheckedEphemeral.create, resent only on connection loss; ``retry14845``
        retries NODEEXISTS failures. Returns True once registered."""
        mode = self.cfg.toggles.registration
        extra_attempts, backoff = retry_policy(mode, self.cfg.session_timeout_ms)
        data = zn.broker_payload(self.cfg.host, self.cfg.port)
        if pipelined:
            self._pipelined_attempt(data, mode)
        failures = 0
        while not self.broker.stopping.is_set():
            self.attempts += 1
            self.emit("register", type="invoke", attempt=self.attempts, mode=mode,
                      session_id=self.broker.session_id())
            try:
                stat, owner, existed, current = self._checked_create(data, mode)
            except SessionExpiredError:
                self.emit("register", type="info", error="SESSIONEXPIRED", session_id=self.broker.session_id())
                return False
            except RegistrationFailed as e:
                owner, current = e.args
                failures += 1
                retryable = failures <= extra_attempts
                self.emit("register", type="fail", error="NODEEXISTS", owner=owner, session_id=current,
                          recorded_session=self.recorded_session, retryable=retryable, permanent=not retryable)
                if retryable and not self.broker.stopping.wait(backoff):
                    continue
                return False
            except KazooException as e:
                self.emit("register", type="fail", error=type(e).__name__, owner=None,
                          session_id=self.broker.session_id(), recorded_session=self.recorded_session,
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
                self.emit("register_resend", reason="CONNECTIONLOSS", session_id=self.broker.session_id())
                self.broker.wait_connected()
                continue
            if isinstance(results[1], ZnodeStat):
                return results[1], results[1].ephemeralOwner, False, self.broker.session_id()
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
                self.broker.wait_connected()
                continue
            owner = stat.ephemeralOwner
            current = self.broker.session_id()
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
