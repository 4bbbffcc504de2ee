"""The protocol-neutral wire fault-injection proxy shared by the ZooKeeper and Kafka proxies.

Role in the data path: a proxy sits on a TCP link between a client and a server and acts on whole
protocol frames. What does not depend on the protocol lives here, once: the rule engine (match +
action + budget; ``rules``), the connection bookkeeping (``conn``), the asyncio proxy that decides,
logs and delivers every frame (``proxy``), the HTTP control API (``control``) and the harness-side
client and child process (``client``). ``nemesis.zkproxy`` and ``nemesis.kafkaproxy`` each add a
framing, a frame inspector, a match dialect and their ``frame`` event kind.
"""
