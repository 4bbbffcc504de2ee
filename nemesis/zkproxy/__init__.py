"""ZooKeeper wire fault-injection proxy (docs/zkproxy.md): a nemesis on the control node.

Role in the data path: it sits on the agent -> ZooKeeper links and injects faults no TCP proxy can,
at ZooKeeper frame granularity (drop a ConnectResponse, hold a registration multi), writing one
``frame`` event per frame into the history. ``ZkProxy`` (asyncio, in-process; ``proxy``), per-
connection state (``conn``), what a frame's copy says (``inspector``), rules (``rules``), the HTTP
control API (``control``), ``python -m nemesis.zkproxy`` (``__main__``) and the harness side
``ZkProxyClient``/``ProxyProcess`` (``client``). It parses frames with ``zkwire``. The rule engine,
the delivery machinery, the control API and the client are shared with the Kafka proxy
(``nemesis.wireproxy``); the modules here add ZooKeeper's framing, inspection and match keys.
"""

from nemesis.zkproxy.client import ProxyProcess, ZkProxyClient, ZkProxyError
from nemesis.zkproxy.proxy import ListenerSpec, ZkProxy
from nemesis.zkproxy.rules import RuleError, load_rules_file, parse_rule, parse_rules

__all__ = [
    "ListenerSpec",
    "ProxyProcess",
    "RuleError",
    "ZkProxy",
    "ZkProxyClient",
    "ZkProxyError",
    "load_rules_file",
    "parse_rule",
    "parse_rules",
]
