"""Kafka's CheckedEphemeral decision after NODEEXISTS, as pure logic (K37 KafkaZkClient).

O = ephemeralOwner of the existing znode, C = the client's current session, R = the session
recorded at the last successful create (-1 before the first).
"""

from __future__ import annotations

from enum import Enum


class AfterNodeExists(Enum):
    SUCCESS = "success"  # O == C: our own earlier (resent) multi created it
    DELETE_AND_RETRY = "delete_and_retry"  # KAFKA-7165 workaround: O == R and C != R
    FAIL = "fail"  # owner matches neither: Kafka throws NodeExists


NO_SESSION = -1


def after_node_exists(mode: str, owner: int, current: int, recorded: int) -> AfterNodeExists:
    if owner == current:
        return AfterNodeExists.SUCCESS
    if mode == "pre_2_2":
        return AfterNodeExists.FAIL  # 2.1.0: fail iff O != C
    if owner == recorded and current != recorded:
        return AfterNodeExists.DELETE_AND_RETRY
    return AfterNodeExists.FAIL


RETRY14845_ATTEMPTS = 5


def retry_policy(mode: str, session_timeout_ms: int) -> tuple[int, float]:
    """(extra attempts after a NODEEXISTS failure, backoff seconds between them).

    ``retry14845`` is PR #13558 (KAFKA-14845, closed unmerged): up to 5 retries with a backoff of
    (T + 1000 ms) / 5, so the orphan session's znode has expired by the last one. Other modes: none.
    """
    if mode == "retry14845":
        return RETRY14845_ATTEMPTS, (session_timeout_ms + 1000) / 5 / 1000.0
    return 0, 0.0
