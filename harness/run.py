"""One run, end to end: inventory → cluster → agents → nemesis schedule → history → Spark
verdict → store. Teardown (and a final heal) is guaranteed on success, error and Ctrl-C.

Phases: cluster up · run (live fault line) · recover · collect · check.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.cluster import Cluster
from harness.errors import UsageError, exit_code_for
from harness.inventory import Inventory, load_inventory
from harness.observer import BrokerObserver
from harness.store import new_run_dir, write_json
from history import EventWriter, merge, read_events, write_history
from nemesis.base import Nemesis, NemesisRunner
from nemesis.schedule import Schedule, isolate_schedule

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class RunOptions:
    inventory: str | None = None
    time_limit: float = 20.0
    store: str = str(REPO_ROOT / "store")
    spark_master: str | None = None
    test: str = "isolate-broker"
    toggles: dict[str, Any] = field(default_factory=dict)
    target: int | None = None  # broker id to isolate; random (seeded) when None
    seed: int | None = None
    margin_ms: int = 3000
    schedule: Schedule | None = None
    agent_extra: dict[str, Any] = field(default_factory=dict)
    zkproxy: bool = False  # route agent→ZooKeeper traffic through the wire proxy (fault "zk_rules")
    package_faults: list[str] = field(default_factory=list)  # random package of these faults (seeded)
    package_interval: float = 5.0


@dataclass
class RunOutcome:
    valid: bool | str
    run_dir: Path
    results: dict[str, Any]

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.valid)


def _sigterm_as_interrupt() -> Callable[[], None]:
    """Make SIGTERM unwind like Ctrl-C so ``finally`` blocks tear everything down."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, previous)


def default_nemeses(cluster: Cluster | None = None) -> list[Nemesis]:
    from nemesis.registry import default_nemeses as kit

    nemeses = kit()
    if cluster is not None and cluster.zkproxy is not None:
        from nemesis.zkproxy_faults import ZkProxyNemesis

        nemeses.append(ZkProxyNemesis(cluster.zkproxy.client))
    return nemeses


def execute(opts: RunOptions, console: Console | None = None) -> RunOutcome:
    console = console or Console()
    inv = load_inventory(opts.inventory)
    if opts.time_limit <= 0:
        raise UsageError(f"--time-limit: must be > 0 seconds, got {opts.time_limit}")
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
    opts = replace(opts, seed=seed)
    rng = random.Random(seed)
    T = inv.agents.session_timeout_ms / 1000.0
    if opts.schedule is not None:
        schedule = opts.schedule
    elif opts.package_faults:
        schedule = _package(opts, seed)
    else:
        schedule = _default_schedule(inv, opts, rng, T)

    store = Path(opts.store)
    run_dir = new_run_dir(store, opts.test)
    run_id = f"{opts.test}-{run_dir.name}"
    scratch = Path(tempfile.mkdtemp(prefix="zkfence-run-"))
    write_json(run_dir / "run.json", {
        "run_id": run_id, "test": opts.test, "seed": seed, "scratch": str(scratch), "options": {**asdict(opts), "schedule": None},
        "schedule": {"name": schedule.name, "steps": [
            {"at": s.at, "f": s.op.f, "phase": s.op.phase, "targets": s.op.targets, "params": s.op.params}
            for s in schedule.sorted_steps()]},
        "inventory": _inventory_dict(inv),
    })

    from checkers.spark import start_spark_in_background

    spark_future = start_spark_in_background(opts.spark_master)
    events_dir = run_dir / "events"
    restore_sigterm = _sigterm_as_interrupt()
    console.print(f"[bold]run[/] {run_id}  seed={seed}  inventory={inv.path}")
    try:
        with Cluster(inv, scratch, run_id, log=lambda m: console.print(f"  [dim]{m}[/]")) as cluster:
            _run_phases(cluster, inv, opts, schedule, events_dir, run_id, console, T)
    finally:
        restore_sigterm()
        shutil.rmtree(scratch, ignore_errors=True)

    sources = [read_events(p) for p in sorted(events_dir.glob("*.jsonl"))]
    n = write_history(merge(sources), run_dir / "history.jsonl")
    console.print(f"[bold]collect[/] {n} events → {run_dir / 'history.jsonl'}")

    with console.status("check: waiting for Spark"):
        from checkers.project import check_project_histories

        spark = spark_future.result()
        console.print(f"[bold]check[/] on Spark {spark.sparkContext.master}: registration, epoch-fencing "
                      "invariants, zxid sweep")
        history = str(run_dir / "history.jsonl")
        results = check_project_histories(spark, [history], margin_ms=opts.margin_ms)[history]
    write_json(run_dir / "results.json", results)
    return RunOutcome(results["valid"], run_dir, results)


