"""Target specs → node names (Jepsen's ``:one :minority :majority :all :primaries`` …), pure.

A spec is one of:

* a node name (``"b2"``) or a list of node names (``["b1", "zk3"]``);
* ``all``, ``one``, ``minority``, ``majority``, each optionally suffixed ``-zk`` or ``-broker``
  to pick from one role (``minority-zk``); unsuffixed specs pick from the fault's default pool;
* ``zk-leader`` (alias ``leader``), ``zk-followers``, ``zk-follower`` (the first follower in
  inventory order: one server behind the quorum while the other two keep it), ``controller`` (the broker named in
  ``/controller``): looked up on the live cluster when the op runs.

For ``partition`` ops the spec also picks the grudge (see ``resolve_partition``): ``halves``,
``bridge`` and ``majorities-ring`` name whole-cluster grudges; any node spec isolates those
nodes from the rest.

Random choices use an ``random.Random`` the caller seeds, so the same schedule resolves the same
way on the same inventory. Everything resolved is drawn from the inventory's pools, so a spec can
never name a node outside it.
"""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nemesis.ops import FaultOp, TargetError
from nemesis.registry import grudge_faults

Spec = str | list[str]

COUNTS = ("all", "one", "minority", "majority")
ROLES = {"zk": "zk", "broker": "broker", "brokers": "broker"}
DYNAMIC = ("zk-leader", "leader", "zk-followers", "zk-follower", "controller")
WHOLE_GRUDGES = ("halves", "bridge", "majorities-ring")
CLIENT_NODE = "client"  # the dialling side of the workload clients' links (not an inventory node)


@dataclass
class Pools:
    """What a spec can pick from. ``leader``/``controller`` are called only when a spec needs them."""

    zookeepers: list[str]
    brokers: list[str]
    leader: Callable[[], str | None] = field(default=lambda: None)
    controller: Callable[[], str | None] = field(default=lambda: None)

    @property
    def all(self) -> list[str]:
        return self.zookeepers + self.brokers

    def pool(self, role: str) -> list[str]:
        return {"zk": self.zookeepers, "broker": self.brokers, "any": self.all}[role]


def spec_error(spec: Any) -> str | None:
    """Why ``spec`` is not a valid spec (syntax only; node names checked against pools later)."""
    if isinstance(spec, list):
        if not spec or not all(isinstance(s, str) and s for s in spec):
            return "a target list must be a non-empty list of node names"
        return None
    if not isinstance(spec, str) or not spec:
        return f"targets must be a spec string or a list of node names, got {spec!r}"
    if spec in DYNAMIC or spec in WHOLE_GRUDGES or _count_role(spec) is not None:
        return None
    if spec.partition("-")[0] in COUNTS:
        return f"unknown target spec {spec!r} (role suffix must be -zk or -broker)"
    if spec.replace("-", "").replace("_", "").isalnum():
        return None  # a node name; checked against the inventory when it runs
    return f"unknown target spec {spec!r}"


def is_node_name(spec: Any) -> bool:
    """A valid spec string that names one node (not a count, a dynamic or a grudge spec)."""
    return (isinstance(spec, str) and spec_error(spec) is None and spec not in DYNAMIC and spec not in WHOLE_GRUDGES
            and _count_role(spec) is None)


def _count_role(spec: str) -> tuple[str, str] | None:
    head, _, tail = spec.partition("-")
    if head not in COUNTS:
        return None
    if not tail:
        return head, ""
    role = ROLES.get(tail)
    return (head, role) if role else None


