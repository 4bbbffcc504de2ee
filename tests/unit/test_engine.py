"""The run engine with fake components: phases, events, teardown, warm reuse, expectations,
errors and interrupts; and the workload runner's Jepsen rules. No process, socket or Spark."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from base.components import ProcState
from base.errors import RunInterrupted
from base.inventory import load_inventory
from harness.effects import Effects
from harness.engine import Engine
from harness.spec import ANOMALY, Expectation, KafkaBrokers, TestSpec
from history import EventWriter, read_events
from nemesis.base import FaultOp
from nemesis.schedule import Schedule, Step
from workloads.base import FAIL, INFO, OK, Op, OpRecorder, Workload, WorkloadRunner


class FakeAgent:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.proc_state = ProcState.RUNNING

    def state(self) -> ProcState:
        return self.proc_state


class FakeZk:
    def __init__(self) -> None:
        self.children = ["zookeeper", "brokers"]
        self.dead = False  # its servers are gone: an async call's result never comes

    def get_children(self, path: str) -> list[str]:
        return list(self.children)

    def get_children_async(self, path: str) -> Any:
        children, dead = self.get_children(path), self.dead

        class Result:
            def get(self, timeout: float | None = None) -> list[str]:
                if dead:
                    raise TimeoutError(f"no answer in {timeout}s")  # as kazoo's handler raises on a timeout
                return children
        return Result()

    def delete(self, path: str, recursive: bool = False) -> None:
        self.children.remove(path.strip("/"))


class FakeRemote:
    def __init__(self) -> None:
        self.commands: list[str] = []

    def run(self, command: str, **kw: Any) -> None:
        self.commands.append(command)


class FakeCluster:
    """Records what the engine asks of it; its agents "write" one registration each."""

    instances: list[FakeCluster] = []

    def __init__(self, inv: Any, scratch: Path, run_id: str, log: Any) -> None:
        self.inv = inv
        self.run_id = run_id
        self.calls: list[str] = []
        self.agents: dict[int, FakeAgent] = {}
        self.ensemble = type("E", (), {"modes": lambda self: {"zk1": "leader"}})()
        self.remotes = {n.name: FakeRemote() for n in inv.nodes}
        self.zk_client = FakeZk()
        self.agent_ports = {b.broker_id: 9000 + b.broker_id for b in inv.brokers}
        FakeCluster.instances.append(self)

    def start(self, zkproxy_events: Any = None, zkproxy_seed: int = 0, zkproxy_max_frame: Any = None) -> None:
        self.calls.append("start")

    def start_agents(self, toggles: Any = None, brokers: Any = None, extra: Any = None,
                     config_overrides: Any = None) -> None:
        self.calls.append(f"start_agents {toggles}")
        for b in brokers or [n.broker_id for n in self.inv.brokers]:
            self.agents[b] = FakeAgent(b)

    kafkaproxy: Any = None

    def start_kafka(self, spec: Any, brokers: Any = None, kafkaproxy_events: Path | None = None,
                    kafkaproxy_seed: int = 0) -> None:
        self.calls.append(f"start_kafka {spec.version} {spec.zk_socket} {spec.zk_hosts}"
                          + (f" proxy {kafkaproxy_events.name} seed {kafkaproxy_seed}" if kafkaproxy_events else ""))
        if kafkaproxy_events is not None:
            self.kafkaproxy = "proxy"
        for b in brokers or [n.broker_id for n in self.inv.brokers]:
            self.agents[b] = FakeAgent(b)

    def stop_kafkaproxy(self) -> None:
        self.calls.append("stop_kafkaproxy")
        self.kafkaproxy = None

    def wait_registered(self, brokers: list[int], timeout: float) -> dict[int, int]:
        return {b: 100 + b for b in brokers}

    def stop_agents(self) -> None:
        self.calls.append("stop_agents")

    def kill_agents(self) -> None:
        self.calls.append("kill_agents")

    def retire_agents(self, kill: bool = False) -> None:
        self.calls.append("retire_agents")

    def collect(self, run_dir: Path) -> None:
        self.calls.append("collect")
        for b in self.agents:
            with EventWriter(run_dir / "events" / f"agent-{b}.jsonl", f"agent:{b}", self.run_id) as w:
                w.emit("register", type="ok", process=b, epoch=100 + b)

    def node_workdir(self, node: Any) -> str:
        return f"/tmp/fake/{node.name}"

    def reset_node_files(self) -> None:
        self.calls.append("reset_node_files")

    def record_run_dir(self, run_dir: Path) -> None:
        self.calls.append("record_run_dir")

    def zk(self) -> FakeZk:
        return self.zk_client

    def components(self) -> dict[str, Any]:
        return {}

    def teardown(self) -> None:
        self.calls.append("teardown")


class FakeObserver:
    def __init__(self, cluster: Any, brokers: list[int], events: EventWriter) -> None:
        self.events = events

    def start(self) -> None:
        self.events.emit("broker_znode", broker_id=1, exists=True)

    def final_snapshot(self) -> None:
        self.events.emit("broker_znode", broker_id=1, exists=True, final=True)

    def stop(self) -> None:
        pass


class FakeNemesis:
    fs = frozenset({"isolate", "kill"})

    def __init__(self) -> None:
        self.ops: list[tuple[str, str]] = []
        self.heals = 0

    def setup(self, cluster: Any) -> None:
        pass

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if op.f == "kill":
            raise RuntimeError("no such process")
        self.ops.append((op.f, op.phase))
        return {"ok": True}

    def heal(self) -> dict[str, Any]:
        self.heals += 1
        return {}

    def teardown(self) -> None:
        pass


def effects(nemesis: FakeNemesis, verdicts: dict[str, Any] | None = None) -> Effects:
    def check(engine: Any, history: str, spec: TestSpec) -> dict[str, Any]:
        named = verdicts or {"registration_liveness": True}
        valid = False if False in named.values() else ("unknown" if "unknown" in named.values() else True)
        return {"valid": valid, "anomalies": [{"checker": n, "message": "m", "event_ids": []}
                                              for n, v in named.items() if v is False],
                "stats": {"events": sum(1 for _ in read_events(history))},
                "checkers": {n: {"valid": v, "stats": {}} for n, v in named.items()}}

    return Effects(FakeCluster, FakeObserver, lambda cluster, spec, proxy: [nemesis], lambda *a: None, check)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    FakeCluster.instances.clear()


def engine(tmp_path: Path, nemesis: FakeNemesis, keep_warm: bool = False, **kw: Any) -> Engine:
    return Engine(load_inventory(), tmp_path / "store", Console(quiet=True), keep_warm=keep_warm,
                  effects=effects(nemesis, **kw))


def history(outcome: Any) -> list[Any]:
    return list(read_events(outcome.run_dir / "history.jsonl"))


def schedule() -> Schedule:
    return Schedule("s", [Step(0.0, FaultOp("isolate", "start", ["b1"])), Step(0.1, FaultOp("isolate", "stop", ["b1"])),
                          Step(0.15, FaultOp("kill", "start", ["zk1"]))])


def test_a_scheduled_run_goes_through_every_phase_and_is_torn_down(tmp_path: Path) -> None:
    nem = FakeNemesis()
    with engine(tmp_path, nem) as eng:
        out = eng.run(TestSpec("t", schedule=schedule(), time_limit=0.3, recovery=False, seed=5))
    cluster = FakeCluster.instances[0]
    assert cluster.calls == ["start", "record_run_dir", "start_agents {}", "stop_agents", "collect", "retire_agents",
                             "teardown"]
    assert nem.ops == [("isolate", "start"), ("isolate", "stop")]
    assert nem.heals == 2  # at setup and at teardown
    evs = history(out)
    kinds = [(e.src, e.f, e.value.get("stage")) for e in evs]
    assert kinds.index(("harness", "run_start", None)) < kinds.index(("nemesis", "isolate", "invoke"))
    assert ("nemesis", "kill", "error") in kinds  # a failing fault is recorded and the run goes on
    assert kinds.index(("nemesis", "kill", "error")) < kinds.index(("harness", "run_end", None))
    end = next(e for e in evs if e.f == "run_end")
    assert end.value["live_brokers"] == [1, 2, 3]
    assert any(e.src == "agent:2" and e.f == "register" for e in evs)
    assert out.valid is True and out.exit_code == 0 and out.error is None
    run = json.loads((out.run_dir / "run.json").read_text())
    assert run["seed"] == 5 and [s["f"] for s in run["schedule"]["steps"]] == ["isolate", "isolate", "kill"]
    assert json.loads((out.run_dir / "results.json").read_text())["valid"] is True


def test_only_running_agents_are_live_at_run_end(tmp_path: Path) -> None:
    def script(ctx: Any) -> None:
        ctx.cluster.agents[2].proc_state = ProcState.PAUSED
        ctx.cluster.agents[3].proc_state = ProcState.STOPPED

    with engine(tmp_path, FakeNemesis()) as eng:
        out = eng.run(TestSpec("t", script=script, recovery=False))
    assert next(e for e in history(out) if e.f == "run_end").value["live_brokers"] == [1]


def test_a_script_acts_through_the_nemesis_and_named_clients(tmp_path: Path) -> None:
    class Echo:
        def open(self, ctx: Any, process: Any) -> Echo:
            return self

        def invoke(self, op: Op) -> Op:
            return op.complete(OK if op.value["n"] else FAIL, echoed=op.value["n"])

        def close(self) -> None:
            pass

    nem = FakeNemesis()

    def script(ctx: Any) -> None:
        assert ctx.nemesis("isolate", "start", ["b2"])
        assert not ctx.nemesis("kill", "start", ["b2"])
        assert ctx.invoke("echo", "ping", n=1).type == OK
        assert ctx.invoke("echo", "ping", n=0).type == FAIL
        ctx.step("done")

    spec = TestSpec("repro-x", script=script, clients={"echo": Echo()}, recovery=False, agents_end="kill",
                    brokers=[1, 2], expect=Expectation(ANOMALY, ("isr_expansion",)))
    with engine(tmp_path, nem, verdicts={"isr_expansion": False}) as eng:
        out = eng.run(spec)
    assert "kill_agents" in FakeCluster.instances[0].calls
    client = [(e.type, e.value) for e in history(out) if e.src == "client"]
    assert client == [("invoke", {"n": 1}), ("ok", {"n": 1, "echoed": 1}), ("invoke", {"n": 0}),
                      ("fail", {"n": 0, "echoed": 0})]
    assert out.reproduced and out.matched and out.verdicts == {"isr_expansion": False}
    assert any(e.f == "repro_step" and e.value["what"] == "done" for e in history(out))
    assert json.loads((out.run_dir / "outcome.json").read_text())["matched"] is True


def test_a_clean_expectation_needs_every_named_checker_valid(tmp_path: Path) -> None:
    spec = TestSpec("t", script=lambda ctx: None, recovery=False, expect=Expectation("valid", ("a", "b")))
    with engine(tmp_path, FakeNemesis(), verdicts={"a": True, "b": "unknown"}) as eng:
        out = eng.run(spec)
    assert not out.matched and not out.reproduced


@pytest.mark.parametrize("outcome", ["valid", ANOMALY])
def test_a_story_not_told_never_matches_clean_and_its_anomaly_still_counts(tmp_path: Path, outcome: str) -> None:
    def script(ctx: Any) -> None:
        assert not ctx.wait(lambda: False, 0.05, "the fault to bite", needed=True)
        assert not ctx.wait(lambda: False, 0.05, "something optional")
        ctx.gap("the race went the other way")

    spec = TestSpec("t", script=script, recovery=False, expect=Expectation(outcome, ("a",)))
    with engine(tmp_path, FakeNemesis(), verdicts={"a": outcome == "valid"}) as eng:
        out = eng.run(spec)
    assert out.story_gaps == ["gave up waiting for the fault to bite after 0.1s", "the race went the other way"]
    assert json.loads((out.run_dir / "results.json").read_text())["story_gaps"] == out.story_gaps
    steps = [(e.value["what"], e.value.get("gap")) for e in history(out) if e.f == "repro_step"]
    assert steps == [("story not told: gave up waiting for the fault to bite after 0.1s", True),
                     ("gave up waiting for something optional after 0.1s", None),
                     ("story not told: the race went the other way", True)]
    # clean verdicts from an untold story show nothing; an anomaly found anyway is still reproduced
    assert out.matched is (outcome == ANOMALY) and out.reproduced is (outcome == ANOMALY)


def test_a_script_error_is_recorded_the_history_kept_and_everything_torn_down(tmp_path: Path) -> None:
    def script(ctx: Any) -> None:
        raise RuntimeError("boom")

    with engine(tmp_path, FakeNemesis()) as eng:
        out = eng.run(TestSpec("t", script=script, recovery=False))
    assert out.error == "RuntimeError: boom" and not out.matched
    assert any(e.f == "run_error" for e in history(out))
    assert not any(e.f == "run_end" for e in history(out))
    assert FakeCluster.instances[0].calls[-4:] == ["stop_agents", "collect", "retire_agents", "teardown"]


def test_ctrl_c_during_play_still_tears_everything_down(tmp_path: Path) -> None:
    def script(ctx: Any) -> None:
        raise KeyboardInterrupt

    nem = FakeNemesis()
    with pytest.raises(KeyboardInterrupt), engine(tmp_path, nem) as eng:
        eng.run(TestSpec("t", script=script, recovery=False))
    assert FakeCluster.instances[0].calls[-4:] == ["stop_agents", "collect", "retire_agents", "teardown"]
    assert nem.heals == 2


def test_a_warm_cluster_is_reused_and_reset_for_tests_of_the_same_shape(tmp_path: Path) -> None:
    with engine(tmp_path, FakeNemesis(), keep_warm=True) as eng:
        eng.run(TestSpec("a", script=lambda ctx: None, recovery=False))
        eng.run(TestSpec("a", script=lambda ctx: None, recovery=False))
        assert len(FakeCluster.instances) == 1
        warm = FakeCluster.instances[0]
        assert warm.zk_client.children == ["zookeeper"]  # the previous run's znodes are gone
        assert warm.calls.count("reset_node_files") == 1  # before the second run: no file of the first
        eng.run(TestSpec("b", script=lambda ctx: None, recovery=False, zk_overrides={"sync_limit": 100}))
        assert len(FakeCluster.instances) == 2 and warm.calls[-1] == "teardown"
    assert FakeCluster.instances[1].calls[-1] == "teardown"


def test_a_warm_cluster_that_died_is_replaced_not_waited_on(tmp_path: Path) -> None:
    """`harness teardown --force` (or anything else) killed the warm cluster's ZooKeeper between two
    runs: the reset's read times out and the engine starts a new cluster."""
    with engine(tmp_path, FakeNemesis(), keep_warm=True) as eng:
        eng.run(TestSpec("a", script=lambda ctx: None, recovery=False))
        FakeCluster.instances[0].zk_client.dead = True
        out = eng.run(TestSpec("a", script=lambda ctx: None, recovery=False))
        assert out.error is None and len(FakeCluster.instances) == 2
        assert FakeCluster.instances[0].calls[-1] == "teardown" and "start" in FakeCluster.instances[1].calls


