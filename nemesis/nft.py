"""The harness's nftables table on a node, as shell commands: what ``net_partition`` writes and what
undoes it. Plain strings with no import of the project's, so the fault registry
(``nemesis.registry``) can name the crash heal without importing SSH or the firewall nemesis.
"""

from __future__ import annotations

import shlex

TABLE = "zkfence"


def as_root(command: str) -> str:
    """``command`` run as root: directly when the SSH user is root, else through password-less sudo
    (``harness doctor`` checks for one of the two)."""
    return f'if [ "$(id -u)" = 0 ]; then {command}; else sudo -n sh -c {shlex.quote(command)}; fi'


# Deleting the whole table removes the harness's rules and nothing else on the host.
HEAL_COMMAND = as_root(f"nft delete table inet {TABLE} 2>/dev/null; true")
