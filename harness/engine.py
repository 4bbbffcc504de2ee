"""The run engine: one test (``harness.spec.TestSpec``) → one stored, checked run.

Every command that runs anything (``run``, ``hunt``, ``repro``) goes through ``Engine.run``:

1. **cluster**: start one (sshd, ZooKeeper, Toxiproxy) or reuse the warm one when the test has the
   same shape (ZooKeeper reset, agents' files removed);
2. **setup**: event writers, the observer, the nemesis runner (heal at setup), the agents with the
   test's toggles, all registered;
3. **play**: ``run_start``; the workload's clients, the nemesis schedule and the test's script, until
   the time limit; then, unless the test says otherwise, a final heal and T + margin + 1 s;
   ``run_end`` with the live brokers (``base.components.live``: the one definition);
4. **collect**: agents stopped (SIGTERM, or SIGKILL after run_end), their events and logs and the
   servers' logs downloaded, every source merged into ``history.jsonl``;
5. **check**: the test's checkers over the history (``checkers.project.check_histories``), written
   to ``results.json``; the outcome compared with the test's expectation.

Teardown (nemesis heal, observer, per-run proxies, the cluster unless kept warm) is guaranteed on
success, error and Ctrl-C/SIGTERM. Its effects on the world (``harness.effects``) are injectable so the
engine is unit-tested with fakes.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from base.components import live
from base.errors import EnvironmentFailed, RunInterrupted, exit_code_for
from base.inventory import Inventory
from base.localstate import ENGINE_PREFIX, owner_prefix
from base.remote import on_nodes
from base.wait import wait_until
from harness.context import RunContext
from harness.effects import Effects
from harness.outputs import writable_dir
from harness.phases import Lap, current_phase, play_covers_spark_start, sigterm_as_interrupt
from harness.progress import LiveLine, OpsRate, progress_line
from harness.spec import ANOMALY, TestSpec
from harness.store import new_run_dir, sources_of, write_json
from harness.zkversion import zk_version
from history import EventWriter, merge, write_history
from nemesis.base import NemesisRunner
from workloads.base import WorkloadRunner

REPO_ROOT = Path(__file__).resolve().parent.parent
RESET_TIMEOUT_S = 10.0  # a warm cluster whose ZooKeeper does not answer the reset in this long is replaced



@dataclass
class RunOutcome:
    spec: TestSpec
    run_dir: Path
    results: dict[str, Any]
    error: str | None = None
    wall_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    ops: dict[str, int] = field(default_factory=dict)  # client op completions by type
    # The run failed for a reason of the harness's own (a bug), not the environment (an unreachable
    # node, a component that did not come up): exit 255 rather than the verdict's code.
    crashed: bool = False

    @property
    def valid(self) -> bool | str:
        return self.results.get("valid", "unknown")

    @property
    def verdicts(self) -> dict[str, Any]:
        """Checker → verdict, for the checkers the expectation names (all when it names none)."""
        checkers = self.results.get("checkers", {})
        names = self.spec.expect.checkers if self.spec.expect and self.spec.expect.checkers else list(checkers)
        return {n: checkers.get(n, {}).get("valid", "unknown") for n in names}

    @property
    def reproduced(self) -> bool:
        """An anomaly from the expectation's checkers (from any checker when it names none)."""
        return any(v is False for v in self.verdicts.values())

    @property
    def story_gaps(self) -> list[str]:
        """Why the script could not tell its story as written (``RunContext.gap``); empty when it did."""
        return list(self.results.get("story_gaps", []))

    @property
    def matched(self) -> bool:
        """The run showed what the test expects; without an expectation, it was valid. A clean
        verdict from a story that was not told (``story_gaps``) shows nothing: not matched."""
        if self.error is not None:
            return False
        if self.spec.expect is None or self.spec.expect.outcome != ANOMALY:
            return all(v is True for v in self.verdicts.values()) and not self.story_gaps
        return self.reproduced

    @property
    def anomalies(self) -> list[dict[str, Any]]:
        names = set(self.verdicts)
        return [a for a in self.results.get("anomalies", []) if a.get("checker") in names]

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.valid)