class Counter:
    """Each process appends 1, 2, 3…; op 2 of process 0 times out (info)."""

    def open(self, ctx: Any, process: Any) -> Counter:
        return self

    def invoke(self, op: Op) -> Op:
        if op.process == 0 and op.value["n"] == 2:
            return op.complete(INFO, error="timeout")
        return op.complete(OK)

    def close(self) -> None:
        pass


class UpTo:
    def __init__(self, n: int) -> None:
        self.n = n
        self.issued: dict[int, int] = {}
        self.lock = threading.Lock()

    def next_op(self, process: int, elapsed: float) -> Op | None:
        with self.lock:
            k = self.issued.get(process % 2, 0) + 1
            if k > self.n:
                return None
            self.issued[process % 2] = k
        return Op("append", {"n": k})


def test_a_workload_records_invoke_and_completion_and_retires_a_process_after_info(tmp_path: Path) -> None:
    with EventWriter(tmp_path / "client.jsonl", "client") as w:
        runner = WorkloadRunner(Workload("count", Counter(), UpTo(3), concurrency=2), ctx=None, events=w)
        runner.start(time_limit=5.0)
        runner.join()
    evs = list(read_events(tmp_path / "client.jsonl"))
    assert runner.summary() == {OK: 5, FAIL: 0, INFO: 1}
    assert len(evs) == 12 and [e.type for e in evs].count("invoke") == 6
    # process 0's info retires it: its next op runs as process 0 + concurrency
    p0 = [(e.process, e.type, e.value["n"]) for e in evs if e.process in (0, 2)]
    assert p0 == [(0, "invoke", 1), (0, "ok", 1), (0, "invoke", 2), (0, "info", 2), (2, "invoke", 3), (2, "ok", 3)]


