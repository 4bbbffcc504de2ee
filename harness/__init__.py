"""The control node: CLI, inventory, SSH remote, component lifecycles, runs, history and store.

Data path: inventory → cluster (ZooKeeper, agents, Toxiproxy, wire proxy over SSH) → events
from every source → merged history → checkers on Spark → ``store/<test>/<time>/``.
The system under test is not here: the broker agent (``agent/``), the ZooKeeper wire codec
(``zkwire/``) and the event record (``history/``) are shipped to broker nodes as they are.
"""
