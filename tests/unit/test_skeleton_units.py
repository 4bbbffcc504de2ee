"""Pure pieces of the control node: inventory validation, events, ZooKeeper config, CheckedEphemeral."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.config import ConfigError, Toggles, parse_toggle_args
from agent.registration import NO_SESSION, AfterNodeExists, after_node_exists
from base.components.zookeeper import ZkMember, ZkSettings, parse_dump_sessions, parse_mode, render_config
from base.inventory import DEFAULT_INVENTORY, InventoryError, load_inventory
from harness.cli import main
from history import EventWriter, HistoryFormatError, merge, read_events

REPO = Path(__file__).resolve().parents[2]


def test_default_and_example_inventories_load():
    local = load_inventory()
    assert [n.name for n in local.zookeepers] == ["zk1", "zk2", "zk3"]
    assert [n.broker_id for n in local.brokers] == [1, 2, 3]
    assert local.embedded
    vms = load_inventory(REPO / "inventory" / "example-vms.toml")
    assert not vms.embedded and vms.agents.session_timeout_ms == 18000
    assert vms.ssh.host_keys == "verify" and vms.trusted_keys_file == REPO / "inventory" / "example-vms.known_hosts"


@pytest.mark.parametrize("text, expected", [
    ("name = 'x'\n[ssh\n", ":2: invalid TOML"),
    ("nodes = 3\n", "nodes: expected list"),
    ("[[nodes]]\nname='a'\naddress='127.0.0.2'\nroles=['broker']\n", "nodes[0].broker_id: required"),
    ("[[nodes]]\nname='a'\naddress='10.1.1.1'\nroles=['zookeeper']\n", "only allows loopback"),
    ("[agents]\nsession_timeout_ms = -1\n[[nodes]]\nname='a'\naddress='127.0.0.2'\nroles=['zookeeper']\n",
     ":2: agents.session_timeout_ms: expected an integer of ms in [1, 3600000], got -1"),
    ("[zookeeper]\ntick_time_ms = 1" + "0" * 300 + "\n", ":2: zookeeper.tick_time_ms: expected an integer of ms"),
    ("[[nodes]]\nname='a'\naddress='127.0.0.2'\nroles=['zookeeper']\n[[nodes]]\nname='b'\naddress='127.0.0.3'\n"
     "roles=['broker']\nbroker_id=-1\n", ":9: nodes[1].broker_id: expected an integer in [0, 2147483647], got -1"),
    ("[[nodes]]\nname='a'\naddress='127.0.0.2'\nroles=['broker']\n", ":1: nodes[0].broker_id: required"),
    ("nodes = " + "[" * 3000 + "]" * 3000 + "\n", ":1: invalid TOML: arrays or inline tables nested too deep"),
    ("nodes = [" + "{name='a'}," * 65 + "]\n", ":1: nodes: 65 nodes, over the limit of 64"),
    ("[agents.toggles]\nregistration = 'nope'\n", "agents.toggles.registration"),
    ("colour = 'blue'\n[[nodes]]\nname='a'\naddress='127.0.0.2'\nroles=['zookeeper']\n", "colour: unknown key"),
    ("[ssh]\nhost_keys = 'accept-all'\n", "ssh.host_keys: must be 'verify' (the default) or 'trust_on_first_use'"),
    ("[ssh]\nstrict_host_keys = false\n", "ssh.strict_host_keys: no longer read: host keys are always verified"),
])
def test_inventory_errors_name_the_file_and_the_line_or_key(tmp_path, text, expected):
    p = tmp_path / "inv.toml"
    p.write_text(text)
    with pytest.raises(InventoryError) as e:
        load_inventory(p)
    assert str(e.value).startswith(str(p))
    assert expected in str(e.value)


def test_bad_inventory_exits_254(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text("[[nodes]\n")
    assert main(["run", "--inventory", str(p)]) == 254
    assert f"{p}:1" in capsys.readouterr().err


def test_bad_flag_exits_254():
    with pytest.raises(SystemExit) as e:
        main(["run", "--time-limit", "soon"])
    assert e.value.code == 254


def test_toggle_args_are_validated():
    assert parse_toggle_args(["reregister_on_expiry=false", "registration=pre_2_2"]) == {
        "reregister_on_expiry": False, "registration": "pre_2_2"}
    with pytest.raises(ConfigError, match="registration"):
        parse_toggle_args(["registration=4x"])
    with pytest.raises(ConfigError, match="NAME=VALUE"):
        parse_toggle_args(["registration"])
    assert Toggles().registration == "3x"


@pytest.mark.parametrize("mode, owner, current, recorded, expected", [
    ("3x", 5, 5, NO_SESSION, AfterNodeExists.SUCCESS),            # our own resent multi
    ("3x", 4, 5, 4, AfterNodeExists.DELETE_AND_RETRY),            # KAFKA-7165: O == R, C != R
    ("3x", 3, 5, 4, AfterNodeExists.FAIL),                        # KAFKA-14845: O not in {C, R}
    ("3x", 4, 5, NO_SESSION, AfterNodeExists.FAIL),               # fast restart finds the old znode
    ("pre_2_2", 4, 5, 4, AfterNodeExists.FAIL),                   # KAFKA-6584: 2.1 fails on O != C
    ("pre_2_2", 5, 5, 4, AfterNodeExists.SUCCESS),
    ("retry14845", 4, 5, 4, AfterNodeExists.DELETE_AND_RETRY),
])
def test_checked_ephemeral_decision(mode, owner, current, recorded, expected):
    assert after_node_exists(mode, owner, current, recorded) is expected


def test_event_writer_continues_numbering_after_restart_and_reader_skips_torn_tail(tmp_path):
    path = tmp_path / "ev.jsonl"
    with EventWriter(path, "agent:1") as w:
        w.emit("a")
        w.emit("b", type="ok", x=1)
    with EventWriter(path, "agent:1") as w:
        assert w.emit("c").seq == 3
    with open(path, "a") as fh:
        fh.write('{"src": "agent:1", "se')  # a crash mid-line
    events = list(read_events(path))
    assert [e.seq for e in events] == [1, 2, 3] and events[1].value == {"x": 1}
    assert events[1].id == "agent:1/2"


def test_reader_rejects_a_bad_line_in_the_middle_with_file_and_line(tmp_path):
    path = tmp_path / "ev.jsonl"
    path.write_text('{"src":"a","seq":1,"t_wall":1,"type":"event","f":"x"}\nnot json\n'
                    '{"src":"a","seq":2,"t_wall":2,"type":"event","f":"x"}\n')
    with pytest.raises(HistoryFormatError, match=f"{path}:2"):
        list(read_events(path))


def test_merge_orders_by_time_but_never_reorders_one_source(tmp_path):
    from history import Event

    def ev(src, seq, t):
        return Event("r", src, seq, t, 0, "event", "x")

    a = [ev("a", 1, 1.0), ev("a", 2, 0.5), ev("a", 3, 3.0)]  # a's clock stepped back
    b = [ev("b", 1, 0.7), ev("b", 2, 2.0)]
    merged = merge([a, b])
    assert [e.id for e in merged if e.src == "a"] == ["a/1", "a/2", "a/3"]
    assert [e.id for e in merged] == ["b/1", "a/1", "a/2", "b/2", "a/3"]


def test_zookeeper_config_for_an_ensemble():
    members = [ZkMember(i, f"zk{i}", f"127.0.0.1{i}", 2180 + i, 2880 + i, 3880 + i, f"/w/zk{i}") for i in (1, 2, 3)]
    cfg = render_config(members[1], members, ZkSettings(tick_time_ms=200, max_session_timeout_ms=8000))
    lines = cfg.splitlines()
    assert "tickTime=200" in lines and "maxSessionTimeout=8000" in lines
    assert "clientPortAddress=127.0.0.12" in lines and "clientPort=2182" in lines
    assert "server.3=127.0.0.13:2883:3883" in lines and "4lw.commands.whitelist=*" in lines
    assert "admin.enableServer=false" in lines


def test_four_letter_word_parsers():
    assert parse_mode("Zookeeper version: 3.8.0\nMode: follower\nNode count: 5\n") == "follower"
    assert parse_mode("") is None
    dump = ("SessionTracker dump:\nSession Sets (2)/(1):\n...\nephemeral nodes dump:\n"
            "Sessions with Ephemerals (2):\n0x100000abc:\n\t/brokers/ids/1\n0x200000def:\n\t/controller\n"
            "\t/brokers/ids/2\nConnections dump:\n")
    assert parse_dump_sessions(dump) == {0x100000ABC: ["/brokers/ids/1"], 0x200000DEF: ["/controller", "/brokers/ids/2"]}


def test_default_inventory_path_exists():
    assert DEFAULT_INVENTORY.exists()
    json.dumps(str(DEFAULT_INVENTORY))
