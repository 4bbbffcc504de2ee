"""Cluster: everything one run starts, and the guarantee that all of it is stopped.

    with Cluster(inventory, scratch_dir, run_id) as cluster:   # teardown in __exit__, always
        cluster.start()                       # sshd (embedded) → SSH remotes → ZooKeeper quorum
                                              # → Toxiproxy server + one proxy per link
        cluster.start_agents(toggles={...})   # agents over SSH, every connection through a proxy
        cluster.agent(1).bounce()             # stop/kill/pause/resume/bounce/wipe a broker
        cluster.links.cut(cluster.links.links_between(src="b1", kind="agent-zk"))
        cluster.links.heal()
        cluster.zk()                          # a direct kazoo client (never faulted)
        cluster.zkproxy                       # with start(zkproxy_events=...): the ZooKeeper wire
                                              # proxy, in the path agent → Toxiproxy → proxy → ZK
        cluster.collect(run_dir)              # agents' events and logs, ZooKeeper logs

Links: ``b<N>->zk<M>`` (agent N's connection to ZooKeeper server M), ``b<N>->b<M>`` (agent N
dialling agent M's control-plane port) and ``client->zk<M>`` (the register workload's clients on
the control node). Every started thing is recorded in a state file under
``.local/state`` as it starts, so `harness teardown` can clean up after a crash.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from agent.client import use_token
from agent.config import AgentConfig, Toggles
from base import hostkeys
from base.components import Component, ProcState
from base.components.agent import AgentProcess, build_agent_bundle
from base.components.sshd import EmbeddedSshd
from base.components.toxiproxy import Link, LinkNet, ToxiproxyServer
from base.components.zookeeper import Ensemble, ZkMember, ZkSettings, ZooKeeperNode
from base.inventory import Inventory, NodeSpec
from base.localstate import STATE_DIR, process_start_time
from base.remote import Remote, RemoteError, SSHRemote, on_nodes
from base.wait import wait_until
from harness.provision import pydeps_dir, zk_classpath
from harness.spec import KafkaBrokers
from nemesis.targets import CLIENT_NODE

REPO_ROOT = Path(__file__).resolve().parent.parent


def state_path(run_id: str) -> Path:
    return STATE_DIR / f"{run_id}.json"


@dataclass
class RunState:
    """What a run has started, written as it goes: the input of `harness teardown`."""

    run_id: str
    inventory: str
    embedded: bool
    scratch: str
    local_pids: list[int] = field(default_factory=list)
    node_pidfiles: dict[str, list[str]] = field(default_factory=dict)
    node_workdirs: dict[str, str] = field(default_factory=dict)
    # Where the current run's history goes, and each agent's event file on its node
    # (node → [remote path, local file name]): `harness teardown` salvages them after a crash.
    run_dir: str | None = None
    agent_events: dict[str, list[str]] = field(default_factory=dict)
    # A real Kafka broker writes a log, not events (node → [broker id, session timeout ms, its log
    # paths oldest first]): `harness teardown` parses them into the broker's events (base.kafkalog).
    kafka_logs: dict[str, list[Any]] = field(default_factory=dict)
    # The control-node process that owns the run: `harness teardown` leaves live runs alone.
    owner_pid: int = field(default_factory=os.getpid)
    owner_start: int | None = field(default_factory=lambda: process_start_time(os.getpid()))
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def save(self) -> None:
        with self._lock:
            STATE_DIR.mkdir(parents=True, exist_ok=True)
            data = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
            tmp = state_path(self.run_id).with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1))
            tmp.replace(state_path(self.run_id))

    def add_pidfile(self, node: str, pidfile: str) -> None:
        with self._lock:  # agents start in parallel threads
            self.node_pidfiles.setdefault(node, [])
            if pidfile not in self.node_pidfiles[node]:
                self.node_pidfiles[node].append(pidfile)
            self.save()

    def add_agent_events(self, node: str, remote_path: str, local_name: str) -> None:
        with self._lock:
            self.agent_events[node] = [remote_path, local_name]
            self.save()

    def add_kafka_log(self, node: str, broker_id: int, session_timeout_ms: int, log_paths: list[str]) -> None:
        with self._lock:
            self.kafka_logs[node] = [broker_id, session_timeout_ms, log_paths]
            self.save()

    def remove(self) -> None:
        state_path(self.run_id).unlink(missing_ok=True)


def free_ports_on(remote: Remote, address: str, count: int, python: str = "python3") -> list[int]:
    """Ask the node itself for ``count`` ports free on ``address`` (bound at once, so distinct)."""
    script = (
        "import socket,sys\n"
        f"ss=[socket.socket() for _ in range({count})]\n"
        f"[s.bind(({address!r},0)) for s in ss]\n"
        "print(' '.join(str(s.getsockname()[1]) for s in ss))\n"
    )
    res = remote.run(f"{shlex.quote(python)} -c {shlex.quote(script)}", timeout=20, check=True)
    return [int(x) for x in res.stdout.split()]


class Cluster:
    def __init__(self, inventory: Inventory, scratch: Path, run_id: str, log: Callable[[str], None] | None = None):
        self.inv = inventory
        self.scratch = Path(scratch)
        self.run_id = run_id
        self.log = log or (lambda msg: None)
        self.state = RunState(run_id=run_id, inventory=str(inventory.path), embedded=inventory.embedded,
                              scratch=str(self.scratch))
        self.sshd: EmbeddedSshd | None = None
        self.remotes: dict[str, Remote] = {}
        self.ensemble: Ensemble | None = None
        self.toxiproxy: ToxiproxyServer | None = None
        self.links: LinkNet | None = None  # type: ignore[assignment]
        # the started brokers: Python agents (AgentProcess), or real Kafka brokers (KafkaBroker, which
        # offers the same events/collect_events/wait_for from its parsed log)
        self.agents: dict[int, Any] = {}
        self.agent_ports: dict[int, int] = {}
        self._zk_clients: list[KazooClient] = []
        self.zkproxy: Any = None  # nemesis.zkproxy.ProxyProcess when the run routes through it
        self.kafkaproxy: Any = None  # nemesis.kafkaproxy.KafkaProxyProcess in front of a run's real brokers
        self._bundle: Path | None = None
        self.control_token = ""

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    @property
    def node_python(self) -> str:
        """The interpreter on nodes: this one when the nodes are this machine."""
        return sys.executable if self.inv.embedded else self.inv.agents.python

    def node_workdir(self, node: NodeSpec) -> str:
        """Fixed when the cluster connects (``run_id`` changes per run on a warm cluster)."""
        if node.name in self.state.node_workdirs:
            return self.state.node_workdirs[node.name]
        if node.workdir:
            return node.workdir
        if self.inv.embedded:
            return str(self.scratch / "nodes" / node.name)
        return f"{self.inv.workdir_base}/{self.run_id}/{node.name}"

    def start(self, zkproxy_events: Path | None = None, zkproxy_seed: int = 0,
              zkproxy_max_frame: int | None = None) -> None:
        """Bring everything up. With ``zkproxy_events`` the ZooKeeper wire proxy sits between the
        agents' Toxiproxy links and the servers, writing its frame events there."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.state.save()
        self._connect()
        if not self.inv.embedded:
            self._provision()
        self._start_zookeeper()
        if zkproxy_events is not None:
            self._start_zkproxy(zkproxy_events, zkproxy_seed, zkproxy_max_frame)
        self._start_toxiproxy()

    def _start_zkproxy(self, events: Path, seed: int, max_frame: int | None = None) -> None:
        from nemesis.zkproxy import ProxyProcess

        assert self.ensemble is not None
        self.log("starting the ZooKeeper wire proxy")
        self.zkproxy = ProxyProcess([m.client_address for m in self.ensemble.members], events,
                                    self.scratch / "zkproxy", seed=seed, listen_host=self.inv.toxiproxy.host,
                                    run=self.run_id, max_frame=max_frame)
        self.zkproxy.on_spawn = self._record_local
        self.zkproxy.start()

    def zk_upstream(self, member: ZkMember) -> str:
        """Where an agent's link to ``member`` leads: the wire proxy's listener, or the server."""
        if self.zkproxy is None:
            return member.client_address
        return self.zkproxy.addresses[self.ensemble.members.index(member)]

    def _connect(self) -> None:
        inv = self.inv
        if inv.embedded:
            self.log("starting embedded sshd")
            self.sshd = EmbeddedSshd(self.scratch / "sshd", sorted({n.address for n in inv.nodes}))
            self.sshd.on_spawn = self._record_local
            self.sshd.start()

        def connect(node: NodeSpec) -> tuple[str, Remote]:
            if self.sshd is not None:
                sshd = self.sshd
                return node.name, SSHRemote(node.name, node.address, sshd.port, sshd.user, str(sshd.client_key),
                                            host_keys=lambda c: hostkeys.pin(c, [(node.address, sshd.port)],
                                                                             sshd.host_key.with_suffix(".pub")))
            key = node.key or inv.ssh.key
            return node.name, SSHRemote(
                node.name, node.ssh_host or node.address, node.ssh_port or inv.ssh.port,
                node.user or inv.ssh.user or os.environ.get("USER", "root"),
                os.path.expanduser(key) if key else None,
                host_keys=lambda c: hostkeys.configure(c, inv.ssh.host_keys, inv.ssh.known_hosts,
                                                       inv.trusted_keys_file, str(inv.path), self.log),
            )

        self.log(f"connecting over SSH to {len(inv.nodes)} nodes")
        self.remotes = dict(on_nodes(inv.nodes, connect))
        for node in inv.nodes:
            self.state.node_workdirs[node.name] = self.node_workdir(node)
        on_nodes(inv.nodes, lambda node: self.remotes[node.name].run(
            f"mkdir -p {shlex.quote(self.state.node_workdirs[node.name])}", check=True))
        self.state.save()

    def zk_settings(self, node: NodeSpec) -> ZkSettings:
        """The inventory's ZooKeeper settings with the classpath where this node's jars are."""
        return replace(self.inv.zookeeper, classpath=zk_classpath(self.inv.zookeeper, self.inv.node_install_dir(node)))

    def _provision(self) -> None:
        """External nodes get what they lack (`harness setup`); a node that cannot is a one-line error."""
        from harness.installer import provision

        failed = [o for o in provision(self.inv, self.remotes, self.log) if o.status == "FAIL"]
        if failed:
            raise RemoteError("; ".join(f"{o.node}: {o.what}: {o.detail}" for o in failed))

    def _start_zookeeper(self) -> None:
        zookeepers = self.inv.zookeepers
        ports = on_nodes(zookeepers, lambda node: free_ports_on(self.remotes[node.name], node.address, 3,
                                                                self.node_python))
        members = [ZkMember(myid, node.name, node.address, client, peer, election, self.node_workdir(node))
                   for myid, (node, (client, peer, election)) in enumerate(zip(zookeepers, ports, strict=True), 1)]
        nodes = [ZooKeeperNode(m, self.remotes[m.name], self.zk_settings(self.inv.node(m.name))) for m in members]
        for m in members:
            self.state.add_pidfile(m.name, m.pidfile)
        self.ensemble = Ensemble(nodes)
        self.log(f"starting ZooKeeper ensemble of {len(nodes)}")
        self.ensemble.start(timeout=90)

    def _start_toxiproxy(self) -> None:
        self.toxiproxy = ToxiproxyServer(self.inv.toxiproxy.binary, self.inv.toxiproxy.host, self.scratch / "toxiproxy")
        self.toxiproxy.on_spawn = self._record_local
        self.toxiproxy.start()
        self.links = LinkNet(self.toxiproxy)
        assert self.ensemble is not None
        for broker in self.inv.brokers:
            for m in self.ensemble.members:
                self.links.create(Link(f"{broker.name}->{m.name}", "agent-zk", broker.name, m.name,
                                       self.zk_upstream(m)))
        # the workload clients on the control node: one link per server, so a client's server can be
        # cut or slowed apart from the agents' (link ``client->zk<M>``, kind ``client-zk``)
        for m in self.ensemble.members:
            self.links.create(Link(f"{CLIENT_NODE}->{m.name}", "client-zk", CLIENT_NODE, m.name, self.zk_upstream(m)))

    def client_zk_links(self) -> list[tuple[str, str]]:
        """(ZooKeeper node name, address a workload client dials) per server, in ensemble order."""
        assert self.ensemble is not None and self.links is not None
        return [(m.name, self.links.links[f"{CLIENT_NODE}->{m.name}"].listen) for m in self.ensemble.members]

    def kafka_workdir(self, node: NodeSpec) -> str:
        return f"{self.node_workdir(node)}/kafka"

    def reset_node_files(self) -> None:
        """Between runs on a warm cluster: no agent's or Kafka broker's files of the run before (the
        jars stay)."""
        from base.components.kafka import KafkaBroker

        for node in self.inv.brokers:
            wd = self.node_workdir(node)
            files = [f"{wd}/events.jsonl", f"{wd}/agent.log", f"{wd}/data", *KafkaBroker.run_files(self.kafka_workdir(node))]
            self.remotes[node.name].run("rm -rf " + " ".join(shlex.quote(f) for f in files), check=False)

    def kafka_bootstrap(self) -> str:
        """The real Kafka brokers started for this run as a workload client reaches them: their links'
        addresses, comma-separated (a link made for a broker of an earlier run stays, unused)."""
        assert self.links is not None
        return ",".join(self.links.links[f"{CLIENT_NODE}->{n.name}"].listen for n in self.inv.brokers
                        if n.broker_id in self.agents)

    def _ensure_agent_links(self) -> None:
        brokers = self.inv.brokers
        new = [b for b in brokers if b.broker_id not in self.agent_ports]
        ports = on_nodes(new, lambda b: free_ports_on(self.remotes[b.name], b.address, 1, self.node_python)[0])
        self.agent_ports.update({b.broker_id: port for b, port in zip(new, ports, strict=True)})  # type: ignore[misc]
        for src in brokers:
            for dst in brokers:
                name = f"{src.name}->{dst.name}"
                if src is not dst and name not in self.links.links:
                    self.links.create(Link(name, "agent-agent", src.name, dst.name,
                                           f"{dst.address}:{self.agent_ports[dst.broker_id]}"))  # type: ignore[index]

    # -- agents --------------------------------------------------------------------------
    def agent_config(self, broker: NodeSpec, toggles: Toggles, extra: dict[str, Any] | None = None) -> AgentConfig:
        assert broker.broker_id is not None and self.ensemble is not None
        wd = self.node_workdir(broker)
        zk_links = [self.links.links[f"{broker.name}->{m.name}"] for m in self.ensemble.members]
        peers = {
            other.broker_id: self.links.links[f"{broker.name}->{other.name}"].listen
            for other in self.inv.brokers if other is not broker
        }
        return AgentConfig(
            broker_id=broker.broker_id,
            zk_connect=",".join(ln.listen for ln in zk_links),
            zk_pipeline_connect=",".join(ln.listen for ln in zk_links),
            session_timeout_ms=self.inv.agents.session_timeout_ms,
            events_path=f"{wd}/events.jsonl",
            data_dir=f"{wd}/data",
            run=self.run_id,
            host=broker.address,
            listen_host=broker.address,
            port=self.agent_ports[broker.broker_id],
            peers=peers,  # type: ignore[arg-type]
            toggles=toggles,
            control_token=self.control_token,
            extra=dict(extra or {}),
        )

    def start_agents(self, toggles: dict[str, Any] | Toggles | None = None, brokers: list[int] | None = None,
                     extra: dict[str, Any] | None = None, per_broker_toggles: dict[int, dict[str, Any]] | None = None,
                     config_overrides: dict[int, dict[str, Any]] | None = None) -> list[AgentProcess]:
        """Ship the agent bundle, write each config and start the agents over SSH.
        ``config_overrides`` sets AgentConfig fields per broker (e.g. ``zk_pipeline_connect``)."""
        self._ensure_agent_links()
        base = toggles if isinstance(toggles, Toggles) else Toggles.from_dict(
            {**self.inv.agents.toggles.to_dict(), **(toggles or {})})
        targets = [b for b in self.inv.brokers if brokers is None or b.broker_id in brokers]
        if not self.agents:  # a new run's agents: a new control token (agent.net)
            self.control_token = secrets.token_hex(16)
        use_token(self.control_token)
        if self._bundle is None:
            self._bundle = build_agent_bundle(self.scratch / "agent-code.tar.gz")

        def start_one(node: NodeSpec) -> AgentProcess:
            tg = base
            if per_broker_toggles and node.broker_id in per_broker_toggles:
                tg = replace(base, **per_broker_toggles[node.broker_id])
            cfg = self.agent_config(node, tg, extra)
            for k, v in (config_overrides or {}).get(node.broker_id, {}).items():  # type: ignore[arg-type]
                setattr(cfg, k, v)
            agent = AgentProcess(node, self.remotes[node.name], self.node_workdir(node), self.node_python,
                                 self.scratch / "peek", on_start=self._record_agent,
                                 deps_dir="" if self.inv.embedded else pydeps_dir(self.inv.node_install_dir(node)))
            agent.install(self._bundle)  # type: ignore[arg-type]
            agent.write_config(cfg)
            agent.start()
            return agent

        started = on_nodes(targets, start_one)
        for a in started:
            self.agents[a.broker_id] = a
        return started

    def _record_local(self, pid: int) -> None:
        """A process of the control node's, recorded as soon as it exists: `harness teardown` stops
        it after a crash, also one that came while the process was getting ready."""
        self.state.local_pids.append(pid)
        self.state.save()

    def start_kafka(self, spec: KafkaBrokers, brokers: list[int] | None = None,
                    kafkaproxy_events: Path | None = None, kafkaproxy_seed: int = 0) -> list[Any]:
        """Real Kafka brokers (ZooKeeper mode) in place of the agents, one per broker node: the jars
        shipped over SSH, ``zookeeper.connect`` through the broker's own Toxiproxy links (to the
        wire proxy when the run routes through it) to the first ``spec.zk_hosts`` servers, the
        session timeout from the inventory, the ZooKeeper client socket from ``spec.zk_socket``.
        Broker-to-broker traffic has no Toxiproxy link (the agents' ``b<N>->b<M>`` are not made); the
        workload clients reach each broker through a link of their own (``client->b<N>``, its CLIENT
        listener advertised as that link), made here since its address goes into the broker's config.

        With ``kafkaproxy_events``, PLAINTEXT is advertised at a Kafka wire proxy started first (docs/kafkaproxy.md)."""
        from base.components.kafka import KafkaBroker, KafkaSettings, fetch_kafka
        from harness.spec import ZK_SOCKETS

        assert self.ensemble is not None and self.links is not None
        libs = fetch_kafka(spec.version)
        members = self.ensemble.members[:spec.zk_hosts] if spec.zk_hosts else self.ensemble.members
        targets = [b for b in self.inv.brokers if brokers is None or b.broker_id in brokers]
        ports = dict(zip((n.broker_id for n in targets),
                         on_nodes(targets, lambda n: free_ports_on(self.remotes[n.name], n.address, 2,
                                                                   self.node_python)), strict=True))
        advertised: dict[int, str] = {}
        if kafkaproxy_events is not None:
            advertised = self._start_kafkaproxy(targets, {b: p[0] for b, p in ports.items()}, kafkaproxy_events,
                                                kafkaproxy_seed)

        def start_one(node: NodeSpec) -> Any:
            assert node.broker_id is not None
            connect = ",".join(self.links.links[f"{node.name}->{m.name}"].listen for m in members)
            # Kafka applies its broker property zookeeper.clientCnxnSocket only together with
            # zookeeper.ssl.client.enable=true (KafkaServer.zkClientConfigFromKafkaConfig); without TLS
            # the ZooKeeper client reads the socket from the JVM's system property of the same name
            socket = ZK_SOCKETS[spec.zk_socket]
            port, client_port = ports[node.broker_id]
            # the workload clients' link to this broker (``client->b<N>``, kind ``client-broker``)
            link = self.links.create(Link(f"{CLIENT_NODE}->{node.name}", "client-broker", CLIENT_NODE, node.name,
                                          f"{node.address}:{client_port}"))
            settings = KafkaSettings(spec.version, connect, session_timeout_ms=self.inv.agents.session_timeout_ms,
                                     extra={"zookeeper.clientCnxnSocket": socket, **dict(spec.properties)},
                                     system_props={"zookeeper.clientCnxnSocket": socket},
                                     client_listener=(client_port, link.listen), advertised_plaintext=advertised)
            broker = KafkaBroker(node.name, node.broker_id, node.address, port, self.remotes[node.name],
                                 self.kafka_workdir(node), settings, peek_dir=self.scratch / "peek",
                                 run=self.run_id, on_start=lambda b: self.state.add_pidfile(b.name, b.pidfile))
            self.agents[node.broker_id] = broker  # before it exists: a failed start elsewhere still stops it
            self.state.add_kafka_log(node.name, node.broker_id, settings.session_timeout_ms,
                                     [broker.previous_log, broker.logfile])
            broker.install(libs)
            broker.start()
            # registered is not started: a fault before "started" makes Kafka give up its startup
            broker.wait_started(timeout=240)
            return broker

        return on_nodes(targets, start_one)

    def _start_kafkaproxy(self, targets: list[NodeSpec], ports: dict[int, int], events: Path,
                          seed: int) -> dict[int, str]:
        """The run's Kafka proxy in front of ``targets``' PLAINTEXT ``ports``; broker id → its listener."""
        from base.ports import free_port
        from nemesis.kafkaproxy import KafkaProxyProcess

        self.stop_kafkaproxy()  # a warm cluster's earlier run's
        host = self.inv.toxiproxy.host
        listen = {n.broker_id: f"{host}:{free_port(host)}" for n in targets}
        self.log("starting the Kafka wire proxy")
        self.kafkaproxy = KafkaProxyProcess([f"{listen[n.broker_id]}={n.address}:{ports[n.broker_id]}" for n in targets],
                                            events, self.scratch / "kafkaproxy", broker_ids=list(listen),  # type: ignore[arg-type]
                                            seed=seed, listen_host=host, run=self.run_id)
        self.kafkaproxy.on_spawn = self._record_local
        self.kafkaproxy.start()
        return listen  # type: ignore[return-value]

    def stop_kafkaproxy(self) -> None:
        """Stop the run's Kafka proxy, if any, and forget its pid (a warm cluster starts one per run)."""
        proxy, self.kafkaproxy = self.kafkaproxy, None
        if proxy is not None:
            proxy.stop()
            self.state.local_pids = [p for p in self.state.local_pids if p != getattr(proxy.process, "pid", None)]
            self.state.save()

    def _record_agent(self, agent: AgentProcess) -> None:
        """Before the process exists: what `harness teardown` needs to stop it and salvage its events."""
        self.state.add_pidfile(agent.name, agent.pidfile)
        self.state.add_agent_events(agent.name, agent.events_path, f"agent-{agent.broker_id}.jsonl")

    def record_run_dir(self, run_dir: Path) -> None:
        """The run now playing on this cluster (a warm cluster plays several)."""
        self.state.run_dir = str(run_dir)
        self.state.agent_events.clear()
        self.state.kafka_logs.clear()
        self.state.save()

    def agent(self, broker_id: int) -> AgentProcess:
        return self.agents[broker_id]

    def wait_registered(self, broker_ids: list[int] | None = None, timeout: float = 30.0) -> dict[int, int]:
        """Block until each broker's znode exists; returns broker id → czxid. A broker whose process
        is gone before it registered fails the wait at once (nothing would register it), with how it
        ended and its log's last lines (``exited_error``); the processes are looked at once a second."""
        ids = broker_ids if broker_ids is not None else sorted(self.agents)
        zk = self.zk()
        found: dict[int, int] = {}
        next_look = [time.monotonic()]

        def all_registered() -> bool:
            for b in ids:
                stat = zk.exists(f"/brokers/ids/{b}")
                if stat is not None:
                    found[b] = stat.czxid
            missing = [b for b in ids if b not in found]
            if missing and time.monotonic() >= next_look[0]:
                next_look[0] = time.monotonic() + 1.0
                self._raise_if_exited(missing, "before it registered")
            return not missing

        if not wait_until(all_registered, timeout):
            missing = sorted(set(ids) - set(found))
            logs = "".join(f"; b{b}'s agent log ends: {self.agents[b].log_tail()}" for b in missing if b in self.agents)
            raise TimeoutError(f"brokers {missing} not registered after {timeout:.0f}s{logs}")
        return found

    def _raise_if_exited(self, broker_ids: list[int], when: str) -> None:
        """``exited_error`` of the first of these started brokers whose process is gone."""
        for b in broker_ids:
            broker = self.agents.get(b)
            if broker is not None and broker.state() is ProcState.STOPPED:
                raise broker.exited_error(when)

    def components(self) -> dict[str, Component]:
        """Node name → component: the ZooKeeper servers and the started agents."""
        out: dict[str, Component] = {}
        if self.ensemble is not None:
            out.update({n.name: n for n in self.ensemble.nodes})
        out.update({a.name: a for a in self.agents.values()})
        return out

    def zk(self) -> KazooClient:
        """A direct kazoo client to the ensemble (not through any proxy)."""
        assert self.ensemble is not None
        client = KazooClient(hosts=self.ensemble.connect_string, timeout=10.0)
        client.start(timeout=20)
        self._zk_clients.append(client)
        return client

    # -- collection and teardown ---------------------------------------------------------
    def collect(self, run_dir: Path) -> dict[str, list[Any]]:
        """Download agents' events and every component's logs into ``run_dir``; ``missing`` names
        the agents whose events could not be had."""
        got: dict[str, list[Any]] = {"events": [], "logs": [], "missing": []}
        logs = run_dir / "logs"
        agents = list(self.agents.values())
        # in parallel: over SSH every download is a round trip of its own
        for agent, events in zip(agents, on_nodes(agents, lambda a: a.collect_events(run_dir / "events")), strict=True):
            if events is None:  # unreachable node, or an agent that never wrote an event
                got["missing"].append(f"agent:{agent.broker_id}")
            else:
                got["events"].append(events)
        services: list[Any] = [c for c in (*self.components().values(), self.toxiproxy, self.zkproxy, self.kafkaproxy)
                               if c is not None]
        for files in on_nodes(services, lambda c: c.logs(logs)):
            got["logs"] += files
        return got

    def stop_agents(self) -> None:
        """SIGTERM every agent (sessions close cleanly), SIGKILL after the grace period."""
        on_nodes(list(self.agents.values()), lambda a: a.stop())

    def retire_agents(self, kill: bool = False) -> None:
        """The run is over for its agents (stopped, collected): forget them, so no nemesis heal
        restarts them; ``kill`` first when stopping them may have failed."""
        if kill:
            on_nodes(list(self.agents.values()), lambda a: a.kill())
        self.agents.clear()
        self.stop_kafkaproxy()  # theirs: its events are flushed before the history is merged

    def kill_agents(self) -> None:
        """SIGKILL every agent at once (their events are flushed per line)."""
        on_nodes(list(self.agents.values()), lambda a: a.kill())

    def teardown(self) -> bool:
        """Stop everything this cluster started, in reverse order; never raises. False when
        something could not be stopped: the state and the scratch dir are then kept for
        `harness teardown`."""
        errors: list[str] = []

        def attempt(what: str, fn: Callable[[], Any]) -> None:
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - teardown must go on
                errors.append(f"{what}: {e}")

        for c in self._zk_clients:
            attempt("kazoo", lambda c=c: (c.stop(), c.close()))
        self._zk_clients.clear()
        attempt("agents", self.stop_agents)
        if self.links is not None:
            attempt("toxiproxy proxies", self.links.destroy_all)
        if self.toxiproxy is not None:
            attempt("toxiproxy", self.toxiproxy.stop)
        if self.zkproxy is not None:
            attempt("zkproxy", self.zkproxy.stop)
        attempt("kafkaproxy", self.stop_kafkaproxy)
        if self.ensemble is not None:
            attempt("zookeeper", lambda: on_nodes(self.ensemble.nodes, lambda n: n.stop()))
        for name, remote in self.remotes.items():
            wd = self.state.node_workdirs.get(name)
            if wd and not self.inv.embedded:
                attempt(f"workdir {name}", lambda r=remote, wd=wd: r.run(f"rm -rf {shlex.quote(wd)}"))
            attempt(f"ssh {name}", remote.close)
        self.remotes.clear()
        if self.sshd is not None:
            attempt("sshd", self.sshd.stop)
        if errors:
            # Something may still run: keep what names it (the state, and the scratch dir holding
            # the embedded nodes' pid files) for `harness teardown`.
            self.state.save()
            print("teardown: " + "; ".join(errors) + f"; state kept in {state_path(self.state.run_id)}: "
                  "run `harness teardown` once the nodes are reachable", file=sys.stderr)
            return False
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.state.remove()
        return True
