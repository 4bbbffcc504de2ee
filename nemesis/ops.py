"""A fault operation as data: what every nemesis, schedule and search passes around."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class FaultOp:
    f: str  # fault name: "isolate", "partition", "kill", ...
    phase: str  # "start" | "stop"
    targets: list[str] = field(default_factory=list)  # node names (resolved from a target spec)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Completion:
    """How an op ended: ``ok`` (the nemesis did it) with what it reported (``detail``), or not
    (recorded as ``info``: the fault may have half happened). Truthy when ok."""

    op: FaultOp
    ok: bool
    detail: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.ok


class TargetError(ValueError):
    """A target that names nothing, or something outside the inventory."""
