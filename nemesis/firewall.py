"""Network faults on the nodes themselves, for traffic Toxiproxy never carries (ZooKeeper's quorum
links, any direct node↔node connection): nftables rules in a table the harness owns.

* ``net_partition``: a grudge (``nemesis.grudges``: isolate | halves | bridge | majorities-ring,
  both or one-way) enforced on each node by dropping input from the addresses it holds a grudge
  against; ``stop`` (or ``heal()``) deletes the harness's table on every node it touched, and
  nothing else. Params and targets as ``partition``.

Each node has its own netfilter only when it is its own host (an external inventory: VMs or
network-namespace hosts); on the embedded loopback inventory every node shares this machine's
netfilter and loopback traffic carries no per-node source address, so the fault is refused there.
``harness teardown`` deletes the table on every node after a crash (``HEAL_COMMAND``, the fault's
``crash_heal`` in ``nemesis.registry``).
"""

from __future__ import annotations

import shlex
from typing import Any

from base.remote import on_nodes
from nemesis.grudges import Grudge, build
from nemesis.nft import HEAL_COMMAND, TABLE, as_root
from nemesis.ops import FaultOp
from nemesis.registry import faults_of

FIREWALL_FAULTS = faults_of("firewall")


def rules_for(node: str, grudge: Grudge, addresses: dict[str, str]) -> str | None:
    """The shell command that makes ``node`` drop what its grudge names (None: nothing to drop)."""
    drop = sorted(addresses[n] for n in grudge.get(node, ()) if n in addresses)
    if not drop:
        return None
    chain = "{ type filter hook input priority -10 ; policy accept ; }"
    return as_root(" && ".join([
        f"nft add table inet {TABLE}",
        f"nft add chain inet {TABLE} input {shlex.quote(chain)}",
        f"nft add rule inet {TABLE} input ip saddr {shlex.quote('{ ' + ', '.join(drop) + ' }')} drop",
    ]))


class FirewallNemesis:
    fs = FIREWALL_FAULTS

    def __init__(self) -> None:
        self.cluster: Any = None
        self.touched: set[str] = set()

    def setup(self, cluster: Any) -> None:
        self.cluster = cluster

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if op.f not in self.fs:
            raise ValueError(f"FirewallNemesis cannot do {op.f}")
        if op.phase == "stop":
            return {"tables_removed": self._heal()}
        inv = self.cluster.inv
        if inv.embedded:
            raise ValueError("net_partition needs nodes that are their own hosts (an external inventory); "
                             "on the embedded loopback inventory use partition (Toxiproxy)")
        addresses = {n.name: n.address for n in inv.nodes}
        grudge = build(op.params.get("grudge", "isolate"), op.targets, list(addresses),
                       op.params.get("direction", "both"))
        commands = {node: cmd for node in addresses if (cmd := rules_for(node, grudge, addresses))}
        self.touched |= set(commands)
        on_nodes(sorted(commands), lambda node: self.cluster.remotes[node].run(commands[node], check=True))
        return {"grudge_map": {k: sorted(v) for k, v in sorted(grudge.items()) if v}, "nodes": sorted(commands)}

    def _heal(self) -> list[str]:
        nodes = sorted(self.touched)
        on_nodes(nodes, lambda node: self.cluster.remotes[node].run(HEAL_COMMAND))
        self.touched.clear()
        return nodes

    def heal(self) -> dict[str, Any]:
        return {"tables_removed": self._heal()} if self.touched else {}

    def teardown(self) -> None:
        self.heal()
