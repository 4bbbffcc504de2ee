"""Observer: the harness's own kazoo client, straight to the ensemble (never through a proxy),
recording what ZooKeeper itself says about every ``/brokers/ids/N``: existence, czxid and owner.
Checkers compare the agents' claims with these independent observations.

With real Kafka brokers (whose controller writes no events) it also records every partition state
znode it sees change (``watch_partition_states``): the committed states, each with its version and
the zxid of the write that made it.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from history import EventWriter


class BrokerObserver:
    def __init__(self, connect_string: str, broker_ids: list[int], events: EventWriter) -> None:
        self.events = events
        self.broker_ids = broker_ids
        self.zk = KazooClient(hosts=connect_string, timeout=10.0)
        self._lock = threading.Lock()
        self._last: dict[int, tuple] = {}
        self._topics: set[str] = set()  # the topics whose partition states are watched

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

    def watch_partition_states(self) -> None:
        """``partition_state`` events for every partition of every topic, from a watch on each state
        znode: ``zk_version`` is the znode's version (Kafka's partition epoch) and ``zxid`` its mzxid
        (the commit of that version). A watch re-reads after each change, so two writes closer than
        one read apart show as the later one only: a version missing from the history is one the
        observer did not see, never one that was not written (the checkers then say unknown)."""
        self.zk.ensure_path("/brokers/topics")
        ChildrenWatch(self.zk, "/brokers/topics", func=self._on_topics)

    def _on_topics(self, topics: list[str]) -> None:
        for t in topics:
            with self._lock:
                if t in self._topics:
                    continue
                self._topics.add(t)
            try:
                data, _ = self.zk.get(f"/brokers/topics/{t}")
                parts = sorted(int(p) for p in json.loads(data).get("partitions", {}))
            except (KazooException, ValueError, TypeError, AttributeError):
                continue  # deleted meanwhile, or not a topic znode Kafka wrote
            for p in parts:
                DataWatch(self.zk, f"/brokers/topics/{t}/partitions/{p}/state", func=self._state_watcher(t, p))

    def _state_watcher(self, topic: str, partition: int) -> Any:
        def on_change(data: bytes | None, stat: Any, event: Any = None) -> None:
            if stat is None or not data:
                return
            try:
                st = json.loads(data)
            except ValueError:
                return
            with self._lock:
                self.events.emit(
                    "partition_state", broker_id=None, topic=topic, partition=partition, leader=st.get("leader"),
                    leader_epoch=st.get("leader_epoch"), isr=st.get("isr"), controller_epoch=st.get("controller_epoch"),
                    zk_version=stat.version, zxid=stat.mzxid)

        return on_change

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
