import pytest

from agent.registration import NO_SESSION, AfterNodeExists, after_node_exists, retry_policy

S1, S2, S3 = 0x100000001, 0x200000002, 0x300000003


@pytest.mark.parametrize(
    "mode,owner,current,recorded,expected",
    [
        ("3x", S1, S1, S1, AfterNodeExists.SUCCESS),  # resent multi already applied
        ("3x", S1, S2, S1, AfterNodeExists.DELETE_AND_RETRY),  # KAFKA-7165 / KAFKA-6584 fixed
        ("3x", S2, S3, S1, AfterNodeExists.FAIL),  # KAFKA-14845: owner neither C nor R
        ("3x", S1, S2, NO_SESSION, AfterNodeExists.FAIL),  # fast restart finds the old znode
        ("pre_2_2", S1, S2, S1, AfterNodeExists.FAIL),  # KAFKA-6584 before 2.2
        ("pre_2_2", S2, S2, S1, AfterNodeExists.SUCCESS),
        ("retry14845", S1, S2, S1, AfterNodeExists.DELETE_AND_RETRY),
        ("retry14845", S2, S3, S1, AfterNodeExists.FAIL),  # the failure is retried by the caller
    ],
)
def test_after_node_exists(mode, owner, current, recorded, expected):
    assert after_node_exists(mode, owner, current, recorded) is expected


def test_retry_policy():
    assert retry_policy("3x", 18000) == (0, 0.0)
    assert retry_policy("pre_2_2", 18000) == (0, 0.0)
    extra, backoff = retry_policy("retry14845", 18000)
    # PR #13558: maxAttempt = 5 attempts in all, backoff (T + 1 s) / maxAttempt.
    assert extra == 4 and backoff == pytest.approx(3.8)
    # Its waiting, 4 x 3.8 s = 15.2 s, is shorter than T itself: the PR's fix only works when the
    # first NODEEXISTS comes late enough in the orphan session's life (docs/repro.md).
    assert extra * backoff * 1000 < 18000
