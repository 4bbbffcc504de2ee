"""The control node: CLI, inventory, SSH remote, component lifecycles, runs, history and store.

Data path: inventory → cluster (ZooKeeper, agents, Toxiproxy, wire proxy over SSH) → events
from every source → merged history → checkers on Spark → ``store/<test>/<time>/``.
The ZooKeeper wire codec (``harness.zkwire``) lives here once and is shared by the agent's
pipelining session and the nemesis wire proxy.
"""
