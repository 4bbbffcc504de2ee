"""What the wire proxies' nemeses share (``nemesis.zkproxy_faults``, ``nemesis.kafkaproxy_faults``):
rules installed through a proxy's control API (``nemesis.wireproxy.client``), remembered per fault
op, removed by its ``stop``, every one cleared by ``heal()``. The proxy client is looked up when an
op runs (``client_of``): a run's Kafka proxy starts with its brokers, after the nemeses' setup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nemesis.wireproxy.client import WireProxyClient


class WireRulesNemesis:
    fs: frozenset[str] = frozenset()
    cleared_key = "wireproxy_rules_cleared"  # the heal's report entry

    def __init__(self, client: WireProxyClient | Callable[[], WireProxyClient | None]) -> None:
        self._client = client
        self.installed: dict[str, list[str]] = {}  # fault → the rule ids its start installed

    @property
    def client(self) -> WireProxyClient | None:
        return self._client() if callable(self._client) else self._client

    def need_client(self, f: str) -> WireProxyClient:
        client = self.client
        if client is None:
            raise ValueError(f"{f}: no wire proxy in this run")
        return client

    def install(self, f: str, rules: list[dict[str, Any]]) -> list[str]:
        ids = self.need_client(f).add_rules(rules)
        self.installed.setdefault(f, []).extend(ids)
        return ids

    def remove(self, f: str | None = None) -> list[str]:
        """Remove the rules ``f``'s starts installed (every fault's for None)."""
        removed = []
        for fault in [f] if f is not None else list(self.installed):
            for rid in self.installed.pop(fault, []):
                self.need_client(fault).remove_rule(rid)
                removed.append(rid)
        return removed

    def stopped(self, f: str, removed: list[str]) -> dict[str, Any]:
        """A stop's report: the rules it removed, and what they held released now, late (a removed
        rule holds nothing more; a rule that holds nothing releases 0)."""
        client = self.need_client(f)
        return {"rules_removed": removed, "released": sum(client.release(rid) for rid in removed)}

    def heal(self) -> dict[str, Any]:
        """Every rule cleared and every held frame released."""
        self.installed = {}
        client = self.client
        if client is None:
            return {self.cleared_key: 0}
        return {self.cleared_key: client.clear_rules(), "released": client.release()}

    def teardown(self) -> None:
        pass
