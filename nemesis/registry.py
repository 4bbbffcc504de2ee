"""The fault catalogue: every nemesis the harness runs with, and what each fault accepts.

``harness.run`` calls ``default_nemeses()``; the scripted-schedule parser validates against
``FAULTS``. Faults of the ZooKeeper wire proxy are added when that proxy is in the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nemesis.base import Nemesis
from nemesis.links import LinkNemesis
from nemesis.process import ProcessNemesis


@dataclass(frozen=True)
class FaultSpec:
    name: str
    kind: str  # "link" | "process" | "zkproxy"
    instant: bool = False  # a single op (no stop phase)
    params: dict[str, type | tuple[type, ...]] = field(default_factory=dict)
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)
    help: str = ""


NUM = (int, float)
_LINK_KIND = {"kind": ("agent-zk", "agent-agent")}

FAULTS: dict[str, FaultSpec] = {f.name: f for f in (
    FaultSpec("isolate", "link", params={"stream": str}, choices={"stream": ("both", "upstream", "downstream")},
              help="cut a broker from every ZooKeeper server"),
    FaultSpec("partition", "link", params={"grudge": str, "direction": str},
              choices={"grudge": ("isolate", "halves", "bridge", "majorities-ring"),
                       "direction": ("both", "one-way")},
              help="a grudge over the link graph"),
    FaultSpec("latency", "link", params={"latency_ms": NUM, "jitter_ms": NUM, "kind": str}, choices=_LINK_KIND,
              help="delay every byte on links touching the targets"),
    FaultSpec("bandwidth", "link", params={"rate_kb": NUM, "kind": str}, choices=_LINK_KIND,
              help="limit links touching the targets to rate_kb KB/s"),
    FaultSpec("reset_peer", "link", params={"timeout_ms": NUM, "kind": str}, choices=_LINK_KIND,
              help="TCP RST on connections through links touching the targets"),
    FaultSpec("slow_close", "link", params={"delay_ms": NUM, "kind": str}, choices=_LINK_KIND,
              help="delay closing connections"),
    FaultSpec("kill", "process", help="SIGKILL; stop restarts"),
    FaultSpec("pause", "process", help="SIGSTOP; stop sends SIGCONT"),
    FaultSpec("shutdown", "process", help="SIGTERM (clean); stop restarts"),
    FaultSpec("bounce", "process", instant=True, help="SIGTERM and start again"),
    FaultSpec("fast_bounce", "process", instant=True, help="SIGKILL and start again"),
    FaultSpec("wipe", "process", instant=True, help="brokers: SIGKILL, empty the data dir, start"),
    FaultSpec("zk_rules", "zkproxy", params={"rules": list},
              help="install ZooKeeper wire-proxy rules (docs/zkproxy.md) for connections to the target "
                   "ZooKeeper nodes; needs `harness run --zkproxy`"),
)}
COMMON_PARAMS: dict[str, type | tuple[type, ...]] = {"seed": int}


def default_nemeses() -> list[Nemesis]:
    return [LinkNemesis(), ProcessNemesis()]
