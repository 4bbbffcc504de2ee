"""The nemeses a run starts with: one per fault kind of ``nemesis.registry`` (the wire proxy's,
``zkproxy``, is added by the run when that proxy is in it: it needs the proxy's control client).

Apart from the registry so that the registry stays pure data every nemesis can import.
"""

from __future__ import annotations

from nemesis.agent_hooks import AgentHookNemesis
from nemesis.base import Nemesis
from nemesis.firewall import FirewallNemesis
from nemesis.links import LinkNemesis
from nemesis.process import ProcessNemesis


def default_nemeses() -> list[Nemesis]:
    return [LinkNemesis(), FirewallNemesis(), ProcessNemesis(), AgentHookNemesis()]
