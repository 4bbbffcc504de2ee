from __future__ import annotations

import random

import pytest

from nemesis.base import FaultOp, TargetError
from nemesis.targets import Pools, resolve, resolve_op, resolve_partition, spec_error


def pools(leader="zk2", controller="b3") -> Pools:
    return Pools(["zk1", "zk2", "zk3"], ["b1", "b2", "b3"], lambda: leader, lambda: controller)


def rng() -> random.Random:
    return random.Random(4)


@pytest.mark.parametrize("spec,role,size", [
    ("one", "any", 1), ("one-zk", "any", 1), ("minority-zk", "any", 1), ("majority-zk", "any", 2),
    ("all-broker", "any", 3), ("all", "any", 6), ("majority", "any", 4), ("minority", "any", 2),
    ("one", "broker", 1),
])
def test_counts(spec, role, size):
    got = resolve(spec, pools(), rng(), role)
    assert len(got) == size and len(set(got)) == size
    if spec.endswith("-zk"):
        assert all(g.startswith("zk") for g in got)
    if spec.endswith("-broker") or role == "broker":
        assert all(g.startswith("b") for g in got)


def test_dynamic_and_explicit():
    assert resolve("zk-leader", pools(), rng()) == ["zk2"]
    assert resolve("leader", pools(), rng()) == ["zk2"]
    assert resolve("zk-followers", pools(), rng()) == ["zk1", "zk3"]
    assert resolve("zk-follower", pools(), rng()) == ["zk1"]
    assert resolve("controller", pools(), rng()) == ["b3"]
    assert resolve("b2", pools(), rng()) == ["b2"]
    assert resolve(["b1", "zk3", "b1"], pools(), rng()) == ["b1", "zk3"]


def test_never_outside_the_inventory():
    with pytest.raises(TargetError, match="not in the inventory"):
        resolve("b9", pools(), rng())
    with pytest.raises(TargetError, match="not in the inventory"):
        resolve(["b1", "elsewhere"], pools(), rng())
    with pytest.raises(TargetError, match="no broker holds"):
        resolve("controller", pools(controller=None), rng())
    with pytest.raises(TargetError, match="no ZooKeeper leader"):
        resolve("zk-leader", pools(leader=None), rng())
    with pytest.raises(TargetError, match="partition spec"):
        resolve("halves", pools(), rng())


def test_spec_syntax():
    assert spec_error("one-zk") is None
    assert spec_error(["b1"]) is None
    assert "role suffix" in spec_error("one-zookeeper")
    assert spec_error([]) is not None
    assert spec_error(3) is not None
    assert spec_error("b 1") is not None


def test_resolution_is_seeded_and_deterministic():
    op = FaultOp("kill", "start", [], {"spec": "one", "seed": 7})
    a = resolve_op(op, pools())
    assert a.targets and a.targets == resolve_op(op, pools()).targets
    seen = {tuple(resolve_op(FaultOp("kill", "start", [], {"spec": "one", "seed": s}), pools()).targets)
            for s in range(30)}
    assert len(seen) > 1
    assert resolve_op(FaultOp("kill", "start", ["b1"], {}), pools()).targets == ["b1"]
    wipe = resolve_op(FaultOp("wipe", "start", [], {"spec": "one"}), pools(), {"wipe": "broker"})
    assert wipe.targets[0].startswith("b")


def test_partition_specs():
    kind, t = resolve_partition("halves", pools(), rng())
    assert kind == "halves" and len(t) == 3
    kind, t = resolve_partition("majorities-ring", pools(), rng())
    assert kind == "majorities-ring" and sorted(t) == sorted(pools().all)
    assert resolve_partition("zk-leader", pools(), rng()) == ("isolate", ["zk2"])
    op = resolve_op(FaultOp("partition", "start", [], {"spec": "bridge"}), pools())
    assert op.params["grudge"] == "bridge" and len(op.targets) == 6


def test_cut_links_to_a_dynamic_end_expand_when_the_op_runs():
    from nemesis.targets import needs_links, resolve_links

    pools = Pools(["zk1", "zk2", "zk3"], ["b1", "b2"], leader=lambda: "zk2")
    assert resolve_links(["b1->zk-followers", "b2->b1"], pools) == ["b1->zk1", "b1->zk3", "b2->b1"]
    assert resolve_links(["b1->zk-leader"], pools) == ["b1->zk2"]
    op = FaultOp("cut", "start", ["b1"], {"links": ["b1->zk-followers"]})
    assert needs_links(op) and resolve_op(op, pools).params["links"] == ["b1->zk1", "b1->zk3"]
    assert resolve_op(op, pools).targets == ["b1"]
    plain = FaultOp("cut", "start", ["b1"], {"links": ["b1->zk1"]})
    assert not needs_links(plain) and resolve_op(plain, pools) == plain
    with pytest.raises(TargetError, match="no ZooKeeper leader"):
        resolve_links(["b1->zk-followers"], Pools(["zk1"], ["b1"]))
