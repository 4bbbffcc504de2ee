"""The flags that put real Kafka brokers in a test (`repro --kafka VERSION`, `run --brokers
kafka:VERSION`) and their ZooKeeper client (`--zk-socket`, `--zk-hosts`), as ``KafkaBrokers``;
bad input is a ``UsageError`` naming the flag."""

from __future__ import annotations

import argparse

from base.bounds import MAX_NODES, bounded_int
from base.errors import UsageError
from harness.spec import ZK_SOCKETS, KafkaBrokers

# registration_liveness's margin with real brokers: a killed broker's JVM needs seconds to start
# and register again (7 s on a loaded 2-core machine), more than the agents' 3 s default
KAFKA_MARGIN_MS = 30000


def add_zk_client_args(p: argparse.ArgumentParser, needs: str) -> None:
    p.add_argument("--zk-socket", choices=tuple(ZK_SOCKETS), default=None,
                   help=f"with {needs}: the brokers' ZooKeeper client socket (the JVM's zookeeper.clientCnxnSocket; "
                        "default nio, Kafka's default)")
    p.add_argument("--zk-hosts", type=bounded_int(1, MAX_NODES), default=None, metavar="N",
                   help=f"with {needs}: servers in the brokers' zookeeper.connect (default: the whole ensemble)")


def kafka_target(value: str, flag: str) -> str:
    """The VERSION of a ``kafka:VERSION`` flag value (``--brokers``, ``--compare``)."""
    from base.components.kafka import release_of

    version = release_of(value)
    if version is None:
        raise UsageError(f"{flag}: expected kafka:VERSION (e.g. kafka:3.9.1), got {value!r}")
    return version


def kafka_brokers(version: str | None, flag: str, args: argparse.Namespace, ensemble: int | None = None,
                  default_socket: str = "nio") -> KafkaBrokers | None:
    """``KafkaBrokers`` for ``version`` given with ``flag`` (None: no real brokers, and then
    ``--zk-socket``/``--zk-hosts`` are errors). ``ensemble``: servers in the inventory."""
    from base.components.kafka import parse_version

    if version is None:
        for name, value in (("--zk-socket", args.zk_socket), ("--zk-hosts", args.zk_hosts)):
            if value is not None:
                raise UsageError(f"{name}: only with {flag} (the agents' socket is a toggle)")
        return None
    try:
        parse_version(version)
    except UsageError as e:
        raise UsageError(f"{flag}: {e}") from None
    if args.zk_hosts is not None and args.zk_hosts < 1:
        raise UsageError(f"--zk-hosts: must be >= 1, got {args.zk_hosts}")
    if args.zk_hosts is not None and ensemble is not None and args.zk_hosts > ensemble:
        raise UsageError(f"--zk-hosts: the inventory has {ensemble} ZooKeeper server(s), got {args.zk_hosts}")
    return KafkaBrokers(version, args.zk_socket or default_socket, args.zk_hosts)


def fetch(brokers: KafkaBrokers, flag: str) -> None:
    """Resolve the jars before anything starts: a version Maven cannot resolve is bad input."""
    from base.components.kafka import fetch_kafka

    try:
        fetch_kafka(brokers.version)
    except UsageError as e:
        raise UsageError(f"{flag}: {e}") from None
