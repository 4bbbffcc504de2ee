"""The base layer: what the control node, the nemeses and the checkers all stand on, and nothing
that decides a test.

Data path: an inventory (``base.inventory``, TOML read by ``base.tomlfile``) names the nodes;
``base.remote`` reaches them over SSH and ``base.components`` starts, stops and inspects the
processes on them (waiting with ``base.wait``, on ports from ``base.ports``, recorded in
``base.localstate`` for a later teardown); ``base.errors`` maps every failure onto Jepsen's exit
codes and ``base.parsing`` gives each command its parser. ``harness`` composes these into runs,
``nemesis`` breaks them, ``checkers`` judge the histories: all three import from here, and this
package imports none of them (``tests/unit/test_architecture.py`` holds the layers).

Only what the checkers import from here (``checkers.ship.SHIPPED``) goes to Spark executors.
"""
