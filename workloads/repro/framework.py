"""The scenario framework behind `harness repro`: toggles + workload + fault schedule + the checker
that must fire + the expected outcome, run on a cluster that stays up across runs.

A ``Scenario`` says which agent toggles bring the bug back (``bug_toggles``) and which fix it
(``fixed_toggles``), which checkers must report the anomaly (``checkers``), and plays its JIRA's
fault schedule in ``play(ctx)``. ``ReproSession`` owns the cluster (cold start once), and for each
run: resets ZooKeeper, starts the observer and the agents with the run's toggles, plays the
schedule, records ``run_end``, collects and merges the history into a store directory, runs the
checkers over it and compares their verdict with the expectation. The verdict always comes from
the checkers over the recorded history; scenarios never decide it.
"""

from __future__ import annotations

import json
import shlex
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.cluster import Cluster
from harness.inventory import Inventory, load_inventory
from harness.observer import BrokerObserver
from harness.remote import RemoteError, on_nodes
from harness.store import new_run_dir, write_json
from history import EventWriter, merge, read_events, write_history
from nemesis.base import FaultOp, NemesisRunner

REPO_ROOT = Path(__file__).resolve().parents[2]


class ScenarioUnavailable(Exception):
    """The agent or proxy pieces this scenario needs are not in this build; says which."""


@dataclass
class Scenario:
    id: str
    title: str
    jira: str
    story: str  # one paragraph: what the schedule does and what goes wrong
    checkers: list[str]  # checker names (registration-* or fencing invariants) that must fire
    bug_toggles: dict[str, Any]
    fixed_toggles: dict[str, Any]
    brokers: list[int] = field(default_factory=lambda: [1, 2])
    extra: dict[str, Any] = field(default_factory=dict)
    margin_ms: int = 3000  # registration-liveness margin on top of T
    needs_spark: bool = False  # fencing invariants run on Spark; registration checks run locally
    zk_overrides: dict[str, Any] = field(default_factory=dict)  # ZkSettings fields for this scenario's cluster

    def available(self) -> str | None:
        """None when runnable here, else why not (shown by --list and refused with exit 254).

        Default: every bug/fix toggle value must be one the agent in this build accepts."""
        from agent.config import TOGGLE_CHOICES, parse_toggle_value

        for toggles in (self.bug_toggles, self.fixed_toggles):
            for k, v in toggles.items():
                if k not in TOGGLE_CHOICES:
                    return f"the agent has no toggle {k!r}"
                if parse_toggle_value(k, v) not in TOGGLE_CHOICES[k]:
                    return f"the agent's toggle {k} has no value {v!r}"
        return None

    def setup(self, ctx: RunContext) -> None:
        """Before the agents start (e.g. start a wire proxy, set per-broker config overrides)."""

    def play(self, ctx: RunContext) -> None:
        raise NotImplementedError

    def teardown(self, ctx: RunContext) -> None:
        """After the run's agents stopped, also on error."""


