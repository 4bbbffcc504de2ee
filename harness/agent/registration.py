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
