import shutil

from agent.plog import PartitionLog


def test_append_read_truncate_reopen(tmp_path):
    changes = []
    log = PartitionLog(tmp_path, "t", 0, on_hw=lambda: changes.append(log.hw))
    assert [log.append(f"v{i}", 1) for i in range(4)] == [0, 1, 2, 3]
    log.set_hw(3)
    log.set_hw(3)  # unchanged: the owner is not told
    assert [r["value"] for r in log.read(1)] == ["v1", "v2", "v3"]
    assert log.truncate(2) == 2 and log.leo == 2 and log.hw == 2
    assert changes == [3, 2]
    log.append("x", 2)
    log.close()
    # the high watermark is not in the partition's directory: the owner's checkpoint hands it back
    again = PartitionLog(tmp_path, "t", 0, hw=2)
    assert [r["value"] for r in again.records] == ["v0", "v1", "x"] and again.hw == 2
    again.close()
    assert PartitionLog(tmp_path, "t", 0).hw == 0  # absent from the checkpoint: 0


def test_checkpointed_hw_is_capped_at_the_log_end(tmp_path):
    log = PartitionLog(tmp_path, "t", 3)
    log.append("a", 0)
    log.close()
    assert PartitionLog(tmp_path, "t", 3, hw=7).hw == 1


def test_torn_tail_and_follower_append(tmp_path):
    log = PartitionLog(tmp_path, "t", 1)
    log.append("a", 0)
    log.close()
    with open(log.path, "a") as fh:
        fh.write('{"offset":1,"val')
    log2 = PartitionLog(tmp_path, "t", 1)
    assert log2.leo == 1
    log2.append_records([{"offset": 1, "value": "b", "leader_epoch": 0}])
    assert log2.snapshot()["values"] == ["a", "b"]
    log2.close()


def test_wipe_loses_everything(tmp_path):
    log = PartitionLog(tmp_path, "t", 2)
    log.append("a", 0)
    log.set_hw(1)
    log.close()
    shutil.rmtree(tmp_path / "logs")
    fresh = PartitionLog(tmp_path, "t", 2, hw=1)
    assert fresh.leo == 0 and fresh.hw == 0
