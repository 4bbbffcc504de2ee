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


RETRY14845_MAX_ATTEMPTS = 5  # PR #13558's CheckedEphemeral.maxAttempt: attempts in all, the first included


def retry_policy(mode: str, session_timeout_ms: int) -> tuple[int, float]:
    """(extra attempts after a NODEEXISTS failure, backoff seconds between them).

    ``retry14845`` is PR #13558 (KAFKA-14845, closed unmerged; no Kafka release carries it) as of
    its last commit: ``maxAttempt = 5`` create attempts in all, so at most 4 sleeps of
    ``(negotiated session timeout + 1000 ms) / maxAttempt`` each -- 0.8 x (T + 1 s) of waiting in
    all, which is *less* than T. Here the negotiated timeout is the configured one: the inventory
    refuses a session timeout outside the servers' [min, max]. Other modes: no retry.
    """
    if mode == "retry14845":
        return RETRY14845_MAX_ATTEMPTS - 1, (session_timeout_ms + 1000) / RETRY14845_MAX_ATTEMPTS / 1000.0
    return 0, 0.0