def test_a_client_that_raises_completes_its_op_as_info(tmp_path: Path) -> None:
    class Broken:
        def invoke(self, op: Op) -> Op:
            raise ConnectionResetError("gone")

    with EventWriter(tmp_path / "c.jsonl", "client") as w:
        done = OpRecorder(w).invoke(Broken(), Op("append", {"n": 1}, process=0))  # type: ignore[arg-type]
    assert done.type == INFO and "ConnectionResetError" in done.value["error"]
    assert [e.type for e in read_events(tmp_path / "c.jsonl")] == ["invoke", "info"]


def test_real_kafka_brokers_take_the_agents_place_in_the_same_run(tmp_path: Path) -> None:
    with engine(tmp_path, FakeNemesis()) as eng:
        out = eng.run(TestSpec("t", kafka=KafkaBrokers("3.9.1", "netty", 2), brokers=[1, 2], recovery=False,
                               agents_end="kill", time_limit=0.1))
    cluster = FakeCluster.instances[0]
    assert cluster.calls == ["start", "record_run_dir", "start_kafka 3.9.1 netty 2", "kill_agents", "collect",
                             "retire_agents", "teardown"]
    assert next(e for e in history(out) if e.f == "run_end").value["live_brokers"] == [1, 2]
    run = json.loads((out.run_dir / "run.json").read_text())
    assert run["kafka"] == {"version": "3.9.1", "zk_socket": "netty", "zk_hosts": 2, "properties": []}