class ReproCluster(Cluster):
    """A Cluster whose agent configs can be overridden per broker (e.g. the pipelining address)."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.config_overrides: dict[int, dict[str, Any]] = {}

    def agent_config(self, broker: Any, toggles: Any, extra: dict[str, Any] | None = None) -> Any:
        cfg = super().agent_config(broker, toggles, extra)
        for k, v in self.config_overrides.get(broker.broker_id, {}).items():
            setattr(cfg, k, v)
        return cfg


@dataclass
class RunContext:
    session: ReproSession
    scenario: Scenario
    fixed: bool
    run_id: str
    run_dir: Path
    harness: EventWriter
    nemesis: NemesisRunner
    observer: BrokerObserver
    t0: float
    T: float  # session timeout, seconds
    state: dict[str, Any] = field(default_factory=dict)
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    @property
    def cluster(self) -> ReproCluster:
        assert self.session.cluster is not None
        return self.session.cluster

    @property
    def events_dir(self) -> Path:
        return self.run_dir / "events"

    def node(self, broker_id: int) -> str:
        return self.session.inv.broker(broker_id).name

    def step(self, what: str, **fields: Any) -> None:
        """A harness step: recorded in the history (the timeline shows it) and printed live."""
        self.harness.emit("repro_step", what=what, **fields)
        self.session.say(f"  [yellow]{time.monotonic() - self.t0:6.1f}s[/] {what}")

    def heal(self, reason: str) -> float:
        """Heal every fault (the ``heal`` event the registration-liveness deadline counts from)."""
        self.nemesis.heal(reason)
        return time.time()

    def fault(self, f: str, phase: str, targets: list[str], **params: Any) -> bool:
        return self.nemesis.invoke(FaultOp(f, phase, targets, params))

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))

    def zk(self) -> Any:
        return self.session.direct_zk()

    def wait(self, pred: Callable[[], Any], timeout: float, what: str, poll: float = 0.1) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            v = pred()
            if v:
                return v
            if time.monotonic() > deadline:
                self.step(f"gave up waiting for {what} after {timeout:.1f}s")
                return v
            time.sleep(poll)

    def agent_events(self, broker_id: int) -> list[Any]:
        return self.cluster.agent(broker_id).events()

    def wait_agent_event(self, broker_id: int, pred: Callable[[Any], bool], timeout: float, what: str) -> Any:
        ev = self.cluster.agent(broker_id).wait_for(pred, timeout, poll=0.1)
        if ev is None:
            self.step(f"gave up waiting for {what} after {timeout:.1f}s")
        return ev


@dataclass
class RunResult:
    scenario: str
    fixed: bool
    run_dir: Path
    reproduced: bool  # the expected checkers reported the anomaly
    matched: bool  # outcome == expectation
    verdicts: dict[str, Any]  # checker → True/False/"unknown"
    anomalies: list[dict[str, Any]]
    wall_s: float
    error: str | None = None
    phases: dict[str, float] = field(default_factory=dict)  # setup / play / stop+collect / check seconds


class ReproSession:
    """One cluster for many runs: `up()` once (cold), then `run(scenario, fixed)` per run (warm)."""

    def __init__(self, inventory: str | None = None, store: str | None = None, console: Console | None = None,
                 spark_master: str | None = None, use_spark: bool = False) -> None:
        self.inv: Inventory = load_inventory(inventory)
        self.store = Path(store or REPO_ROOT / "store")
        self.console = console or Console()
        self.spark_master = spark_master
        self.use_spark = use_spark
        self.cluster: ReproCluster | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="zkfence-repro-"))
        self.cold_s: float | None = None
        self._zk: Any = None
        self._spark_future: Any = None
        self.T = self.inv.agents.session_timeout_ms / 1000.0

    def say(self, msg: str) -> None:
        self.console.print(msg)

    # -- cluster ---------------------------------------------------------------------------------
    def up(self, scenario: Scenario | None = None) -> float:
        """Start the cluster (cold). A scenario's ``zk_overrides`` apply to the ensemble it starts."""
        if scenario is not None and scenario.zk_overrides:
            from dataclasses import replace

            self.inv.zookeeper = replace(self.inv.zookeeper, **scenario.zk_overrides)
        t = time.monotonic()
        run_id = f"repro-{uuid.uuid4().hex[:8]}"
        self.cluster = ReproCluster(self.inv, self.scratch / "cluster", run_id,
                                    log=lambda m: self.say(f"  [dim]{m}[/]"))
        self.cluster.start()
        self.cold_s = time.monotonic() - t
        self.say(f"[bold]cluster up[/] in {self.cold_s:.1f}s (cold): ZooKeeper {self.cluster.ensemble.modes()}")
        return self.cold_s

    def warm_spark(self) -> None:
        if self._spark_future is None:
            from checkers.spark import start_spark_in_background

            self._spark_future = start_spark_in_background(self.spark_master)

    def spark(self) -> Any:
        self.warm_spark()
        return self._spark_future.result()

    def direct_zk(self) -> Any:
        if self._zk is None:
            assert self.cluster is not None
            self._zk = self.cluster.zk()
        return self._zk

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.teardown()
            self.cluster = None
        import shutil

        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> ReproSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset_zk(self) -> None:
        """Leave only /zookeeper: previous runs' brokers, controller, topics (orphans included) go."""
        zk = self.direct_zk()
        for child in zk.get_children("/"):
            if child == "zookeeper":
                continue
            for _ in range(5):
                try:
                    zk.delete(f"/{child}", recursive=True)
                    break
                except Exception:  # noqa: BLE001 - an ephemeral reappearing mid-delete: try again
                    time.sleep(0.1)

    def _clean_agent_files(self) -> None:
        assert self.cluster is not None
        for node in self.inv.brokers:
            wd = self.cluster.node_workdir(node)
            try:
                self.cluster.remotes[node.name].run(
                    f"rm -f {shlex.quote(wd)}/events.jsonl {shlex.quote(wd)}/agent.log && "
                    f"rm -rf {shlex.quote(wd)}/data", check=False)
            except RemoteError:
                pass
        self.cluster.agents.clear()

    def _collect(self, run_dir: Path) -> None:
        assert self.cluster is not None
        for agent in self.cluster.agents.values():
            for remote_path, local in (
                (agent.events_path, run_dir / "events" / f"agent-{agent.broker_id}.jsonl"),
                (agent.logfile, run_dir / "logs" / f"{agent.node.name}-agent.log"),
            ):
                try:
                    agent.remote.get(remote_path, local)
                except (OSError, RemoteError):
                    pass

    # -- one run -----------------------------------------------------------------------------------
    def run(self, scenario: Scenario, fixed: bool) -> RunResult:
        if self.cluster is None:
            self.up(scenario)
        assert self.cluster is not None
        cluster = self.cluster
        t_start = time.monotonic()
        test = f"repro-{scenario.id}{'-fixed' if fixed else ''}"
        run_dir = new_run_dir(self.store, test)
        run_id = f"{test}-{run_dir.name}"
        cluster.run_id = run_id
        toggles = scenario.fixed_toggles if fixed else scenario.bug_toggles
        write_json(run_dir / "run.json", {
            "run_id": run_id, "test": test, "scenario": scenario.id, "jira": scenario.jira, "fixed": fixed,
            "toggles": toggles, "brokers": scenario.brokers, "extra": scenario.extra,
            "expected": "clean" if fixed else f"anomaly from {', '.join(scenario.checkers)}",
            "session_timeout_ms": self.inv.agents.session_timeout_ms, "margin_ms": scenario.margin_ms,
        })
        events_dir = run_dir / "events"
        harness_ev = EventWriter(events_dir / "harness.jsonl", "harness", run_id)
        nemesis_ev = EventWriter(events_dir / "nemesis.jsonl", "nemesis", run_id)
        observer_ev = EventWriter(events_dir / "observer.jsonl", "observer", run_id)
        cluster.config_overrides = {}
        self.say(f"[bold]run[/] {scenario.id} {'[green]--fixed[/]' if fixed else '[red](bug)[/]'} "
                 f"toggles {toggles}  → {run_dir}")
        if scenario.needs_spark or self.use_spark:
            self.warm_spark()
        from nemesis.links import LinkNemesis

        self._clean_agent_files()
        self.reset_zk()
        observer = BrokerObserver(cluster.ensemble.connect_string, scenario.brokers, observer_ev)
        runner = NemesisRunner(cluster, nemesis_ev, [LinkNemesis()])
        ctx = RunContext(self, scenario, fixed, run_id, run_dir, harness_ev, runner, observer, time.monotonic(),
                         self.T)
        error: str | None = None
        phases: dict[str, float] = {}
        mark = time.monotonic()

        def lap(name: str) -> None:
            nonlocal mark
            now = time.monotonic()
            phases[name] = round(now - mark, 2)
            mark = now

        try:
            observer.start()
            runner.setup()
            scenario.setup(ctx)
            cluster.start_agents(toggles=toggles, brokers=scenario.brokers,
                                 extra={"controlled_shutdown": False, **scenario.extra})
            epochs = cluster.wait_registered(scenario.brokers, timeout=30)
            ctx.t0 = time.monotonic()
            lap("setup")
            harness_ev.emit("run_start", brokers=sorted(epochs), scenario=scenario.id, fixed=fixed, toggles=toggles)
            scenario.play(ctx)
            lap("play")
            live = sorted(b for b in on_nodes(list(cluster.agents.values()), _alive) if b is not None)
            observer.final_snapshot()
            harness_ev.emit("run_end", live_brokers=live)
        except Exception as e:  # noqa: BLE001 - recorded; the run's outcome is then "no match"
            error = f"{type(e).__name__}: {e}"
            harness_ev.emit("run_error", error=error)
            self.say(f"  [red]error[/] {error}")
        finally:
            try:
                # SIGKILL: events are flushed per line and nothing after run_end is checked; the
                # sessions left behind are removed by the next run's ZooKeeper reset.
                on_nodes(list(cluster.agents.values()), _kill)
            except Exception as e:  # noqa: BLE001
                self.say(f"  [red]stopping agents[/] {e}")
            self._collect(run_dir)
            for fn in reversed(ctx.cleanups):
                try:
                    fn()
                except Exception as e:  # noqa: BLE001
                    self.say(f"  [red]cleanup[/] {e}")
            try:
                scenario.teardown(ctx)
            finally:
                runner.teardown()
                observer.stop()
                for w in (harness_ev, nemesis_ev, observer_ev):
                    w.close()
        lap("stop+collect")
        sources = [read_events(p) for p in sorted(events_dir.glob("*.jsonl"))]
        write_history(merge(sources), run_dir / "history.jsonl")
        from workloads.repro.verdict import evaluate

        results = evaluate(self, scenario, run_dir / "history.jsonl")
        lap("check")
        write_json(run_dir / "results.json", results)
        verdicts = {name: results["checkers"].get(name, {}).get("valid", "unknown") for name in scenario.checkers}
        reproduced = any(v is False for v in verdicts.values())
        clean = all(v is True for v in verdicts.values())
        matched = error is None and (clean if fixed else reproduced)
        anomalies = [a for a in results.get("anomalies", []) if a.get("checker") in scenario.checkers]
        write_json(run_dir / "repro.json", {"scenario": scenario.id, "fixed": fixed, "reproduced": reproduced,
                                            "matched": matched, "verdicts": verdicts, "error": error})
        return RunResult(scenario.id, fixed, run_dir, reproduced, matched, verdicts, anomalies,
                         time.monotonic() - t_start, error, phases)


def _alive(agent: Any) -> int | None:
    """Broker id when its process is alive (one remote command, zombies and stopped count as dead)."""
    pf = shlex.quote(agent.pidfile)
    res = agent.remote.run(f"test -f {pf} && ps -o stat= -p $(cat {pf}) 2>/dev/null", timeout=10)
    stat = res.stdout.strip()
    return agent.broker_id if stat and stat[0] not in "ZT" else None


def _kill(agent: Any) -> None:
    pf = shlex.quote(agent.pidfile)
    agent.remote.run(f"test -f {pf} && p=$(cat {pf}) && (kill -KILL -- -$p 2>/dev/null || kill -KILL $p 2>/dev/null)"
                     f"; rm -f {pf}", timeout=10)


def load_history(path: Path) -> list[dict[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out
