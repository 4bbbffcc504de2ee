"""`harness setup`: install what an inventory's nodes need to run — ZooKeeper (from Maven Central
by version, or Debian's package) and the agents' Python dependencies (wheels shipped from the
control node, since nodes may have no internet) — after checking Java. Idempotent: a second call
changes nothing and says so. One line per node and item; exit 0 when every node is provisioned,
1 when one is not (its line says why), 254 for a bad inventory or a version Maven cannot resolve.
A run on an external inventory does the same before it starts.
"""

from __future__ import annotations

import argparse

from base.bounds import MAX_CONNECT_S, finite_float
from base.errors import UsageError
from base.inventory import Inventory, NodeSpec, load_inventory
from base.parsing import summary
from base.remote import RemoteError, on_nodes
from harness.commands.doctor import connect_node
from harness.installer import Outcome, kazoo_wheels, provision_node, zookeeper_tarball


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("setup", help="install ZooKeeper and the agents' dependencies on every node (idempotent)",
                       description=summary(__doc__))
    p.add_argument("--inventory", metavar="FILE", help="inventory TOML (default: inventory/local.toml)")
    p.add_argument("--timeout", type=finite_float(0, MAX_CONNECT_S, lo_open=True), default=10.0, metavar="S", help="SSH connect timeout per node (default 10)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError(f"--timeout: must be > 0 seconds, got {args.timeout}")
    inv = load_inventory(args.inventory)
    if inv.embedded:
        print(f"setup: {inv.path} runs on this machine's loopback nodes; `make install` already provides "
              "ZooKeeper, Java and kazoo here: nothing to do")
        return 0
    zk = inv.zookeeper
    print(f"setup: {inv.path} ({len(inv.nodes)} nodes; ZooKeeper {zk.source}"
          f"{' ' + zk.version if zk.version else ''}; install dir per node, default {inv.node_install_dir(inv.nodes[0])})")
    # Resolved on the control node once, before any node is touched: a bad version is a usage error.
    if zk.source == "maven":
        assert zk.version
        zookeeper_tarball(zk.version)
    if inv.brokers:
        kazoo_wheels()
    outcomes = [o for per_node in on_nodes(inv.nodes, lambda n: _setup_node(inv, n, args.timeout)) for o in per_node]
    for o in outcomes:
        print(o.line())
    failed = [o for o in outcomes if o.status == "FAIL"]
    installed = [o for o in outcomes if o.status == "installed"]
    if failed:
        print(f"setup: {len(failed)} item(s) failed")
        return 1
    print(f"setup: {len(installed)} item(s) installed" if installed else "setup: nothing to change (every item present)")
    return 0


def _setup_node(inv: Inventory, node: NodeSpec, timeout: float) -> list[Outcome]:
    try:
        remote, _ = connect_node(inv, node, None, timeout)
    except (RemoteError, UsageError) as e:
        return [Outcome(node.name, "ssh", "FAIL", str(e).split(": ", 1)[-1])]
    try:
        return provision_node(inv, node, remote)
    except RemoteError as e:
        return [Outcome(node.name, "provision", "FAIL", str(e))]
    finally:
        remote.close()