def test_a_kafka_run_with_its_proxy_starts_it_with_the_brokers(tmp_path: Path) -> None:
    with engine(tmp_path, FakeNemesis()) as eng:
        out = eng.run(TestSpec("t", kafka=KafkaBrokers("3.9.1"), kafkaproxy=True, recovery=False, agents_end="kill",
                               time_limit=0.1, seed=7))
    cluster = FakeCluster.instances[0]
    assert cluster.calls == ["start", "record_run_dir", "start_kafka 3.9.1 nio None proxy kafkaproxy.jsonl seed 7",
                             "kill_agents", "collect", "retire_agents", "teardown"]  # retiring stops the proxy
    assert json.loads((out.run_dir / "run.json").read_text())["kafkaproxy"] is True


def test_a_test_spec_refuses_what_the_engine_cannot_run() -> None:
    with pytest.raises(ValueError):
        KafkaBrokers("3.9.1", zk_socket="epoll")
    with pytest.raises(ValueError):
        KafkaBrokers("3.9.1", zk_hosts=0)
    with pytest.raises(ValueError):
        TestSpec("t", kafka=KafkaBrokers("3.9.1"), pipeline_zkproxy=(2,))
    with pytest.raises(ValueError, match="kafkaproxy"):
        TestSpec("t", kafkaproxy=True)
    with pytest.raises(ValueError):
        TestSpec("t", zkproxy="some")
    with pytest.raises(ValueError):
        TestSpec("t", agents_end="explode")
    with pytest.raises(ValueError):
        Expectation(ANOMALY)


