"""The controller's ZooKeeper access (K37 ``zk/KafkaZkClient.scala``, controller side): reads of
/controller, /controller_epoch, /brokers/ids and /admin/ready_to_serve, and partition-state writes,
each fenced by ``check(/controller_epoch, epochZkVersion)`` in the same multi (K37
``wrapRequestWithControllerEpochCheck``, the fix for KAFKA-6082).

``retry`` is K37's ``retryRequestUntilConnected``: a request that lost its connection is resent once
kazoo has reconnected, maybe on a new session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    RolledBackError,
)
from kazoo.protocol.states import ZnodeStat

from agent import znodes as zn
from agent.broker_api import BrokerApi
from agent.controller_context import TP, ControllerContext
from agent.znodes import PartitionState

R = TypeVar("R")


class ControllerMoved(Exception):
    """A fenced write's check on /controller_epoch failed: another controller has taken over."""


def retry_until_connected(broker: BrokerApi, fn: Callable[[], R]) -> R:
    """retryRequestUntilConnected: resend on connection loss once reconnected."""
    while True:
        try:
            return fn()
        except (ConnectionLoss, OperationTimeoutError):
            broker.wait_connected()
            if broker.stopping.is_set():
                raise


class ControllerZk:
    def __init__(self, broker: BrokerApi, ctx: ControllerContext) -> None:
        self.broker = broker
        self.ctx = ctx
        self.zk = broker.zk

    def retry(self, fn: Callable[[], R]) -> R:
        return retry_until_connected(self.broker, fn)

    # -- reads ------------------------------------------------------------------------------
    def read_controller_id(self) -> int | None:
        try:
            data, _ = self.retry(lambda: self.zk.get(zn.CONTROLLER))
        except NoNodeError:
            return None
        return zn.parse_controller_id(data)

    def read_epoch(self) -> tuple[int, int]:
        """(controller epoch, its zkVersion), creating /controller_epoch as "0" when absent."""
        while True:
            try:
                data, stat = self.retry(lambda: self.zk.get(zn.CONTROLLER_EPOCH))
                return zn.parse_controller_epoch(data), stat.version
            except NoNodeError:
                try:
                    self.retry(lambda: self.zk.create(
                        zn.CONTROLLER_EPOCH, zn.controller_epoch_payload(zn.INITIAL_CONTROLLER_EPOCH)))
                except NodeExistsError:
                    pass

    def read_live_brokers(self) -> dict[int, int]:
        """getChildren(/brokers/ids) then each child's czxid (the broker epoch)."""
        out: dict[int, int] = {}
        for child in self.retry(lambda: self.zk.get_children(zn.BROKER_IDS)):
            try:
                data, stat = self.retry(lambda c=child: self.zk.get(f"{zn.BROKER_IDS}/{c}"))
            except NoNodeError:
                continue
            bid = int(child)
            out[bid] = stat.czxid
            self.broker.learn_broker_endpoint(bid, data)
        return dict(sorted(out.items()))

    def preferred_elsewhere(self) -> int | None:
        """KIP-39: the broker named by /admin/ready_to_serve, if it is not me."""
        if not self.ctx.toggles.preferred_controller:
            return None
        try:
            data, _ = self.retry(lambda: self.zk.get(zn.READY_TO_SERVE))
        except NoNodeError:
            return None
        try:
            pref = int(data.decode())
        except (ValueError, AttributeError):
            return None
        return None if pref == self.ctx.me else pref

    # -- fenced writes ----------------------------------------------------------------------
    def zk_write(self, op: str, path: str, add_ops: Any, epoch: int | None = None,
                 epoch_zk_version: int | None = None) -> list[Any]:
        """multi[check(/controller_epoch, epochZkVersion), op...]; with controller_fencing=off the
        check is left out (KAFKA-6082). Raises ControllerMoved on a failed check."""
        fenced = self.ctx.toggles.controller_fencing == "on"
        version = self.ctx.epoch_zk_version if epoch_zk_version is None else epoch_zk_version
        cepoch = self.ctx.epoch if epoch is None else epoch

        def attempt() -> list[Any]:
            txn = self.zk.transaction()
            if fenced:
                txn.check(zn.CONTROLLER_EPOCH, version)
            add_ops(txn)
            return txn.commit()

        results = self.retry(attempt)
        ops = results[1:] if fenced else results
        err = next((r for r in ops if isinstance(r, Exception) and not isinstance(r, RolledBackError)), None)
        zxid = next((r.mzxid for r in ops if isinstance(r, ZnodeStat)), None)
        if fenced and isinstance(results[0], BadVersionError):
            self.broker.emit("controller_zk_write", type="fail", controller_epoch=cepoch,
                             checked_version=version, op=op, path=path, zxid=None, error="CONTROLLER_MOVED")
            raise ControllerMoved(path)
        if fenced and isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
            err = results[0]
        self.broker.emit("controller_zk_write", type="fail" if err else "ok", controller_epoch=cepoch,
                         checked_version=version if fenced else None, op=op, path=path, zxid=zxid,
                         error=type(err).__name__ if err else None)
        if err:
            raise err
        return ops

    def write_state(self, tp: TP, new: PartitionState, create: bool = False) -> PartitionState | None:
        """Conditional write of a partition state znode (expected version = new.zk_version)."""
        topic, part = tp
        path = zn.partition_state_path(topic, part)
        try:
            if create:
                for parent in (zn.partitions_path(topic), zn.partition_path(topic, part)):
                    try:
                        self.zk_write("create", parent, lambda t, p=parent: t.create(p, b""))
                    except NodeExistsError:
                        pass
                self.zk_write("create", path, lambda t: t.create(path, new.payload()))
                stat = self.retry(lambda: self.zk.exists(path))
                written = PartitionState(new.leader, new.leader_epoch, new.isr, new.controller_epoch,
                                         stat.version)
                zxid = stat.czxid
            else:
                ops = self.zk_write("set_data", path,
                                    lambda t: t.set_data(path, new.payload(), version=new.zk_version))
                stat = ops[0]
                written = PartitionState(new.leader, new.leader_epoch, new.isr, new.controller_epoch,
                                         stat.version)
                zxid = stat.mzxid
        except (BadVersionError, NodeExistsError):
            # Maybe our own write landed and only the reply was lost: re-read and compare.
            data, stat = self.retry(lambda: self.zk.get(path))
            cur = PartitionState.parse(data, stat.version)
            if (cur.leader, cur.leader_epoch, cur.isr, cur.controller_epoch) == \
                    (new.leader, new.leader_epoch, new.isr, new.controller_epoch):
                written, zxid = cur, stat.mzxid
            else:
                self.ctx.states[tp] = cur
                return None
        self.ctx.states[tp] = written
        self.broker.emit("partition_state", topic=topic, partition=part, leader=written.leader,
                         leader_epoch=written.leader_epoch, isr=list(written.isr),
                         controller_epoch=written.controller_epoch, zk_version=written.zk_version, zxid=zxid)
        return written
