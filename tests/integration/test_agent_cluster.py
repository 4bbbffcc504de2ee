"""Broker agents started over the harness's SSH path on the local cluster (3 ZooKeeper servers,
Toxiproxy on every link): each bug toggle's behaviour, observed through the agents' events and the
test hooks of docs/agent.md. One cluster per module; each test restarts the agents with its toggles."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from agent import znodes as zn
from agent.client import AgentAdmin, KafkaClient
from base.components.toxiproxy import Link

pytestmark = pytest.mark.integration

WAIT = 40.0
_DIAG: list[Callable[[], str]] = []


def bounce(agent: Any) -> None:
    """SIGTERM (a clean stop: the agent's controlled shutdown, its session closed), then start."""
    agent.stop()
    agent.start()


def wait_for(pred: Callable[[], Any], what: str, timeout: float = WAIT, poll: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            v = pred()
        except OSError:
            v = None
        if v:
            return v
        time.sleep(poll)
    diag = ""
    for fn in _DIAG:
        try:
            diag += fn()
        except Exception as e:  # noqa: BLE001 - diagnostics only
            diag += f"(diagnostics failed: {e})"
    raise AssertionError(f"timed out waiting for {what}\n{diag}")


class Env:
    def __init__(self, cluster: Any) -> None:
        self.c = cluster
        self.zk = cluster.zk()
        self.ids = sorted(b.broker_id for b in cluster.inv.brokers)
        _DIAG[:] = [self.diag]

    def diag(self) -> str:
        out = []
        for b in self.ids:
            try:
                st = self.admin(b).state()
                out.append(f"broker {b}: epoch={st['epoch']} registered={st['registered']} held={st['held']} "
                           f"queued={st['queued_events']} controller={st['controller']['active']}"
                           f"/{st['controller']['controller_epoch']}")
            except OSError as e:
                out.append(f"broker {b}: unreachable ({e})")
            for e in self.c.agent(b).events()[-12:]:
                out.append(f"  {e.seq} {e.type} {e.f} {str(e.value)[:200]}")
        return "\n".join(out)

    def admin(self, b: int) -> AgentAdmin:
        return AgentAdmin(f"{self.c.inv.broker(b).address}:{self.c.agent_ports[b]}")

    def addrs(self) -> dict[int, str]:
        return {b: f"{self.c.inv.broker(b).address}:{self.c.agent_ports[b]}" for b in self.ids}

    def restart(self, toggles: dict[str, Any] | None = None, extra: dict[str, Any] | None = None) -> None:
        if self.c.agents:
            self.c.stop_agents()
            for a in self.c.agents.values():
                a.wipe()
        for p in (zn.BROKER_TOPICS, "/admin"):
            self.zk.delete(p, recursive=True) if self.zk.exists(p) else None
        self.c.start_agents(toggles=toggles or {}, extra=extra)
        self.c.wait_registered(timeout=WAIT)
        wait_for(lambda: self.controller() is not None and self.admin(self.controller()).state()["controller"]
                 ["active"], "an active controller")
        wait_for(lambda: all(self.admin(b).state()["registered"] for b in self.ids), "agents registered")

    def controller(self) -> int | None:
        try:
            data, _ = self.zk.get(zn.CONTROLLER)
        except Exception:  # noqa: BLE001
            return None
        return zn.parse_controller_id(data)

    def epoch(self, b: int) -> int:
        return self.admin(b).state()["epoch"]

    def part(self, b: int, tp: str = "t-0") -> dict[str, Any]:
        return self.admin(b).state()["partitions"].get(tp) or {}

    def create_topic(self, assignment: dict[int, list[int]], topic: str = "t") -> None:
        zn.create_topic(self.zk, topic, assignment)
        for p, reps in assignment.items():
            for r in reps:
                wait_for(lambda r=r, p=p: self.part(r, f"{topic}-{p}").get("role") in ("leader", "follower"),
                         f"broker {r} hosting {topic}-{p}")

    def seq(self, b: int) -> int:
        evs = self.c.agent(b).events()
        return evs[-1].seq if evs else 0

    def events(self, b: int, since: int = 0, f: str | None = None) -> list[Any]:
        return [e for e in self.c.agent(b).events() if e.seq > since and (f is None or e.f == f)]

    def others(self, *exclude: int) -> list[int]:
        return [b for b in self.ids if b not in exclude]


@pytest.fixture(scope="module")
def env(cluster):
    return Env(cluster)


def test_registration_election_topic_and_acks_all(env):
    env.restart()
    c = env.controller()
    for b in env.ids:
        data, stat = env.zk.get(zn.broker_path(b))
        assert env.epoch(b) == stat.czxid  # broker epoch = czxid
        assert zn.parse_broker_payload(data)["version"] == 5
    ctl = env.admin(c).state()["controller"]
    epoch_data, epoch_stat = env.zk.get(zn.CONTROLLER_EPOCH)
    assert int(epoch_data) == ctl["controller_epoch"] and epoch_stat.version == ctl["epoch_zk_version"]
    assert sum(env.admin(b).state()["controller"]["active"] for b in env.ids) == 1
    env.create_topic({0: env.ids, 1: list(reversed(env.ids))})
    data, stat = env.zk.get(zn.partition_state_path("t", 0))
    st = zn.PartitionState.parse(data, stat.version)
    assert st.leader == env.ids[0] and set(st.isr) == set(env.ids)
    client = KafkaClient(env.addrs())
    offsets = [client.append("t", 0, f"v{i}") for i in range(5)]
    assert offsets == list(range(5))
    # acks=all: every ISR member has the records below the high watermark.
    for b in env.ids:
        wait_for(lambda b=b: env.part(b)["leo"] >= 5, f"broker {b} replicated t-0")
    leader_events = env.events(env.ids[0], f="fetch")
    assert leader_events and all(e.value["replica_epoch"] > 0 for e in leader_events)


@pytest.mark.parametrize("mode", ["on", "off"])
def test_kafka_7235_stale_stop_replica_and_controlled_shutdown(env, mode):
    """(b) StopReplica built for B's old epoch, delivered after B bounced; (c) a stale ControlledShutdown."""
    env.restart({"broker_epoch_check": mode})
    c = env.controller()
    b = env.others(c)[0]
    env.create_topic({0: [c, b]})
    e1 = env.epoch(b)
    bounce(env.c.agent(b))  # SIGTERM: controlled shutdown (StopReplica(E1) to b), then restart
    e2 = wait_for(lambda: env.admin(b).state()["registered"] and env.epoch(b) > e1 and env.epoch(b), "b re-registered")
    wait_for(lambda: env.part(b).get("role") == "follower", "b follows t-0 again")
    stored = [r for r in env.admin(c).call("debug_requests")["requests"]
              if r["kind"] == "StopReplica" and r["target"] == b and r["broker_epoch"] in (e1,)]
    assert stored, "the controlled shutdown sent b a StopReplica carrying E1"
    reply = env.admin(c).call("debug_send", request_id=stored[-1]["request_id"], target=b)
    if mode == "on":
        assert reply["error_code"] == 77  # STALE_BROKER_EPOCH
        assert env.part(b)["role"] == "follower"
    else:
        assert reply["error_code"] == 0
        assert env.part(b)["role"] == "stopped"  # the new incarnation's replica is stopped for good
    recv = [e for e in env.events(b, f="control_recv") if e.value["request_id"] == stored[-1]["request_id"]
            and e.value["own_epoch"] == e2]
    assert recv and recv[-1].value["outcome"] == ("rejected" if mode == "on" else "applied")
    cs = env.admin(b).call("controlled_shutdown", broker_epoch=e1)
    assert cs["error_code"] == (77 if mode == "on" else 0)


@pytest.mark.parametrize("mode", ["on", "off"])
def test_kafka_7235_fast_bounce_while_controller_held(env, mode):
    """(a) The controller's event processing is held while B restarts (czxid E1 → E2)."""
    env.restart({"broker_epoch_check": mode}, extra={"controlled_shutdown": False})
    c = env.controller()
    b = env.others(c)[0]
    env.create_topic({0: [c, b]})
    e1 = env.epoch(b)
    base_c, base_b = env.seq(c), env.seq(b)
    env.admin(c).hold()
    bounce(env.c.agent(b))
    e2 = wait_for(lambda: env.admin(b).state()["registered"] and env.epoch(b) > e1 and env.epoch(b), "b back")
    env.admin(c).release()
    changes = wait_for(lambda: [e for e in env.events(c, base_c, "broker_change") if e.value["reason"] == "watch"],
                       "controller processed the broker change")
    if mode == "on":
        assert any(e.value["bounced"] == [b] for e in changes)
        assert all(b not in e.value["new"] + e.value["dead"] for e in changes)
        um = wait_for(lambda: [e for e in env.events(b, base_b, "control_recv") if e.value["kind"] == "UpdateMetadata"
                               and e.value["full"] and e.value["outcome"] == "applied"], "full UpdateMetadata")
        assert um[0].value["broker_epoch"] == e2
        lai = wait_for(lambda: [e for e in env.events(b, base_b, "control_recv") if e.value["kind"] == "LeaderAndIsr"
                                and e.value["outcome"] == "applied"], "LeaderAndIsr")
        assert lai[0].value["broker_epoch"] == e2 and "t-0" in lai[0].value["partitions"]
        handled = env.events(c, base_c, "broker_startup_handled")
        assert any(e.value["bounced"] and e.value["epochs"][str(b)] == e2 for e in handled)
    else:
        assert all(e.value["bounced"] == [] and b not in e.value["new"] for e in changes)
        # Pre-KIP-380: the id set did not change, so the new B is never told about its replicas.
        assert not env.events(b, base_b, "control_recv")


@pytest.mark.parametrize("fencing", ["on", "off"])
def test_kafka_6082_zombie_controller_write(env, fencing):
    env.restart({"controller_fencing": fencing})
    old = env.controller()
    env.create_topic({0: env.ids})
    old_epoch = env.admin(old).state()["controller"]["controller_epoch"]
    env.admin(old).hold()
    env.zk.delete(zn.CONTROLLER)  # the old controller does not see this until released
    new = wait_for(lambda: env.controller() not in (None, old) and env.controller(), "a new controller")
    wait_for(lambda: env.admin(new).state()["controller"]["active"], "new controller active")
    assert env.admin(new).state()["controller"]["controller_epoch"] > old_epoch
    reply = env.admin(old).call("debug_controller_write", topic="t", partition=0, isr=env.ids[:2])
    data, stat = env.zk.get(zn.partition_state_path("t", 0))
    st = zn.PartitionState.parse(data, stat.version)
    if fencing == "on":
        assert reply["ok"] is False and reply["error"] == "CONTROLLER_MOVED"
        assert st.controller_epoch != old_epoch or len(st.isr) == 3
    else:
        assert reply["ok"] is True
        assert st.controller_epoch == old_epoch and list(st.isr) == env.ids[:2]  # a zombie's write landed
    env.admin(old).release()
    wait_for(lambda: not env.admin(old).state()["controller"]["active"], "old controller resigned")


@pytest.mark.parametrize("mode", ["off", "kip903"])
def test_kafka_14139_alter_partition_with_stale_replica_epoch(env, mode):
    env.restart({"isr_epoch_check": mode})
    c = env.controller()
    leader, b = c, env.others(c)[0]
    env.create_topic({0: [leader, b]})
    la = env.admin(leader)
    la.call("hold_alter_partition")  # the leader's own ISR proposals are captured, not sent
    shrink = la.call("debug_alter_partition", topic="t", partition=0,
                     new_isr_with_epochs=[{"id": leader, "epoch": -1}])
    assert shrink["error_code"] == 0 and shrink["isr"] == [leader]
    eb = env.epoch(b)
    stale = la.call("debug_alter_partition", topic="t", partition=0,
                    new_isr_with_epochs=[{"id": leader, "epoch": env.epoch(leader)}, {"id": b, "epoch": eb - 1}])
    if mode == "kip903":
        assert stale["error_code"] == 107  # INELIGIBLE_REPLICA
        good = la.call("debug_alter_partition", topic="t", partition=0,
                       new_isr_with_epochs=[{"id": leader, "epoch": env.epoch(leader)}, {"id": b, "epoch": eb}])
        assert good["error_code"] == 0 and good["isr"] == [leader, b]
    else:
        assert stale["error_code"] == 0 and stale["isr"] == [leader, b]  # ZK mode ignores the epochs
    handled = env.events(c, f="alter_partition_handled")
    assert handled[-1].value["error_code"] == 0 and handled[-1].value["live"][str(b)] == eb


def test_max_broker_epoch_shared_payload_and_fencing(env):
    env.restart({"max_broker_epoch": True})
    c = env.controller()
    b = env.others(c)[0]
    env.create_topic({0: [c, b]})
    old = env.admin(c).call("debug_build", kind="UpdateMetadata", target=b)["request"]
    assert old["broker_epoch"] == -1 and old["max_broker_epoch"] == max(env.epoch(x) for x in env.ids)
    e1 = env.epoch(b)
    bounce(env.c.agent(b))
    e2 = wait_for(lambda: env.admin(b).state()["registered"] and env.epoch(b) > e1 and env.epoch(b), "b back")
    wait_for(lambda: env.admin(c).state()["controller"]["live"].get(str(b)) == e2, "controller saw the bounce")
    assert env.admin(c).call("debug_send", request_id=old["request_id"], target=b)["error_code"] == 77
    fresh = env.admin(c).call("debug_build", kind="UpdateMetadata", target=b)["request"]
    assert fresh["max_broker_epoch"] >= e2
    assert env.admin(c).call("debug_send", request_id=fresh["request_id"], target=b)["error_code"] == 0
    sends = [e for e in env.events(c, f="control_send") if e.value["kind"] == "UpdateMetadata" and e.value.get("shared")]
    by_id: dict[str, set[int]] = {}
    for e in sends:
        by_id.setdefault(e.value["request_id"], set()).add(e.value["target"])
    assert any(len(t) > 1 for t in by_id.values())  # one payload for several brokers


def test_kip39_preferred_controller_takes_over(env):
    env.restart({"preferred_controller": True})
    old = env.controller()
    pref = env.others(old)[-1]
    zn.set_next_controller(env.zk, pref)
    wait_for(lambda: env.controller() == pref and env.admin(pref).state()["controller"]["active"],
             "preferred broker is the controller")
    assert env.zk.get(zn.READY_TO_SERVE)[0] == str(pref).encode()
    assert not env.admin(old).state()["controller"]["active"]
    assert any(e.value["reason"].startswith("preferred") for e in env.events(old, f="controller_resigned"))


@pytest.mark.parametrize("mode", ["3x", "retry14845"])
def test_kafka_14845_pipelined_registration_loses_connect_response(env, mode):
    """The re-registration after expiry is pipelined behind the ConnectRequest through a proxy
    that drops every server→client byte: the multi runs under a session the agent never learns."""
    ens = env.c.ensemble.members[0]
    pipe = f"pipe-{mode}"
    if pipe not in env.c.links.links:
        env.c.links.create(Link(pipe, "agent-zk", "test", ens.name, ens.client_address))
    env.c.links.cut([pipe], stream="downstream")
    env.restart({"pipeline_on_connect": True, "registration": mode},
                extra={"zk_pipeline_connect": env.c.links.links[pipe].listen})
    b = env.others(env.controller())[0]
    base = env.seq(b)
    node = env.c.inv.broker(b).name
    zk_links = env.c.links.links_between(src=node, kind="agent-zk")
    env.c.links.set_enabled(zk_links, False)  # B cannot reach ZooKeeper: its session expires
    wait_for(lambda: env.zk.exists(zn.broker_path(b)) is None, "B's session expired", timeout=30)
    env.c.links.set_enabled(zk_links, True)
    pipes = wait_for(lambda: env.events(b, base, "pipeline_register"), "pipelined attempt")
    assert pipes[0].value["session_learned"] is False and pipes[0].value["session_id"] is None
    fails = wait_for(lambda: [e for e in env.events(b, base, "register") if e.type == "fail"], "NODEEXISTS")
    f0 = fails[0].value
    assert f0["error"] == "NODEEXISTS" and f0["owner"] not in (f0["session_id"], f0["recorded_session"])
    if mode == "3x":
        assert f0["permanent"] is True
        wait_for(lambda: env.zk.exists(zn.broker_path(b)) is None, "orphan session's znode gone", timeout=30)
        assert not env.admin(b).state()["registered"]
    else:
        assert f0["retryable"] is True
        ok = wait_for(lambda: [e for e in env.events(b, base, "register") if e.type == "ok"], "registered again",
                      timeout=30)
        _, stat = env.zk.get(zn.broker_path(b))
        assert stat.ephemeralOwner == ok[-1].value["session_id"] == env.admin(b).state()["session_id"]
    env.c.links.heal()
