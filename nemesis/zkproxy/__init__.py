"""ZooKeeper wire fault-injection proxy (zk-wire.md section 8; docs/zkproxy.md).

``ZkProxy`` (asyncio, in-process), ``python -m nemesis.zkproxy`` (process + HTTP control API),
``ZkProxyClient``/``ProxyProcess`` (harness side), rules in ``nemesis.zkproxy.rules``.
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
