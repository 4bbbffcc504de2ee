import json

from agent import znodes as zn


def test_broker_payload_v5():
    d = json.loads(zn.broker_payload("10.0.0.1", 9092))
    assert d["version"] == 5 and d["host"] == "10.0.0.1" and d["port"] == 9092
    assert d["endpoints"] == ["PLAINTEXT://10.0.0.1:9092"]
    assert isinstance(d["timestamp"], str) and d["jmx_port"] == -1
    assert "epoch" not in d  # the broker epoch is the czxid, never in the JSON


def test_controller_payloads():
    d = json.loads(zn.controller_payload(3))
    assert d == {"version": 2, "brokerid": 3, "timestamp": d["timestamp"], "kraftControllerEpoch": -1}
    assert zn.parse_controller_id(zn.controller_payload(3)) == 3
    assert zn.parse_controller_id(b'{"version":1,"brokerid":2,"timestamp":"1"}') == 2
    assert zn.parse_controller_id(b"garbage") is None
    assert zn.controller_epoch_payload(7) == b"7"
    assert zn.parse_controller_epoch(b"7") == 7


def test_topic_and_partition_state():
    d = json.loads(zn.topic_payload({0: [1, 2], 1: [2, 3]}, topic_id="abc"))
    assert d["version"] == 3 and d["partitions"] == {"0": [1, 2], "1": [2, 3]} and d["topic_id"] == "abc"
    assert zn.parse_topic_assignment(zn.topic_payload({0: [1, 2]})) == {0: [1, 2]}
    st = zn.PartitionState(1, 4, (1, 2), 3, zk_version=9)
    payload = json.loads(st.payload())
    assert payload == {"version": 1, "leader": 1, "leader_epoch": 4, "controller_epoch": 3, "isr": [1, 2]}
    assert zn.PartitionState.parse(st.payload(), 9) == st
    assert zn.PartitionState.from_dict(st.to_dict()) == st
    bumped = st.new_leader_and_isr(2, [2], 5)
    assert (bumped.leader, bumped.leader_epoch, bumped.isr, bumped.controller_epoch) == (2, 5, (2,), 5)
    assert zn.partition_state_path("t", 0) == "/brokers/topics/t/partitions/0/state"
