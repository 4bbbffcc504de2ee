"""The control node: everything that drives a test, none of what is tested.

Data path: ``inventory`` → components started over SSH (``base.components``, composed by
``harness.cluster``) → the run engine (``harness.engine``) plays the workload's clients
(``workloads``) and the nemesis schedule (``nemesis``) → every source's events (``history``) merged
into one history → checkers on Spark (``checkers``) → ``store/<test>/<time>/`` (``harness.store``).
A test is data (``harness.spec.TestSpec``); ``harness.commands`` turns command lines into tests.
The pieces every layer stands on (errors, SSH, inventory, components, local state) are in ``base``.

The system under test is not here: the broker agent (``agent/``), the ZooKeeper wire codec
(``zkwire/``) and the event record (``history/``) are shipped to broker nodes as they are.
"""
