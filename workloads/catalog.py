"""What a workload module declares about itself for the command line: its own options and how to
build it from them (``WorkloadDef``). `harness run` builds its workload flags from these, so a new
workload is its module (with a ``DEFINITION``) and one line in ``workloads.DEFINITIONS``: no option
name is kept anywhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from workloads.base import Workload


@dataclass(frozen=True)
class Option:
    """One option of a workload: `harness run --NAME` (underscores as dashes), passed to its ``build``
    as the keyword ``name``. The flag is shared by every workload that declares the same name."""

    name: str
    default: Any
    help: str  # the flag's help, without the default (added)
    choices: tuple[Any, ...] | None = None
    type: Callable[[str], Any] = str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class WorkloadDef:
    """A workload as the command line offers it: ``build(concurrency, rate, **options)``."""

    name: str
    build: Callable[..., Workload]
    concurrency: int = 0  # client processes when --concurrency is not given (0: no clients)
    options: tuple[Option, ...] = ()

    def make(self, concurrency: int | None = None, rate: float | None = None,
             options: Mapping[str, Any] | None = None) -> Workload:
        """The workload with these flags; an option not given takes its default."""
        given = options or {}
        return self.build(concurrency or self.concurrency, rate,
                          **{o.name: given.get(o.name, o.default) for o in self.options})
