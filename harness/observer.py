"""Observer: the harness's own kazoo client, straight to the ensemble (never through a proxy),
recording what ZooKeeper itself says about every ``/brokers/ids/N``: existence, czxid and owner.
Checkers compare the agents' claims with these independent observations.
"""

from __future__ import annotations

import threading

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.recipe.watchers import DataWatch

from history import EventWriter


class BrokerObserver:
    def __init__(self, connect_string: str, broker_ids: list[int], events: EventWriter) -> None:
        self.events = events
        self.broker_ids = broker_ids
        self.zk = KazooClient(hosts=connect_string, timeout=10.0)
        self._lock = threading.Lock()
        self._last: dict[int, tuple] = {}

    def start(self) -> None:
        self.zk.start(timeout=30)
        self.zk.ensure_path("/brokers/ids")
        for b in self.broker_ids:
            DataWatch(self.zk, f"/brokers/ids/{b}", func=self._watcher(b))

    def _watcher(self, broker_id: int):
        def on_change(data, stat, event=None) -> None:
            self._record(broker_id, stat, final=False)

        return on_change

    def _record(self, broker_id: int, stat, final: bool) -> None:
        key = (stat is not None, stat.czxid if stat else None, stat.ephemeralOwner if stat else None)
        with self._lock:
            if not final and self._last.get(broker_id) == key:
                return
            self._last[broker_id] = key
            self.events.emit(
                "broker_znode", process=broker_id, broker_id=broker_id, exists=stat is not None,
                czxid=stat.czxid if stat else None, owner=stat.ephemeralOwner if stat else None,
                mzxid=stat.mzxid if stat else None, final=final,
            )

    def final_snapshot(self) -> None:
        """One read per broker, after a sync, marked ``final``."""
        try:
            self.zk.sync("/brokers/ids")
        except KazooException:
            pass
        for b in self.broker_ids:
            try:
                stat = self.zk.exists(f"/brokers/ids/{b}")
            except KazooException as e:
                self.events.emit("broker_znode_unreadable", type="info", process=b, broker_id=b, error=repr(e))
                continue
            self._record(b, stat, final=True)

    def stop(self) -> None:
        try:
            self.zk.stop()
            self.zk.close()
        except KazooException:
            pass
