"""net_partition's nftables commands, from a grudge (pure)."""

from __future__ import annotations

import pytest

from base.errors import UsageError
from nemesis.firewall import HEAL_COMMAND, TABLE, as_root, rules_for
from nemesis.grudges import build
from nemesis.packages import package_schedule

ADDRESSES = {"zk1": "10.9.0.11", "zk2": "10.9.0.12", "zk3": "10.9.0.13", "b1": "10.9.0.21"}


def test_isolating_a_server_drops_its_peers_there_and_it_everywhere_else():
    grudge = build("isolate", ["zk1"], list(ADDRESSES))
    zk1 = rules_for("zk1", grudge, ADDRESSES)
    assert zk1 is not None and "10.9.0.12, 10.9.0.13, 10.9.0.21" in zk1
    assert f"nft add table inet {TABLE}" in zk1 and "hook input" in zk1 and zk1.endswith("fi")
    for other in ("zk2", "zk3", "b1"):
        rule = rules_for(other, grudge, ADDRESSES)
        assert rule is not None and "{ 10.9.0.11 }" in rule


def test_one_way_leaves_the_other_side_without_rules():
    grudge = build("isolate", ["zk1"], list(ADDRESSES), "one-way")
    assert rules_for("zk1", grudge, ADDRESSES) is not None
    assert rules_for("zk2", grudge, ADDRESSES) is None


def test_commands_run_as_root_or_through_sudo_and_heal_removes_only_our_table():
    wrapped = as_root("nft list tables")
    assert wrapped.startswith('if [ "$(id -u)" = 0 ]; then nft list tables;')
    assert "sudo -n sh -c 'nft list tables'" in wrapped
    assert f"nft delete table inet {TABLE}" in HEAL_COMMAND and "flush ruleset" not in HEAL_COMMAND


def test_net_partition_is_packaged_with_grudge_targets():
    schedule = package_schedule(["net_partition"], interval=2.0, time_limit=20.0, seed=3)
    starts = [s.op for s in schedule.steps if s.op.phase == "start"]
    assert starts and all(op.params["spec"] in ("zk-leader", "one-zk", "halves", "majorities-ring")
                          for op in starts)


def test_net_partition_is_refused_on_the_embedded_inventory(tmp_path):
    from base.inventory import load_inventory
    from harness.commands.run import _refuse_host_faults

    inv = load_inventory("inventory/local.toml")
    with pytest.raises(UsageError, match="--faults: net_partition needs nodes that are their own hosts"):
        _refuse_host_faults(inv, {"net_partition", "kill"}, "--faults")
