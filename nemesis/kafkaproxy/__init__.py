"""Kafka wire fault-injection proxy (docs/kafkaproxy.md): a nemesis on the brokers' inter-broker links.

Role in the data path: each broker's inter-broker listener is advertised at one of its listeners,
so the controller's LeaderAndIsr/UpdateMetadata/StopReplica, ControlledShutdown, AlterPartition and
every replica fetch pass it. It drops, delays, holds (and releases later), duplicates, black-holes
and closes by API, version, broker, controller and partition, and writes one ``kafka_frame`` event
per request and response with the epochs, leaders, ISRs and error codes it carries. Built on the
shared ``nemesis.wireproxy`` (rule engine, delivery, control API, client): this package adds the
codec (``codec``, on ``kio``), the match keys (``rules``), the proxy (``proxy``), the process
entry (``__main__``) and the harness side (``client``).
"""

from nemesis.kafkaproxy.client import KafkaProxyClient, KafkaProxyError, KafkaProxyProcess
from nemesis.kafkaproxy.proxy import KafkaProxy
from nemesis.kafkaproxy.rules import load_rules_file, parse_rule, parse_rules
from nemesis.wireproxy.proxy import ListenerSpec

__all__ = [
    "KafkaProxy",
    "KafkaProxyClient",
    "KafkaProxyError",
    "KafkaProxyProcess",
    "ListenerSpec",
    "load_rules_file",
    "parse_rule",
    "parse_rules",
]
