"""The fault catalogue: every nemesis the harness runs with, and what each fault accepts.

The run engine (``harness.engine``) calls ``default_nemeses()``; the scripted-schedule parser
validates against ``FAULTS``. Faults of the ZooKeeper wire proxy are added when that proxy is in
the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nemesis.agent_hooks import AgentHookNemesis
from nemesis.base import Nemesis
from nemesis.firewall import FirewallNemesis
from nemesis.links import LinkNemesis
from nemesis.process import ProcessNemesis


@dataclass(frozen=True)
class FaultSpec:
    name: str
    kind: str  # "link" | "firewall" | "process" | "zkproxy" | "agent"
    instant: bool = False  # a single op (no stop phase)
    params: dict[str, type | tuple[type, ...]] = field(default_factory=dict)
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)
    help: str = ""


NUM = (int, float)
_LINK_KIND = {"kind": ("agent-zk", "agent-agent")}

FAULTS: dict[str, FaultSpec] = {f.name: f for f in (
    FaultSpec("isolate", "link", params={"stream": str}, choices={"stream": ("both", "upstream", "downstream")},
              help="cut a broker from every ZooKeeper server"),
    FaultSpec("cut", "link", params={"links": list, "stream": str},
              choices={"stream": ("both", "upstream", "downstream")},
              help="cut the named links (b2->zk1, b1->b3); an isolate's stop leaves them cut (a partial heal)"),
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
    FaultSpec("net_partition", "firewall", params={"grudge": str, "direction": str},
              choices={"grudge": ("isolate", "halves", "bridge", "majorities-ring"),
                       "direction": ("both", "one-way")},
              help="a grudge enforced with nftables on the nodes themselves (ZooKeeper quorum links); "
                   "external inventories only"),
    FaultSpec("kill", "process", help="SIGKILL; stop restarts"),
    FaultSpec("pause", "process", help="SIGSTOP; stop sends SIGCONT"),
    FaultSpec("shutdown", "process", help="SIGTERM (clean); stop restarts"),
    FaultSpec("bounce", "process", instant=True, help="SIGTERM and start again"),
    FaultSpec("fast_bounce", "process", instant=True, help="SIGKILL and start again"),
    FaultSpec("wipe", "process", instant=True,
              help="SIGKILL, delete the data (a broker's replica logs by default; a ZooKeeper server's "
                   "snapshots when targeted), start"),
    FaultSpec("hold_controller", "agent", help="the target controller's event thread holds its events; stop releases"),
    FaultSpec("hold_alter_partition", "agent",
              help="the target partition leader holds its AlterPartition requests; stop releases them"),
    FaultSpec("delay_request", "agent", params={"kind": str, "to": str, "topic": str, "partition": int},
              help="the target controller builds a control request for broker `to` and holds it; stop delivers it"),
    FaultSpec("zk_rules", "zkproxy", params={"rules": list},
              help="install ZooKeeper wire-proxy rules (docs/zkproxy.md) for connections to the target "
                   "ZooKeeper nodes; needs `harness run --zkproxy`"),
)}
COMMON_PARAMS: dict[str, type | tuple[type, ...]] = {"seed": int}


def default_nemeses() -> list[Nemesis]:
    return [LinkNemesis(), FirewallNemesis(), ProcessNemesis(), AgentHookNemesis()]