@pytest.mark.parametrize("keep_warm", [False, True])
def test_an_interrupted_run_is_collected_checked_and_torn_down(tmp_path: Path, keep_warm: bool) -> None:
    """Ctrl-C (or SIGTERM) mid-play: the run is recorded as interrupted, the agents' events are
    collected, the partial history is checked, the cluster goes (even a warm one), and the caller
    unwinds as from Ctrl-C with the run directory in hand."""

    def script(ctx: Any) -> None:
        ctx.nemesis("isolate", "start", ["b1"])
        raise KeyboardInterrupt

    nem = FakeNemesis()
    with engine(tmp_path, nem, keep_warm=keep_warm, verdicts={"registration_liveness": "unknown"}) as eng:
        with pytest.raises(RunInterrupted) as caught:
            eng.run(TestSpec("t", script=script, time_limit=5, seed=1))
        cluster = FakeCluster.instances[0]
        assert cluster.calls[-4:] == ["stop_agents", "collect", "retire_agents", "teardown"]
        assert eng.cluster is None
    run_dir = Path(caught.value.run_dir)
    evs = list(read_events(run_dir / "history.jsonl"))
    kinds = [(e.src, e.f) for e in evs]
    assert ("harness", "run_interrupted") in kinds and ("harness", "run_end") not in kinds
    assert next(e for e in evs if e.f == "run_interrupted").value["reason"] == "interrupted during play"
    assert any(e.src == "agent:1" and e.f == "register" for e in evs)  # the agents' events were collected
    assert nem.heals == 2  # the fault was healed at teardown
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] == "unknown" and results["interrupted"] == "interrupted during play"
    assert caught.value.valid == "unknown"


def test_an_interrupt_before_the_cluster_is_up_leaves_an_unknown_run(tmp_path: Path) -> None:
    class Unready(FakeCluster):
        def start(self, zkproxy_events: Any = None, zkproxy_seed: int = 0, zkproxy_max_frame: Any = None) -> None:
            raise KeyboardInterrupt

    eff = effects(FakeNemesis())
    eff.cluster = Unready
    with Engine(load_inventory(), tmp_path / "store", Console(quiet=True), effects=eff) as eng:
        with pytest.raises(RunInterrupted) as caught:
            eng.run(TestSpec("t", time_limit=1, seed=1))
    results = json.loads((Path(caught.value.run_dir) / "results.json").read_text())
    assert results["valid"] == "unknown" and results["interrupted"] == "interrupted during setup"
    assert FakeCluster.instances[0].calls == ["teardown"]


