"""The broker agent: the system under test, deployed to broker nodes and started over SSH.

It behaves like a Kafka broker in ZooKeeper mode: registers ``/brokers/ids/N`` with a
multi(create ephemeral + setData) and takes the czxid as its broker epoch (KIP-380), and writes
every step as JSONL events (docs/events.md) that the harness downloads at the end. Each
historic bug is a named toggle (``agent.config.Toggles``).
"""
