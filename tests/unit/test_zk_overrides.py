"""ZooKeeper settings on top of the inventory's (harness/zkoverrides.py): names, checks, the --zk parser."""

from __future__ import annotations

import pytest

from harness.zkoverrides import ZK_OVERRIDE_KEYS, as_args, check_overrides, parse_zk_args


def test_zk_flags_parse_to_overrides_and_back():
    zk = parse_zk_args(["sync_limit=100", " tick_time_ms = 250 "])
    assert zk == {"sync_limit": 100, "tick_time_ms": 250}
    assert as_args(zk) == ["--zk", "sync_limit=100", "--zk", "tick_time_ms=250"]
    assert parse_zk_args([]) == {} and as_args({}) == []


@pytest.mark.parametrize(("items", "says"), [
    (["sync_limit"], r"--zk 'sync_limit': expected KEY=VALUE"),
    (["=3"], r"--zk '=3': expected KEY=VALUE"),
    (["java=x"], r"--zk java: unknown ZooKeeper setting"),
    (["sync_limit=ten"], r"--zk sync_limit: expected a positive integer \(syncLimit \(ticks\)\), got 'ten'"),
    (["init_limit=0"], r"--zk init_limit: expected a positive integer"),
    (["min_session_timeout_ms=9000", "max_session_timeout_ms=4000"], r"--zk min_session_timeout_ms: 9000 is larger"),
])
def test_bad_zk_flags_name_the_key(items, says):
    with pytest.raises(ValueError, match=says):
        parse_zk_args(items)


def test_only_the_zoo_cfg_timings_are_overrides_and_every_one_is_a_zk_setting():
    from base.components.zookeeper import ZkSettings

    assert set(ZK_OVERRIDE_KEYS) <= set(ZkSettings.__dataclass_fields__)  # the engine replaces these fields
    assert check_overrides({"sync_limit": 100}) is None
    assert check_overrides({"sync_limit": True}) == ("sync_limit", "expected a positive integer (syncLimit (ticks)), "
                                                                   "got True")