class Engine:
    """Runs tests on a cluster it owns. With ``keep_warm`` the cluster stays up between runs of
    the same shape (``TestSpec.cluster_shape``); ``close()`` (or the ``with`` block) tears it down."""

    def __init__(self, inventory: Inventory, store: str | Path | None = None, console: Console | None = None,
                 spark_master: str | None = None, keep_warm: bool = False, effects: Effects | None = None,
                 on_faults: Callable[[list[str]], None] | None = None, check_server: bool = True) -> None:
        from checkers.project import check_preflight

        check_preflight(spark_master)  # a master that cannot take the check fails now, not after the run
        self.inv = inventory
        # Told the active faults ("partition n1,n2") whenever the set changes during a run's play, so a
        # campaign can show the current fault without a second copy of the schedule's clock.
        self.on_faults = on_faults
        self.store = writable_dir(store or REPO_ROOT / "store", "--store")
        self.console = console or Console()
        self.spark_master = spark_master
        self.keep_warm = keep_warm
        self.use_check_server = check_server  # False: `--no-server`, every check in this process
        self.effects = effects or Effects.real()
        self.T = inventory.agents.session_timeout_ms / 1000.0
        self.cluster: Any = None
        self.cold_s: float | None = None
        self._shape: tuple[Any, ...] | None = None
        self._scratch = Path(tempfile.mkdtemp(prefix=owner_prefix(ENGINE_PREFIX)))
        self._scratch_kept = False  # a cluster that could not be torn down leaves it to `harness teardown`
        self._spark_future: Any = None  # this engine's own session, once started
        self._check_began = threading.Event()
        self._zk: Any = None
        self._teardown: threading.Thread | None = None  # a cluster being torn down while a run checks
        self.missing_sources: list[str] = []  # the last run's sources whose events could not be collected
        self.error_is_environment = False  # the last run's error came from a node or component, not a bug

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._drop_cluster()
        if not self._scratch_kept:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def say(self, msg: str) -> None:
        self.console.print(msg, highlight=False)

    def warm_spark(self) -> None:
        """Start the Spark JVM in the background (it takes ~10 s; the cluster comes up meanwhile)."""
        if self._spark_future is None:
            from checkers.project import warm_up, warm_up_wanted
            from checkers.spark import start_spark_in_background

            # Run-sized history: a JVM tuned for start-up (checkers.spark.QUICK_JVM), its JIT warmed on a
            # built-in history while the cluster plays (what it saves: bench/RESULTS.md). Off with
            # HARNESS_SPARK_WARM_UP=off: a machine whose cores the run needs, the suite's cold engines.
            then = functools.partial(warm_up, cancelled=self._check_began.is_set) if warm_up_wanted() else None
            self._spark_future = start_spark_in_background(self.spark_master, quick=True, then=then)

    @property
    def spark_started(self) -> bool:  # a session of its own, started or starting
        return self._spark_future is not None

    def spark(self) -> Any:
        self.warm_spark()
        self._check_began.set()  # the warm-up stops after its current checker: this check compiles the rest
        return self._spark_future.result()

    def _drop_cluster_in_background(self) -> None:
        """Tear the cluster down on a thread while the run merges and checks its history: stopping
        ZooKeeper, Toxiproxy and sshd takes about a second, and the check needs none of them.
        ``run`` waits for it before it returns (on error and Ctrl-C too), so no other method sees it."""
        self._teardown = threading.Thread(target=self._drop_cluster, name="zkfence-teardown")
        self._teardown.start()

    def _drop_cluster(self) -> None:
        if self._zk is not None:
            self._zk = None  # closed by the cluster's teardown
        if self.cluster is not None:
            if self.cluster.teardown() is False:  # pid files under the scratch dir name what still runs
                self._scratch_kept = True
            self.cluster = None
            self._shape = None

    def up(self, spec: TestSpec, zkproxy_events: Path | None = None) -> Any:
        """A cluster for ``spec``: the warm one when the shape matches, else a new one (cold)."""
        if self.cluster is not None and self.keep_warm and self._shape == spec.cluster_shape() \
                and spec.zkproxy == "off":
            try:
                self._reset()
                return self.cluster
            except Exception as e:  # noqa: BLE001 - a warm cluster that died (killed by `harness teardown
                # --force`, its ZooKeeper gone) is replaced, not waited on for ever
                self.say(f"  [yellow]the warm cluster is unusable ({type(e).__name__}: {e}); starting a new one[/]")
        self._drop_cluster()
        inv = self.inv
        if spec.zk_overrides:
            from dataclasses import replace

            inv = replace(inv, zookeeper=replace(inv.zookeeper, **spec.zk_overrides))
        t = time.monotonic()
        cluster_id = f"{spec.name}-{uuid.uuid4().hex[:8]}"
        self.cluster = self.effects.cluster(inv, self._scratch / cluster_id, cluster_id,
                                            lambda m: self.say(f"  [dim]{m}[/]"))
        self._shape = spec.cluster_shape()
        self.cluster.start(zkproxy_events=zkproxy_events, zkproxy_seed=spec.seed or 0,
                           zkproxy_max_frame=spec.zkproxy_max_frame)
        self.cold_s = time.monotonic() - t
        self.say(f"[bold]cluster up[/] in {self.cold_s:.1f}s: ZooKeeper {self.cluster.ensemble.modes()}")
        return self.cluster

    def warm(self, spec: TestSpec) -> float:
        """Start what ``spec``'s runs need before the first one (Spark, the cluster); returns the
        cluster's cold start time. The runs then find both warm."""
        self.effects.prepare_check(self, spec)
        self.up(spec)
        return self.cold_s or 0.0

    def zk(self) -> Any:
        """The engine's own ZooKeeper client (direct, never faulted)."""
        if self._zk is None:
            self._zk = self.cluster.zk()
        return self._zk

    def _reset(self) -> None:
        """Between runs on a warm cluster: only /zookeeper left in ZooKeeper, no agent's or broker's files."""
        zk = self.zk()
        for child in zk.get_children_async("/").get(timeout=RESET_TIMEOUT_S):  # kazoo's own waits for ever
            if child != "zookeeper":
                # an ephemeral of a dying session can reappear mid-delete: try again
                wait_until(lambda c=child: _try_delete(zk, f"/{c}"), 2.0)
        self.cluster.reset_node_files()
        self.cluster.agents.clear()

    # -- one run ---------------------------------------------------------------------------------
    def run(self, spec: TestSpec) -> RunOutcome:
        try:
            return self._run(spec)
        finally:
            if self._teardown is not None:
                self._teardown.join()
                self._teardown = None

    def _run(self, spec: TestSpec) -> RunOutcome:
        t_start = time.monotonic()
        seed = spec.seed if spec.seed is not None else random.SystemRandom().randrange(2**31)
        spec.seed = seed
        run_dir = new_run_dir(self.store, spec.name)
        run_id = f"{spec.name}-{run_dir.name}"
        write_json(run_dir / "run.json", {**_run_json(spec, run_id, self.inv), "scratch": str(self._scratch)})
        if not play_covers_spark_start(spec):
            self.effects.prepare_check(self, spec)
        events_dir = run_dir / "events"
        phases: dict[str, float] = {}
        lap = Lap(phases)
        error: str | None = None
        ops: dict[str, int] = {}
        interrupted: str | None = None
        self.missing_sources: list[str] = []
        self.story_gaps: list[str] = []  # RunContext.gap
        self.error_is_environment = False
        with sigterm_as_interrupt():
            try:
                cluster = self.up(spec, events_dir / "zkproxy.jsonl" if spec.zkproxy == "all" else None)
                cluster.run_id = run_id
                cluster.record_run_dir(run_dir)  # `harness teardown` salvages events into it after a crash
                error, ops = self._run_phases(cluster, spec, run_id, run_dir, lap)
            except KeyboardInterrupt:
                interrupted = f"interrupted during {current_phase(phases)}"
                error = interrupted
            finally:
                if interrupted:
                    self._drop_cluster()
                elif not self.keep_warm:
                    self._drop_cluster_in_background()
        if interrupted:
            self.say(f"[bold yellow]{interrupted}[/]: healed and torn down; checking the partial history")
        n = write_history(merge(sources_of(events_dir, run_id)), run_dir / "history.jsonl")
        lap("collect")
        self.say(f"[bold]collect[/] {n} events → {run_dir / 'history.jsonl'}")
        if n:
            try:
                results = self.effects.check(self, str(run_dir / "history.jsonl"), spec)
            except EnvironmentFailed as e:  # no verdict, but the history stays, to be checked later
                self.say(f"  [red]check failed[/] {e}; the history is kept: harness check {run_dir}")
                results = {"valid": "unknown", "checkers": {}, "anomalies": [], "stats": {"events": n},
                           "check_error": str(e)}
        else:
            results = {"valid": "unknown", "checkers": {}, "anomalies": [], "stats": {"events": 0}}
        results.update({"feeds": spec.feeds} if spec.feeds else {})  # real brokers: fed, or unknown and why
        if ops and spec.workload.client is not None:  # a run with a workload (none has no client)
            stats = results.setdefault("stats", {})
            stats["client_ops"] = ops
            stats["client_operations"] = sum(ops.values())
        if interrupted:
            results["interrupted"] = interrupted
        if self.story_gaps:
            results["story_gaps"] = self.story_gaps
        if error is not None:
            results["error"] = error
            if results.get("valid") is True:  # a run that did not complete cannot be shown clean
                results["valid"] = "unknown"
        if self.missing_sources:
            # A history without some agent's events cannot show that nothing went wrong there.
            results["missing_sources"] = self.missing_sources
            if results.get("valid") is True:
                results["valid"] = "unknown"
            self.say(f"  [yellow]events missing[/] from {', '.join(self.missing_sources)}: a clean verdict "
                     "is unknown")
        write_json(run_dir / "results.json", results)
        lap("check")
        outcome = RunOutcome(spec, run_dir, results, error, time.monotonic() - t_start, phases, ops,
                             crashed=error is not None and not self.error_is_environment and not interrupted)
        if spec.expect is not None:
            write_json(run_dir / "outcome.json", {"expected": spec.expect.describe(), "matched": outcome.matched,
                                                  "reproduced": outcome.reproduced, "verdicts": outcome.verdicts,
                                                  "error": error})
        self._write_report(run_dir)
        if interrupted:
            raise RunInterrupted(str(run_dir), outcome.valid)
        return outcome

    def _write_report(self, run_dir: Path) -> None:
        """report.html next to results.json; a report that fails is a warning, never a lost run."""
        try:
            from harness.report import write_report

            path, problem = write_report(run_dir)
            self.say(f"[bold]report[/] {path}")
            if problem is not None:
                self.say(f"[yellow]warning[/] the report stops at {problem}")
        except Exception as e:  # noqa: BLE001 - the verdict is on disk already; the report is a view of it
            self.say(f"[yellow]warning[/] report not written: {type(e).__name__}: {e}")

    def _run_phases(self, cluster: Any, spec: TestSpec, run_id: str, run_dir: Path,
                    lap: Lap) -> tuple[str | None, dict[str, int]]:
        events_dir = run_dir / "events"
        writers = {src: EventWriter(events_dir / f"{src}.jsonl", src, run_id)
                   for src in ("harness", "nemesis", "observer", "client")}
        brokers = spec.brokers or [b.broker_id for b in self.inv.brokers]
        proxy = None
        if spec.pipeline_zkproxy:
            proxy = self.effects.wire_proxy(cluster, events_dir / "zkproxy.jsonl", run_id,
                                            max_frame=spec.zkproxy_max_frame)
        runner = NemesisRunner(cluster, writers["nemesis"], self.effects.nemeses(cluster, spec, proxy))
        observer = self.effects.observer(cluster, brokers, writers["observer"])
        ctx = RunContext(self, spec, cluster, runner, writers, run_id, run_dir, brokers)
        workload: WorkloadRunner | None = None
        error: str | None = None
        try:
            observer.start()
            if spec.kafka is not None and hasattr(observer, "watch_partition_states"):
                observer.watch_partition_states()  # a real controller writes no partition_state of its own
            runner.setup()
            if spec.kafka is not None:  # real Kafka brokers: a JVM start takes longer than an agent's
                cluster.start_kafka(spec.kafka, brokers=spec.brokers, kafkaproxy_seed=spec.seed or 0,
                                    kafkaproxy_events=events_dir / "kafkaproxy.jsonl" if spec.kafkaproxy else None)
                epochs = cluster.wait_registered(brokers, timeout=240)
            else:
                overrides = {b: {"zk_pipeline_connect": proxy.connect_string}
                             for b in spec.pipeline_zkproxy} if proxy else {}
                cluster.start_agents(toggles=spec.toggles, brokers=spec.brokers, extra=spec.agent_extra,
                                     config_overrides=overrides)
                epochs = cluster.wait_registered(brokers, timeout=60)
            lap("setup")
            self.effects.prepare_check(self, spec)  # unless it already started (play_covers_spark_start)
            self.say(f"[bold]run[/] {run_id}  seed={spec.seed}  brokers registered with epochs {epochs}")
            writers["harness"].emit("run_start", brokers=sorted(epochs), test=spec.name, toggles=spec.toggles,
                                    schedule=spec.schedule.name if spec.schedule else None, **spec.info)
            ctx.t0 = time.monotonic()
            workload = WorkloadRunner(spec.workload, ctx, writers["client"])
            workload.start(spec.time_limit)
            if spec.script is not None:
                spec.script(ctx)
            if spec.schedule is not None or spec.script is None:
                self._play(ctx, workload)
            workload.stop()
            lap("play")
            if spec.recovery:
                self._recover(runner, spec)
                lap("recover")
            if spec.workload.final:
                with self.console.status("final read: the workload's final operations"):
                    workload.final()
                lap("final")
            agents = sorted(cluster.agents.items())
            live_brokers = [b for (b, _), up in zip(agents, on_nodes([a for _, a in agents], live), strict=True) if up]
            observer.final_snapshot()
            writers["harness"].emit("run_end", live_brokers=live_brokers)
        except Exception as e:  # noqa: BLE001 - recorded with the run; the history is still collected
            error = f"{type(e).__name__}: {e}"
            self.error_is_environment = isinstance(e, EnvironmentFailed | TimeoutError)
            writers["harness"].emit("run_error", error=error)
            self.say(f"  [red]error[/] {error}")
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: recorded, then collected and healed below
            writers["harness"].emit("run_interrupted", reason=f"interrupted during {current_phase(lap.phases)}")
            raise
        finally:
            if workload is not None:
                workload.stop()
            ctx.close_clients()
            self.missing_sources = self._end(cluster, spec, runner, observer, proxy, writers, run_dir)
        return error, workload.summary() if workload is not None else {}

    def _end(self, cluster: Any, spec: TestSpec, runner: NemesisRunner, observer: Any, proxy: Any,
             writers: dict[str, EventWriter], run_dir: Path) -> list[str]:
        """Stop the agents first and retire them from the cluster (the nemesis heal then leaves them
        down: their run is over), collect, then heal. Returns the sources whose events are missing."""
        stopped = self._attempt("agents", cluster.kill_agents if spec.agents_end == "kill" else cluster.stop_agents)
        collected: dict[str, Any] = {}
        if not self._attempt("collect", lambda: collected.update(cluster.collect(run_dir) or {})):
            collected["missing"] = [f"agent:{b}" for b in sorted(cluster.agents)]
        self._attempt("retire agents", lambda: cluster.retire_agents(kill=not stopped))
        self._attempt("nemesis", runner.teardown)
        self._attempt("observer", observer.stop)
        if proxy is not None:
            self._attempt("wire proxy", proxy.stop)
        for w in writers.values():
            w.close()
        return list(collected.get("missing", []))

    def _attempt(self, what: str, fn: Callable[[], Any]) -> bool:
        """One teardown step: a failure is reported and the rest of the teardown still runs."""
        try:
            fn()
            return True
        except Exception as e:  # noqa: BLE001
            self.say(f"  [red]{what}[/] {type(e).__name__}: {e}")
            return False

    def _recover(self, runner: NemesisRunner, spec: TestSpec) -> None:
        """A final heal, then wait until T + margin + 1 s after the last fault ended: the heal itself
        when it undid something, else the fault that ended last (``registration_liveness`` times its
        window from there; a heal with nothing to undo is recorded ``noop`` and ends nothing)."""
        recovery = self.T + spec.margin_ms / 1000.0 + 1.0
        if runner.heal("final") or runner.fault_ended_at is None:
            wait, since = recovery, "the final heal"
        else:
            wait, since = max(0.0, runner.fault_ended_at + recovery - time.time()), "the last fault ended"
        if wait > 0:
            with self.console.status(f"recover: {wait:.1f}s (T + margin + 1s after {since})"):
                time.sleep(wait)

    def _play(self, ctx: RunContext, workload: WorkloadRunner) -> None:
        """The schedule's steps at their times (steps past the limit still run) while clients run."""
        spec = ctx.spec
        pending = spec.schedule.sorted_steps() if spec.schedule is not None else []
        rate = OpsRate()
        rate.add(0.0, 0)  # the clients start with the play: the first line's rate counts from there
        told: list[str] | None = None
        with LiveLine(self.console, time.monotonic).running("run") as status:
            while True:
                elapsed = time.monotonic() - ctx.t0
                while pending and pending[0].at <= elapsed:
                    step = pending.pop(0)
                    ok = ctx.runner.invoke(step.op)
                    self.say(f"  [yellow]{elapsed:6.1f}s[/] nemesis {step.op.f} {step.op.phase} "
                             f"{','.join(step.op.targets)}{'' if ok else ' [red](failed, recorded as info)[/]'}")
                if elapsed >= spec.time_limit and not pending:
                    break
                faults = [f"{a.f} {','.join(a.targets)}" for a in ctx.runner.active]
                if self.on_faults is not None and faults != told:
                    told = faults
                    self.on_faults(faults)
                counts = workload.summary()
                status.update(progress_line(elapsed, spec.time_limit, faults, counts,
                                            rate.add(elapsed, sum(counts.values()))))
                time.sleep(0.1)


