"""Partitions as grudges (Jepsen's ``nemesis.clj``), pure.

A *grudge* maps each node to the set of nodes whose traffic it drops. Builders here turn node
lists into grudges; ``grudge_cuts`` maps a grudge onto the Toxiproxy link graph, where a link
``a->b`` is a connection ``a`` dials to ``b``: its ``upstream`` stream carries a→b bytes and its
``downstream`` stream b→a bytes. So "b drops traffic from a" cuts ``a->b`` upstream and ``b->a``
downstream. Pairs with no link between them (ZooKeeper↔ZooKeeper quorum traffic is not proxied)
map to nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

Grudge = dict[str, frozenset[str]]

GRUDGES = ("isolate", "halves", "bridge", "majorities-ring")
COMPONENT_GRUDGES = ("isolate", "halves")  # the targets on one side, every other node on the other
DIRECTIONS = ("both", "one-way")


class LinkRef(NamedTuple):
    name: str
    src: str
    dst: str


def majority(n: int) -> int:
    return n // 2 + 1


def complete_grudge(components: Sequence[Iterable[str]]) -> Grudge:
    """Every node drops traffic from every node outside its own component."""
    comps = [frozenset(c) for c in components]
    everyone = frozenset().union(*comps) if comps else frozenset()
    out: dict[str, frozenset[str]] = {}
    for comp in comps:
        for node in comp:
            out[node] = out.get(node, frozenset()) | (everyone - comp)
    return out


def one_way(components: Sequence[Iterable[str]]) -> Grudge:
    """Only the first component drops traffic from the rest: the rest still hear it."""
    comps = [frozenset(c) for c in components]
    if not comps:
        return {}
    first, rest = comps[0], frozenset().union(*comps[1:]) if len(comps) > 1 else frozenset()
    out: dict[str, frozenset[str]] = {n: rest for n in first}
    for n in rest:
        out[n] = frozenset()
    return out


def split_one(node: str, nodes: Sequence[str]) -> list[list[str]]:
    """Isolate one node: ``[[node], others]``."""
    if node not in nodes:
        raise ValueError(f"split_one: {node!r} is not one of {list(nodes)}")
    return [[node], [n for n in nodes if n != node]]


def isolate(group: Sequence[str], nodes: Sequence[str]) -> list[list[str]]:
    """The nodes in ``group`` on one side, everyone else on the other."""
    missing = [g for g in group if g not in nodes]
    if missing:
        raise ValueError(f"isolate: {missing} are not among {list(nodes)}")
    rest = [n for n in nodes if n not in group]
    return [list(group), rest] if rest else [list(group)]


def bisect(nodes: Sequence[str]) -> list[list[str]]:
    """Halves: the first ⌊n/2⌋ nodes (a minority) and the rest (a majority)."""
    k = len(nodes) // 2
    return [list(nodes[:k]), list(nodes[k:])]


def bridge(nodes: Sequence[str]) -> Grudge:
    """Two halves plus one node (the first of the second half) that both halves can reach."""
    if len(nodes) < 3:
        raise ValueError("bridge: needs at least 3 nodes")
    k = len(nodes) // 2
    a, b = list(nodes[:k]), list(nodes[k:])
    br, b_rest = b[0], frozenset(b[1:])
    out: dict[str, frozenset[str]] = {n: b_rest for n in a}
    for n in b_rest:
        out[n] = frozenset(a)
    out[br] = frozenset()
    return out


def majorities_ring(nodes: Sequence[str]) -> Grudge:
    """Every node sees a majority (itself and its nearest ring neighbours), never the same one.

    Exact for any n: node i keeps the ⌊n/2⌋+1 nodes of the window centred on it in ring order
    (one more on the right when the window is even), and drops the rest. For n ≤ 5 this is
    Jepsen's exact form; for larger n it is a deterministic form of the stochastic one (shuffle
    ``nodes`` first for a random ring).
    """
    n = len(nodes)
    if n < 3:
        raise ValueError("majorities_ring: needs at least 3 nodes")
    m = majority(n)
    left = (m - 1) // 2
    right = m - 1 - left
    out: dict[str, frozenset[str]] = {}
    for i, node in enumerate(nodes):
        keep = {nodes[(i + d) % n] for d in range(-left, right + 1)}
        out[node] = frozenset(x for x in nodes if x not in keep)
    return out


def build(kind: str, targets: Sequence[str], nodes: Sequence[str], direction: str = "both") -> Grudge:
    """The grudge a ``partition`` op names. ``targets``: for ``isolate`` and ``halves`` the nodes of
    the first (cut-off) component; for ``bridge`` and ``majorities-ring`` the node order (all nodes
    when empty). ``direction="one-way"`` makes the first component drop traffic from the others
    while its own traffic still gets through (only for the component grudges)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if kind in COMPONENT_GRUDGES:
        if not targets:
            raise ValueError(f"{kind}: needs target nodes")
        comps = isolate(targets, nodes)
        return one_way(comps) if direction == "one-way" else complete_grudge(comps)
    order = list(targets) or list(nodes)
    order += [n for n in nodes if n not in order]
    if direction != "both":
        raise ValueError(f"{kind}: only two-way partitions")
    if kind == "bridge":
        return bridge(order)
    if kind == "majorities-ring":
        return majorities_ring(order)
    raise ValueError(f"unknown grudge {kind!r} (known: {', '.join(GRUDGES)})")


def grudge_cuts(grudge: Grudge, links: Iterable[LinkRef]) -> dict[str, frozenset[str]]:
    """Link name → the streams to cut (``upstream``/``downstream``) to enforce the grudge."""
    cuts: dict[str, set[str]] = {}
    for ln in links:
        if ln.src in grudge.get(ln.dst, ()):  # dst drops what src sends: src→dst bytes
            cuts.setdefault(ln.name, set()).add("upstream")
        if ln.dst in grudge.get(ln.src, ()):  # src drops what dst sends: dst→src bytes
            cuts.setdefault(ln.name, set()).add("downstream")
    return {k: frozenset(v) for k, v in sorted(cuts.items())}
