"""The epoch-fencing invariants that are Spark plans (``checkers.plans``), numbered as in
docs/checking.md. Invariants 1 and 3 (registration epochs and liveness) are per-broker sweeps in
``checkers.registration``.
"""

from __future__ import annotations

from checkers.fencing.brokers import BOUNCE_HANDLING, SINGLE_REGISTRANT
from checkers.fencing.controller import (
    CONTROL_REQUEST_EPOCHS,
    CONTROLLED_SHUTDOWN_EPOCHS,
    CONTROLLER_EPOCHS,
    CONTROLLER_WRITE_FENCING,
    MAX_BROKER_EPOCH,
)
from checkers.fencing.partitions import ISR_EXPANSION, PARTITION_STATES
from checkers.plans import PlanChecker

PLANS: tuple[PlanChecker, ...] = (
    SINGLE_REGISTRANT,  # 2
    CONTROL_REQUEST_EPOCHS,  # 4
    CONTROLLER_EPOCHS,  # 5
    CONTROLLER_WRITE_FENCING,  # 6
    BOUNCE_HANDLING,  # 7
    CONTROLLED_SHUTDOWN_EPOCHS,  # 8
    ISR_EXPANSION,  # 9
    PARTITION_STATES,  # 10
    MAX_BROKER_EPOCH,  # 11
)