# -- helpers ---------------------------------------------------------------------------------------
def _try_delete(zk: Any, path: str) -> bool:
    try:
        zk.delete(path, recursive=True)
        return True
    except Exception:  # noqa: BLE001 - NotEmpty while an ephemeral reappears: the caller retries
        return False


def _run_json(spec: TestSpec, run_id: str, inv: Inventory) -> dict[str, Any]:
    schedule = None
    if spec.schedule is not None:
        schedule = {"name": spec.schedule.name, "steps": [
            {"at": s.at, "f": s.op.f, "phase": s.op.phase, "targets": s.op.targets, "params": s.op.params}
            for s in spec.schedule.sorted_steps()]}
    inventory = asdict(inv)
    inventory["path"] = str(inv.path)
    return {
        "run_id": run_id, "test": spec.name, "seed": spec.seed, "toggles": spec.toggles, "brokers": spec.brokers,
        "agent_extra": spec.agent_extra, "zk_overrides": spec.zk_overrides, "zkproxy": spec.zkproxy,
        "kafkaproxy": spec.kafkaproxy, "pipeline_zkproxy": list(spec.pipeline_zkproxy), "workload": spec.workload.name,
        "kafka": asdict(spec.kafka) if spec.kafka is not None else None,
        "script": getattr(spec.script, "__qualname__", None), "time_limit": spec.time_limit,
        "recovery": spec.recovery, "checkers": list(spec.checkers) if spec.checkers else None,
        "expected": spec.expect.describe() if spec.expect else None, "margin_ms": spec.margin_ms,
        "session_timeout_ms": inv.agents.session_timeout_ms, "schedule": schedule,
        "zk_version": zk_version(inv.zookeeper), **spec.info,
        "inventory": json.loads(json.dumps(inventory, default=str)),
    }

