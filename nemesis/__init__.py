"""Faults: the ZooKeeper wire proxy, Toxiproxy link faults, nftables partitions on the nodes
themselves, process faults and schedules.

Every fault start and stop is an event (``src = "nemesis"``); heal runs at setup, after every
schedule and in ``finally``.
"""
