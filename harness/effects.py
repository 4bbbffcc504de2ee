"""The engine's effects on the world, behind one small seam so the engine is unit-tested with fakes:
starting a cluster, the observer, the nemeses, a per-run wire proxy, and the checkers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from base.inventory import Inventory
from harness.spec import TestSpec
from history import EventWriter


@dataclass
class Effects:
    """What the engine does to the world; unit tests pass fakes."""

    cluster: Callable[[Inventory, Path, str, Callable[[str], None]], Any]
    observer: Callable[[Any, list[int], EventWriter], Any]
    nemeses: Callable[[Any, TestSpec, Any], list[Any]]  # (cluster, spec, per-run wire proxy or None)
    wire_proxy: Callable[..., Any]  # (cluster, events, run_id, *, max_frame=None) -> ProxyProcess
    check: Callable[[Any, str, TestSpec], dict[str, Any]]  # (engine, history path, spec) → result
    prepare_check: Callable[[Any, TestSpec], None] = lambda engine, spec: None  # noqa: E731 - (engine, spec)

    @staticmethod
    def real() -> Effects:
        return Effects(_real_cluster, _real_observer, _real_nemeses, _real_wire_proxy, _real_check,
                       _warm_spark_unless_local)


def _real_cluster(inv: Inventory, scratch: Path, run_id: str, log: Callable[[str], None]) -> Any:
    from harness.cluster import Cluster

    return Cluster(inv, scratch, run_id, log=log)


def _real_observer(cluster: Any, brokers: list[int], events: EventWriter) -> Any:
    from harness.observer import BrokerObserver

    return BrokerObserver(cluster.ensemble.connect_string, brokers, events)


def _real_wire_proxy(cluster: Any, events: Path, run_id: str, *, max_frame: int | None = None) -> Any:
    from nemesis.zkproxy import ProxyProcess

    proxy = ProxyProcess([m.client_address for m in cluster.ensemble.members], events,
                         Path(cluster.scratch) / f"zkproxy-{run_id}", listen_host=cluster.inv.toxiproxy.host,
                         run=run_id, max_frame=max_frame)
    proxy.start()
    return proxy


def _real_nemeses(cluster: Any, spec: TestSpec, proxy: Any = None) -> list[Any]:
    from nemesis.nemeses import default_nemeses as catalogue

    nemeses = catalogue()
    wire = proxy if proxy is not None else getattr(cluster, "zkproxy", None)
    if wire is not None:
        from nemesis.zkproxy_faults import ZkProxyNemesis

        nemeses.append(ZkProxyNemesis(wire.client))
    if spec.kafkaproxy:  # the proxy starts with the brokers, after the nemeses' setup: found when an op runs
        from nemesis.kafkaproxy_faults import KafkaProxyNemesis

        nemeses.append(KafkaProxyNemesis(lambda: cluster.kafkaproxy.client if cluster.kafkaproxy else None))
    return nemeses


def check_server_for(engine: Any, spec: TestSpec) -> Any:
    """The running check server (``harness check-server``) that takes this run's check, as ``harness
    check`` hands it one: same Spark master, a check on Spark, and no session of the engine's own yet
    (a warm one is as quick). None: the check runs in this process."""
    if not engine.use_check_server or spec.local_check or engine.spark_started:
        return None
    from harness import checkserver

    return checkserver.serving(engine.spark_master)


def _warm_spark_unless_local(engine: Any, spec: TestSpec) -> None:
    if not spec.local_check and check_server_for(engine, spec) is None:
        engine.warm_spark()  # the JVM starts while the cluster comes up


def _real_check(engine: Any, history: str, spec: TestSpec) -> dict[str, Any]:
    from checkers.project import check_histories

    names = spec.checkers
    server = check_server_for(engine, spec)
    if server is not None:
        from harness.checkserver import check_remote

        engine.say(f"[bold]check[/] on the check server (pid {server.pid}, {server.master})")
        try:
            with engine.console.status(f"check on the check server: {', '.join(names) if names else 'every checker'}"):
                return check_remote(server, [history], spec.margin_ms, names=names, skip_damaged=True)[history]
        except (OSError, EOFError, RuntimeError) as e:  # the server died or broke: the check is still owed
            engine.say(f"  [yellow]check server pid {server.pid}[/]: {e}; checking in this process")
    where = "locally" if spec.local_check else f"on Spark ({engine.spark_master or 'local[*]'})"
    with engine.console.status(f"check {where}: {', '.join(names) if names else 'every checker'}"):
        # A damaged line (a writer's bug) is left out and counted, never read as data: the run keeps
        # its history and a verdict that says so (valid becomes unknown), where refusing it would
        # leave the run with none.
        return check_histories([history], spark=engine.spark, names=names, margin_ms=spec.margin_ms,
                               local=spec.local_check, skip_damaged=True)[history]