def test_a_run_on_a_non_terminal_prints_its_progress_as_plain_lines(tmp_path: Path) -> None:
    out = io.StringIO()
    eff = effects(FakeNemesis())
    with Engine(load_inventory(), tmp_path / "store", Console(file=out, force_terminal=False), effects=eff) as eng:
        eng.run(TestSpec("t", schedule=schedule(), time_limit=0.3, recovery=False, seed=5))
    assert any(ln.startswith("run ") and "active faults:" in ln for ln in out.getvalue().splitlines())


@pytest.mark.parametrize("stop_it", [True, False])
def test_recovery_lasts_until_t_plus_margin_after_the_last_fault_ended(tmp_path: Path, stop_it: bool) -> None:
    """A final heal that undid nothing (the schedule stopped its fault) is ``noop`` and the run ends
    once T + margin + 1 s have passed since that stop; one that ended a fault waits from itself."""
    steps = [Step(0.0, FaultOp("isolate", "start", ["b1"]))] + ([Step(0.1, FaultOp("isolate", "stop", ["b1"]))]
                                                                if stop_it else [])
    with engine(tmp_path, FakeNemesis()) as eng:
        eng.T = 0.2
        out = eng.run(TestSpec("t", schedule=Schedule("s", steps), time_limit=0.3, margin_ms=300, seed=5))
    evs = history(out)
    heal = next(e for e in evs if e.f == "heal" and e.value.get("reason") == "final" and e.value["stage"] == "complete")
    stops = [e for e in evs if e.src == "nemesis" and e.value.get("phase") == "stop" and e.value["stage"] == "complete"
             and not e.value.get("noop") and e.value.get("reason") != "setup"]
    end = next(e for e in evs if e.f == "run_end")
    assert bool(heal.value.get("noop")) is stop_it
    assert (stops[-1].f == "isolate") is stop_it
    assert end.t_wall - stops[-1].t_wall >= 0.2 + 0.3 + 1.0


def test_spark_starts_when_a_long_timed_play_begins_else_before_the_cluster(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from dataclasses import replace

    import harness.phases

    first_call: dict[str, list[str] | None] = {}

    def prepare(engine: Any, spec: TestSpec) -> None:  # what the cluster had done when Spark was asked to start
        cluster = engine.cluster
        first_call.setdefault(spec.name, list(cluster.calls) if cluster is not None else None)

    monkeypatch.setattr(harness.phases, "SPARK_START_S", 0.3)
    for spec in (TestSpec("short", schedule=schedule(), time_limit=0.2, recovery=False, seed=5),
                 TestSpec("scripted", script=lambda ctx: None, time_limit=5, recovery=False, seed=5),
                 TestSpec("long", schedule=schedule(), time_limit=0.3, recovery=False, seed=5)):
        eng = Engine(load_inventory(), tmp_path / "store", Console(quiet=True),
                     effects=replace(effects(FakeNemesis()), prepare_check=prepare))
        with eng:
            eng.run(spec)
    assert first_call == {"short": None, "scripted": None, "long": ["start", "record_run_dir", "start_agents {}"]}
    assert not harness.phases.play_covers_spark_start(TestSpec("s", script=lambda ctx: None, time_limit=60))


def test_a_check_whose_spark_will_not_start_leaves_the_run_unknown_with_its_history(tmp_path: Path) -> None:
    from base.errors import EnvironmentFailed

    def no_spark(engine: Any, history: str, spec: TestSpec) -> dict[str, Any]:
        raise EnvironmentFailed("Spark master spark://127.0.0.1:7077: no session (gone)")

    eng = engine(tmp_path, FakeNemesis())
    eng.effects = Effects(FakeCluster, FakeObserver, lambda cluster, spec, proxy: [FakeNemesis()], lambda *a: None,
                          no_spark)
    with eng:
        out = eng.run(TestSpec("t", schedule=schedule(), time_limit=0.3, recovery=False))
    results = json.loads((out.run_dir / "results.json").read_text())
    assert out.valid == "unknown" and results["valid"] == "unknown"
    assert "no session (gone)" in results["check_error"]
    assert any(e.f == "run_end" for e in history(out))  # the history is kept, to be checked later
    assert FakeCluster.instances[0].calls[-1] == "teardown"
