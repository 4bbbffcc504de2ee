"""The broker agent: the system under test, shipped to broker nodes and started over SSH as
``python -m agent --config FILE``.

Role in the data path: a component. It behaves like a Kafka broker in ZooKeeper mode: registers
``/brokers/ids/N`` with a multi(create ephemeral + setData) and takes the czxid as its broker epoch
(KIP-380: Detect outdated control requests and bounced brokers using broker generation), runs the
controller and the replicas, and writes every step as JSONL events (docs/events.md) that the
harness downloads at the end. Each historic bug is a named toggle (``agent.config.Toggles``).

The bundle copied to a node is this package, ``zkwire`` and ``history``; it imports nothing from
the control node (``harness``, ``nemesis``, ``workloads``, ``checkers``, ``scenarios``).

Public interface: the control node may import only
- ``agent.config``: the config file schema, the toggles and the command line;
- ``agent.client``: the agent's wire protocol client (``AgentAdmin``, ``KafkaClient``, ``append``);
- ``agent.znodes``: Kafka's ZooKeeper data layout (paths, payloads, ``create_topic``).
Everything else is internal; tests/unit/test_agent_bundle.py holds both rules.

"K37" in the comments means Apache Kafka 3.7.0's source (github.com/apache/kafka, tag 3.7.0);
e.g. K37 ``KafkaController`` is ``core/src/main/scala/kafka/controller/KafkaController.scala``.
"""
