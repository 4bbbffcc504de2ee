from __future__ import annotations

import pytest

from nemesis.grudges import (
    LinkRef,
    bisect,
    bridge,
    build,
    complete_grudge,
    grudge_cuts,
    isolate,
    majorities_ring,
    one_way,
    split_one,
)

NODES = ["zk1", "zk2", "zk3", "b1", "b2", "b3"]


def links() -> list[LinkRef]:
    out = [LinkRef(f"{b}->{z}", b, z) for b in ("b1", "b2", "b3") for z in ("zk1", "zk2", "zk3")]
    out += [LinkRef(f"{a}->{b}", a, b) for a in ("b1", "b2", "b3") for b in ("b1", "b2", "b3") if a != b]
    return out


def test_split_one_and_complete_grudge_are_symmetric():
    g = complete_grudge(split_one("b1", NODES))
    assert g["b1"] == frozenset(n for n in NODES if n != "b1")
    assert all(g[n] == {"b1"} for n in NODES if n != "b1")


def test_bisect_halves():
    assert bisect(["a", "b", "c", "d", "e"]) == [["a", "b"], ["c", "d", "e"]]
    g = complete_grudge(bisect(["a", "b", "c", "d"]))
    assert g == {"a": {"c", "d"}, "b": {"c", "d"}, "c": {"a", "b"}, "d": {"a", "b"}}


def test_bridge_node_sees_everyone():
    g = bridge(["a", "b", "c", "d", "e"])
    assert g["c"] == frozenset()
    assert g["a"] == {"d", "e"} and g["d"] == {"a", "b"}


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7])
def test_majorities_ring_every_node_sees_a_distinct_majority(n):
    nodes = [f"n{i}" for i in range(n)]
    g = majorities_ring(nodes)
    seen = {node: frozenset(nodes) - g[node] for node in nodes}
    assert all(len(v) == n // 2 + 1 and node in v for node, v in seen.items())
    assert len(set(seen.values())) == n  # never the same majority


def test_one_way_only_first_component_drops():
    g = one_way([["b1"], ["b2", "zk1"]])
    assert g == {"b1": {"b2", "zk1"}, "b2": frozenset(), "zk1": frozenset()}


def test_isolate_rejects_unknown_nodes():
    with pytest.raises(ValueError, match="b9"):
        isolate(["b9"], NODES)


def test_grudge_cuts_two_way_isolation_of_a_broker():
    cuts = grudge_cuts(build("isolate", ["b1"], NODES), links())
    touching = {ln.name for ln in links() if "b1" in (ln.src, ln.dst)}
    assert set(cuts) == touching
    assert all(v == {"upstream", "downstream"} for v in cuts.values())


def test_grudge_cuts_one_way():
    # b1 drops what others send: links b1 dials lose downstream, links others dial to b1 lose upstream
    cuts = grudge_cuts(build("isolate", ["b1"], NODES, "one-way"), links())
    assert cuts["b1->zk1"] == {"downstream"}
    assert cuts["b2->b1"] == {"upstream"}
    assert "b2->zk1" not in cuts


def test_grudge_cuts_zookeeper_pairs_have_no_links():
    cuts = grudge_cuts(build("halves", ["zk1", "zk2", "zk3"], NODES), links())
    assert "b1->b2" not in cuts and set(cuts) == {ln.name for ln in links() if ln.dst.startswith("zk")}


def test_build_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown grudge"):
        build("nope", [], NODES)
    with pytest.raises(ValueError, match="direction"):
        build("isolate", ["b1"], NODES, "sideways")
    with pytest.raises(ValueError, match="two-way"):
        build("bridge", [], NODES, "one-way")


def test_a_partition_cuts_the_clients_from_the_side_cut_off_and_a_ring_leaves_them_alone():
    """The workload clients (``client->zk<M>``, ``client->b<N>``) stand with the nodes not targeted."""
    from types import SimpleNamespace

    from base.components.toxiproxy import Link
    from nemesis.links import LinkNemesis
    from nemesis.ops import FaultOp

    names = ["b1", "b2", "b3", "zk1", "zk2", "zk3"]
    links = {ln.name: ln for ln in (
        [Link(f"{b}->{z}", "agent-zk", b, z, "") for b in names[:3] for z in names[3:]]
        + [Link(f"client->{n}", "client-broker" if n[0] == "b" else "client-zk", "client", n, "") for n in names])}
    added: list[tuple[str, str]] = []
    net = SimpleNamespace(links=links, remove_toxics=None,
                          add_toxic=lambda name, toxic, type_, stream, attrs: added.append((name, stream)))
    nem = LinkNemesis()
    nem.setup(SimpleNamespace(links=net, inv=SimpleNamespace(nodes=[SimpleNamespace(name=n) for n in names])))

    out = nem.invoke(FaultOp("partition", "start", ["b2"], {"grudge": "isolate"}))
    assert sorted(out["cuts"]) == ["b2->zk1", "b2->zk2", "b2->zk3", "client->b2"]
    assert ("client->b2", "upstream") in added and ("client->b2", "downstream") in added
    added.clear()
    nem.invoke(FaultOp("partition", "start", ["b1", "zk1"], {"grudge": "halves", "direction": "one-way"}))
    assert {n for n, _ in added} >= {"client->b1", "client->zk1"} and "client->b2" not in {n for n, _ in added}
    added.clear()
    out = nem.invoke(FaultOp("partition", "start", [], {"grudge": "majorities-ring"}))
    assert not any(n.startswith("client->") for n, _ in added) and "client" not in out["grudge_map"]