def count_for(count: str, n: int) -> int:
    if n == 0:
        return 0
    return {"all": n, "one": 1, "minority": max(1, (n - 1) // 2), "majority": n // 2 + 1}[count]


def resolve(spec: Spec, pools: Pools, rng: random.Random, default_role: str = "any") -> list[str]:
    """The node names ``spec`` means; raises TargetError when it names nothing or something unknown."""
    err = spec_error(spec)
    if err:
        raise TargetError(err)
    known = set(pools.all)
    if isinstance(spec, list):
        outside = [s for s in spec if s not in known]
        if outside:
            raise TargetError(f"targets {outside} are not in the inventory")
        return list(dict.fromkeys(spec))
    cr = _count_role(spec)
    if cr is not None:
        count, role = cr
        pool = pools.pool(role or default_role)
        if not pool:
            raise TargetError(f"{spec}: no {role or default_role} nodes in the inventory")
        k = count_for(count, len(pool))
        return list(pool) if count == "all" else sorted(rng.sample(list(pool), k))
    if spec in ("zk-leader", "leader", "zk-followers", "zk-follower"):
        leader = pools.leader()
        if leader is None:
            raise TargetError(f"{spec}: no ZooKeeper leader right now")
        if spec in ("zk-leader", "leader"):
            return [leader]
        followers = [z for z in pools.zookeepers if z != leader]
        return followers[:1] if spec == "zk-follower" else followers
    if spec == "controller":
        ctl = pools.controller()
        if ctl is None:
            raise TargetError("controller: no broker holds /controller right now")
        return [ctl]
    if spec in WHOLE_GRUDGES:
        raise TargetError(f"{spec} is a partition spec: only for fault 'partition'")
    if spec not in known:
        raise TargetError(f"target {spec!r} is not in the inventory")
    return [spec]


def resolve_partition(spec: Spec, pools: Pools, rng: random.Random) -> tuple[str, list[str]]:
    """A partition spec → (grudge kind, targets). Whole-cluster grudges shuffle every node (the
    node order is the ring/bridge order); any node spec isolates those nodes from the rest."""
    if isinstance(spec, str) and spec in WHOLE_GRUDGES:
        nodes = list(pools.all)
        rng.shuffle(nodes)
        if spec == "halves":
            return "halves", sorted(nodes[: len(nodes) // 2])
        return spec, nodes
    return "isolate", resolve(spec, pools, rng)


def step_rng(op: FaultOp) -> random.Random:
    """Deterministic per op: seeded from the op's ``seed`` param (default 0), fault and spec."""
    key = json.dumps([op.f, op.params.get("spec"), op.params.get("seed", 0)], sort_keys=True)
    return random.Random(zlib.crc32(key.encode()))


def resolve_links(links: list[str], pools: Pools) -> list[str]:
    """``cut`` links whose far end is a dynamic spec (``b2->zk-followers``: the ZooKeeper servers that
    follow right now) → one link per node; plain ``a->b`` links pass through. An episode's schedule
    is written before the run, so it can name the leader's followers only this way."""
    out: list[str] = []
    for link in links:
        src, arrow, dst = link.partition("->")
        if arrow and dst in DYNAMIC:
            out += [f"{src}->{n}" for n in resolve(dst, pools, random.Random(0))]
        else:
            out.append(link)
    return out


def link_names(brokers: Sequence[str], zookeepers: Sequence[str]) -> list[str]:
    """Every Toxiproxy link of a cluster of these nodes, named as ``harness.cluster`` creates them:
    ``b<N>->zk<M>`` (agent→ZooKeeper), ``client->zk<M>`` (the workload clients) and ``b<N>->b<M>``
    (agent→agent). What a ``cut`` may name, so a schedule is judged before a cluster starts."""
    return ([f"{b}->{z}" for b in brokers for z in zookeepers] + [f"{CLIENT_NODE}->{z}" for z in zookeepers]
            + [f"{a}->{b}" for a in brokers for b in brokers if a != b])


def link_error(link: Any, brokers: Sequence[str] | None = None, zookeepers: Sequence[str] | None = None) -> str | None:
    """Why ``link`` is not a ``cut`` link (``src->dst``; the far end may be a dynamic spec such as
    ``zk-followers``, see ``resolve_links``), or None; with the inventory's nodes, also a link of it."""
    if not isinstance(link, str):
        return f"a link is a string like 'b1->zk2', got {type(link).__name__}"
    src, arrow, dst = link.partition("->")
    if not arrow or not src or not dst or spec_error(src) or spec_error(dst) or "->" in dst:
        return f"{link[:40]!r} is not a link like 'b1->zk2' or 'b1->b3'"
    if brokers is None or zookeepers is None:
        return None
    if dst in DYNAMIC:
        if src in brokers or src == CLIENT_NODE:
            return None
    elif link in link_names(brokers, zookeepers):
        return None
    return f"no link {link!r} in this inventory (links run from a broker or client to a ZooKeeper server or another broker)"


def needs_links(op: FaultOp) -> bool:
    """A ``cut`` whose links name a dynamic far end, to expand when it runs."""
    links = op.params.get("links")
    return op.f == "cut" and isinstance(links, list) and any(str(x).partition("->")[2] in DYNAMIC for x in links)


def resolve_op(op: FaultOp, pools: Pools, default_roles: dict[str, str] | None = None) -> FaultOp:
    """Fill ``op.targets`` from ``op.params['spec']`` (ops with explicit targets pass through) and
    expand dynamic ends of ``cut`` links (``resolve_links``)."""
    if needs_links(op):
        op = FaultOp(op.f, op.phase, op.targets, {**op.params, "links": resolve_links(op.params["links"], pools)})
    spec = op.params.get("spec")
    if op.targets or spec is None:
        return op
    rng = step_rng(op)
    params = dict(op.params)
    if op.f in grudge_faults():  # its targets may be a whole-cluster grudge spec
        kind, targets = resolve_partition(spec, pools, rng)
        params.setdefault("grudge", kind)
    else:
        targets = resolve(spec, pools, rng, (default_roles or {}).get(op.f, "any"))
    return FaultOp(op.f, op.phase, targets, params)


def cluster_pools(cluster: Any, zk_timeout: float = 5.0) -> Pools:
    """Pools over a live cluster: leader from ``srvr``, controller from ``/controller`` read with
    the harness's own (never faulted) ZooKeeper client."""
    inv = cluster.inv
    zk_client: list[Any] = []

    def leader() -> str | None:
        node = cluster.ensemble.leader() if cluster.ensemble is not None else None
        return node.member.name if node is not None else None

    def controller() -> str | None:
        if not zk_client:
            zk_client.append(cluster.zk())
        try:
            data, _ = zk_client[0].get_async("/controller").get(timeout=zk_timeout)
        except Exception:  # noqa: BLE001 - no node, no quorum: nobody is controller
            return None
        try:
            bid = int(json.loads(data)["brokerid"])
            return inv.broker(bid).name
        except (ValueError, KeyError, TypeError):
            return None

    return Pools([n.name for n in inv.zookeepers], [n.name for n in inv.brokers], leader, controller)


def node_names(nodes: Sequence[Any]) -> list[str]:
    return [n.name for n in nodes]