def _package(opts: RunOptions, seed: int) -> Schedule:
    """Jepsen-style combined package: each fault flip-flops at random intervals (seeded)."""
    from nemesis.packages import DEFAULT_TARGETS, package_schedule

    unknown = [f for f in opts.package_faults if f not in DEFAULT_TARGETS]
    if unknown:
        raise UsageError(f"--faults: {', '.join(unknown)} cannot be packaged (choose from "
                         f"{', '.join(DEFAULT_TARGETS)})")
    if opts.package_interval <= 0:
        raise UsageError(f"--interval: must be > 0 seconds, got {opts.package_interval}")
    return package_schedule(opts.package_faults, opts.package_interval, opts.time_limit, seed)


def _default_schedule(inv: Inventory, opts: RunOptions, rng: random.Random, T: float) -> Schedule:
    brokers = inv.brokers
    if opts.target is not None:
        try:
            node = inv.broker(opts.target)
        except KeyError:
            raise UsageError(f"--target: no broker {opts.target} in {inv.path}") from None
    else:
        node = rng.choice(brokers)
    warmup = min(2.0, opts.time_limit / 4)
    duration = 2 * T + 1.0  # longer than the session timeout, so the session expires
    if warmup + duration > opts.time_limit:
        raise UsageError(f"--time-limit: {opts.time_limit}s is too short to isolate a broker for "
                         f"{duration:.1f}s (2×T+1s) after a {warmup:.1f}s warm-up")
    return isolate_schedule(node.name, warmup, duration)


def _run_phases(cluster: Cluster, inv: Inventory, opts: RunOptions, schedule: Schedule, events_dir: Path,
                run_id: str, console: Console, T: float) -> None:
    harness_ev = EventWriter(events_dir / "harness.jsonl", "harness", run_id)
    nemesis_ev = EventWriter(events_dir / "nemesis.jsonl", "nemesis", run_id)
    observer_ev = EventWriter(events_dir / "observer.jsonl", "observer", run_id)
    observer: BrokerObserver | None = None
    runner: NemesisRunner | None = None
    try:
        with console.status("cluster up: sshd, ZooKeeper, Toxiproxy"):
            t0 = time.monotonic()
            cluster.start(zkproxy_events=events_dir / "zkproxy.jsonl" if opts.zkproxy else None,
                          zkproxy_seed=opts.seed or 0)  # resolved in execute()
            observer = BrokerObserver(cluster.ensemble.connect_string, [b.broker_id for b in inv.brokers],
                                      observer_ev)
            observer.start()
            cluster.start_agents(toggles=opts.toggles, extra=opts.agent_extra)
            epochs = cluster.wait_registered(timeout=60)
        console.print(f"[bold]cluster up[/] in {time.monotonic() - t0:.1f}s: ZooKeeper "
                      f"{cluster.ensemble.modes()}, brokers registered with epochs {epochs}")
        harness_ev.emit("run_start", brokers=sorted(epochs), schedule=schedule.name)

        runner = NemesisRunner(cluster, nemesis_ev, default_nemeses(cluster))
        runner.setup()
        _play(runner, schedule, opts.time_limit, console)
        runner.heal("final")
        recovery = T + opts.margin_ms / 1000.0 + 1.0
        with console.status(f"recover: waiting {recovery:.1f}s (T + margin + 1s) after the final heal"):
            time.sleep(recovery)
        live = sorted(b for b, a in cluster.agents.items() if a.running())
        observer.final_snapshot()
        harness_ev.emit("run_end", live_brokers=live)
        with console.status("collect: stopping agents, downloading events and logs"):
            cluster.stop_agents()
            cluster.collect(events_dir.parent)
    finally:
        if runner is not None:
            runner.teardown()
        if observer is not None:
            observer.stop()
        for w in (harness_ev, nemesis_ev, observer_ev):
            w.close()


def _play(runner: NemesisRunner, schedule: Schedule, time_limit: float, console: Console) -> None:
    start = time.monotonic()
    pending = schedule.sorted_steps()
    with console.status("run") as status:
        while True:
            elapsed = time.monotonic() - start
            while pending and pending[0].at <= elapsed:
                step = pending.pop(0)
                ok = runner.invoke(step.op)
                console.print(f"  [yellow]{elapsed:6.1f}s[/] nemesis {step.op.f} {step.op.phase} "
                              f"{','.join(step.op.targets)}{'' if ok else ' [red](failed, recorded as info)[/]'}")
            if elapsed >= time_limit and not pending:  # steps past the limit still run first
                break
            active = ", ".join(f"{a.f} {','.join(a.targets)}" for a in runner.active) or "none"
            status.update(f"run {elapsed:5.1f}/{time_limit:.0f}s · active faults: {active}")
            time.sleep(0.1)


def _inventory_dict(inv: Inventory) -> dict[str, Any]:
    d = asdict(inv)
    d["path"] = str(inv.path)
    return json.loads(json.dumps(d, default=str))
