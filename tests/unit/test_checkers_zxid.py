from __future__ import annotations

from checkers.zxid import ZOp, realtime, replay


def test_realtime_order_must_fit_z() -> None:
    w1 = ZOp("w1", "k", 0.0, 1.0, 10, True, "a")
    ok = ZOp("w2", "k", 2.0, 3.0, 11, True, "b")
    late_low = ZOp("w3", "k", 2.0, 3.0, 9, True, "c")  # invoked after w1 responded, yet ordered before it
    same_read = ZOp("r", "k", 2.0, 3.0, 10, False, "a")  # a read may share the z it saw
    assert realtime([w1, ok, same_read], skew=0) == []
    bad = realtime([w1, late_low], skew=0)
    assert len(bad) == 1 and bad[0]["event_ids"] == ["w3", "w1"]
    assert realtime([w1, ZOp("w4", "k", 1.05, 2, 9, True)], skew=0.1) == []  # within clock skew
    assert realtime([w1, ZOp("u", "k", 2.0, None, 5, True, known=False)], skew=0) == []  # unknown op


def test_replay_per_key() -> None:
    ops = [ZOp("w1", "k", None, 1, 10, True, "a"), ZOp("w2", "k", None, 2, 20, True, "b"),
           ZOp("r1", "k", None, 3, 15, False, "a"), ZOp("r2", "k", None, 3, 25, False, "b")]
    assert replay(ops) == []
    bad = replay([*ops, ZOp("r3", "k", None, 4, 21, False, "a")])
    assert len(bad) == 1 and bad[0]["event_ids"] == ["r3", "w2"]
