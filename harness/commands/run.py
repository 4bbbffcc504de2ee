"""`harness run`: one test on the inventory's cluster, ending with a checked verdict.

The flags become a ``TestSpec`` (``spec_from_args``): the agents' toggles, a workload, and a
nemesis schedule — a scripted file (``--schedule``), a seeded random package (``--faults``) or by
default the walking skeleton's isolation of one broker for 2×T + 1 s. ``harness hunt`` builds its
tests with the same function.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
from pathlib import Path
from typing import Any

from rich.console import Console

from agent.config import ConfigError, parse_toggle_args
from base.bounds import (
    MAX_CONCURRENCY,
    MAX_INT32,
    MAX_MS,
    MAX_RATE,
    MAX_SCHEDULE_STEPS,
    MAX_SECONDS,
    MAX_SEED,
    MIN_INTERVAL_S,
    bounded_int,
    finite_float,
    names_list,
)
from base.errors import EXIT_CRASH, UsageError
from base.inventory import Inventory, load_inventory
from base.parsing import summary
from checkers.spark import add_master_flag
from harness.checkserver import add_no_server_flag
from harness.commands.kafkaflags import (
    KAFKA_MARGIN_MS,
    add_zk_client_args,
    fetch,
    kafka_brokers,
    kafka_target,
)
from harness.outputs import writable_file
from harness.spec import KafkaBrokers, TestSpec
from harness.terminal import output_console
from nemesis.schedule import Schedule, isolate_schedule
from workloads import DEFINITIONS, WORKLOADS
from workloads.base import Workload

DEFAULT_TEST = "isolate-broker"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="bring up the cluster, inject faults, check the history on Spark",
                       description=summary(__doc__))
    add_common_args(p)
    p.add_argument("--target", type=bounded_int(0, MAX_INT32), metavar="BROKER_ID", help="broker to isolate (default: seeded random)")
    p.add_argument("--seed", type=bounded_int(0, MAX_SEED), help="random seed (recorded in run.json)")
    p.add_argument("--schedule", metavar="FILE", help="scripted fault schedule (TOML) to replay instead of the default")
    p.add_argument("--faults", metavar="F1,F2", type=names_list,
                   help="random package of these faults instead of the default isolate (e.g. partition,kill,pause; "
                        "or episodes such as stale_control, lost_connect: docs/nemesis.md); seeded by --seed, with a "
                        "final heal and a recovery wait")
    p.add_argument("--interval", type=finite_float(MIN_INTERVAL_S, MAX_SECONDS), default=5.0, metavar="S",
                   help=f"mean seconds between a packaged fault's start and stop (default 5, at least {MIN_INTERVAL_S:g})")
    p.add_argument("--zkproxy", action="store_true",
                   help="route agent→ZooKeeper traffic through the ZooKeeper wire proxy (enables fault zk_rules)")
    p.add_argument("--kafkaproxy", action="store_true",
                   help="with --brokers kafka:VERSION: advertise each broker's inter-broker listener at the Kafka "
                        "wire proxy (its frames in the history, feeding the control-plane checkers; enables faults "
                        "hold_control, drop_control, delay_alter_partition, kafka_rules, which turn it on themselves)")
    p.add_argument("--workload", default="none", metavar="NAME",
                   help=f"client workload ({', '.join(WORKLOADS)}; default none)")
    add_workload_args(p)
    p.add_argument("--test", default=None, help="test name used in the store path")
    p.add_argument("--junit", metavar="FILE", help="also write the verdict as JUnit XML (one testcase: the run)")
    p.add_argument("--brokers", metavar="kafka:VERSION", default=None,
                   help="real Apache Kafka VERSION brokers (ZooKeeper mode) in place of the agents; checked by "
                        "the registration checkers, and by the queue checkers with --workload queue (through a "
                        f"Kafka client; no toggles; --margin-ms default {KAFKA_MARGIN_MS})")
    add_zk_client_args(p, "--brokers kafka:VERSION")
    p.set_defaults(func=run, margin_ms=None)  # None: 3000 for agents, KAFKA_MARGIN_MS for real brokers


def add_common_args(p: argparse.ArgumentParser, time_limit: float = 20.0) -> None:
    """Flags every command that runs tests shares (`run`, `hunt`)."""
    p.add_argument("--inventory", metavar="FILE", help="inventory TOML (default: inventory/local.toml)")
    p.add_argument("--time-limit", type=finite_float(0, MAX_SECONDS, lo_open=True), default=time_limit, metavar="S",
                   help=f"seconds of fault schedule (default {time_limit:g}, at most {MAX_SECONDS:g}); setup and "
                        "recovery come on top")
    p.add_argument("--store", metavar="DIR", default=None, help="store directory (default: ./store)")
    add_master_flag(p)
    add_no_server_flag(p, "check each run")
    p.add_argument("--toggle", action="append", default=[], metavar="NAME=VALUE",
                   help="agent bug toggle, repeatable (see `harness agent --help`)")
    p.add_argument("--margin-ms", type=bounded_int(0, MAX_MS, "ms"), default=3000,
                   help="liveness margin on top of the session timeout (default 3000)")
    p.add_argument("--zk", action="append", default=[], metavar="KEY=VALUE",
                   help="ZooKeeper ensemble setting on top of the inventory's, repeatable: tick_time_ms, init_limit, "
                        "sync_limit, min_session_timeout_ms, max_session_timeout_ms (e.g. sync_limit=100)")


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """--concurrency and --rate, and every option the workloads declare (``workloads.DEFINITIONS``)."""
    defaults = ", ".join(f"{d.concurrency} for {d.name}" for d in DEFINITIONS.values() if d.concurrency)
    p.add_argument("--concurrency", type=bounded_int(1, MAX_CONCURRENCY), default=None, metavar="N",
                   help=f"client processes of the workload (default: the workload's, {defaults})")
    p.add_argument("--rate", type=finite_float(0, MAX_RATE, lo_open=True, unit="ops/s"), default=None, metavar="OPS",
                   help="client operations per second across all processes (default: unthrottled)")
    for d in DEFINITIONS.values():
        for o in d.options:
            p.add_argument(o.flag, dest=o.name, default=o.default, choices=o.choices, type=o.type,
                           help=f"{o.help} (default {o.default})")


def workload_from_args(args: argparse.Namespace) -> Workload:
    name = getattr(args, "workload", "none")
    if name not in DEFINITIONS:
        raise UsageError(f"--workload: no workload {name!r} (known: {', '.join(WORKLOADS)})")
    concurrency, rate = getattr(args, "concurrency", None), getattr(args, "rate", None)
    if concurrency is not None and concurrency <= 0:
        raise UsageError(f"--concurrency: must be > 0, got {concurrency}")
    if rate is not None and not rate > 0:
        raise UsageError(f"--rate: must be > 0 ops/s, got {rate}")
    d = DEFINITIONS[name]  # a fresh workload: its generator keeps per-run state
    options = {o.name: getattr(args, o.name) for o in d.options if getattr(args, o.name, None) is not None}
    try:
        return d.make(concurrency, rate, options)
    except ValueError as e:  # a pair of options the workload refuses (each flag alone is argparse's)
        raise UsageError(str(e)) from None


def toggles_from_args(args: argparse.Namespace) -> dict[str, Any]:
    try:
        return parse_toggle_args(args.toggle)
    except ConfigError as e:
        raise UsageError(str(e)) from e


def spec_from_args(args: argparse.Namespace, inv: Inventory, schedule: Schedule | None = None) -> TestSpec:
    """The test a `run`-style command line describes; ``schedule`` overrides the flags' one."""
    if not 0 < args.time_limit <= MAX_SECONDS:  # also nan (a Namespace built by hand, not by the parser)
        raise UsageError(f"--time-limit: must be in (0, {MAX_SECONDS:g}] seconds, got {args.time_limit}")
    kafka = brokers_from_args(args, inv)
    if args.margin_ms is None:
        args.margin_ms = KAFKA_MARGIN_MS if kafka is not None else 3000
    if args.margin_ms < 0:
        raise UsageError(f"--margin-ms: must be >= 0, got {args.margin_ms}")
    workload = workload_from_args(args)
    toggles = toggles_from_args(args)
    zk = zk_from_args(args)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    name = getattr(args, "test", None) or DEFAULT_TEST
    if schedule is None:
        schedule, name = _schedule_from_args(args, inv, seed, name)
    workload = _workload_for(workload, kafka, args)
    kafkaproxy = _kafkaproxy(args, kafka, schedule)
    from nemesis.episodes import needs

    # an episode that loses a pipelined re-registration's reply needs every broker's pipelining
    # session on a per-run wire proxy (the kazoo sessions keep their Toxiproxy links); a real
    # broker has one ZooKeeper client, so all its connections go through the wire proxy
    pipelined = "pipeline_zkproxy" in needs(_fault_names(args))
    if kafka is not None:
        # what a real broker's log tells the checkers (its registrations: base.kafkalog), what the Kafka
        # proxy saw of the control plane (base.kafkawire), what the workload's Kafka client recorded;
        # every other checker is unknown, with why (checkers.kafka_feeds)
        from checkers.kafka_feeds import fed, kafka_feeds
        from checkers.project import select

        feeds = kafka_feeds(kafka.version, kafkaproxy=kafkaproxy, zkproxy=getattr(args, "zkproxy", False) or pipelined,
                            queue="queue_lost_write" in workload.checkers)
        fetch(kafka, "--brokers")  # last: every flag is judged before anything is downloaded
        return TestSpec(name=name if getattr(args, "test", None) else f"{name}-kafka-{kafka.version}",
                        zkproxy="all" if getattr(args, "zkproxy", False) or pipelined else "off", kafka=kafka,
                        kafkaproxy=kafkaproxy, workload=workload, schedule=schedule, time_limit=args.time_limit,
                        margin_ms=args.margin_ms, seed=seed,
                        checkers=fed(feeds), local_check=all(c.local for c in select(fed(feeds))),
                        feeds={n: f.as_dict() for n, f in feeds.items()}, agents_end="kill", zk_overrides=zk)
    pipeline = tuple(b.broker_id for b in inv.brokers) if pipelined else ()
    return TestSpec(name=name, toggles=toggles, zkproxy="all" if getattr(args, "zkproxy", False) else "off",
                    workload=workload, schedule=schedule, time_limit=args.time_limit, margin_ms=args.margin_ms,
                    seed=seed, pipeline_zkproxy=pipeline, zk_overrides=zk)


def _kafkaproxy(args: argparse.Namespace, kafka: KafkaBrokers | None, schedule: Schedule | None) -> bool:
    """Whether the run puts the Kafka wire proxy in front of its brokers: asked (``--kafkaproxy``) or
    needed by a fault of the schedule. Both are bad input on the agents, which do not speak Kafka's
    protocol (their own hooks: delay_request, hold_alter_partition)."""
    from nemesis.registry import kafka_only

    steps = {step.op.f for step in schedule.steps} if schedule is not None else set()
    used = sorted((steps | set(_fault_names(args))) & kafka_only())  # named: a package may draw it late
    if kafka is None:
        if used:
            where = "--faults" if getattr(args, "faults", None) else f"--schedule {args.schedule}"
            raise UsageError(f"{where}: {', '.join(used)} act on Kafka's wire protocol, through the Kafka proxy: "
                             "only with --brokers kafka:VERSION (on the agents: delay_request, hold_alter_partition)")
        if getattr(args, "kafkaproxy", False):
            raise UsageError("--kafkaproxy: the Kafka proxy sits on real brokers' inter-broker listeners: only with "
                             "--brokers kafka:VERSION")
        return False
    return bool(getattr(args, "kafkaproxy", False) or used)


def _workload_for(workload: Workload, kafka: KafkaBrokers | None, args: argparse.Namespace) -> Workload:
    """The workload with the client for what runs: the agents, or real Kafka brokers (its Kafka
    client; a workload without one speaks only the agents' protocol)."""
    if kafka is not None:
        if workload.client is not None and workload.kafka_client is None:
            usable = ", ".join(["none"] + [n for n, w in WORKLOADS.items() if w.kafka_client is not None])
            raise UsageError(f"--workload: the {workload.name} workload speaks the agents' protocol; with --brokers "
                             f"kafka:VERSION: {usable}")
        return dataclasses.replace(workload, client=workload.kafka_client)
    if workload.client is None and workload.kafka_client is not None:
        d = DEFINITIONS[workload.name]
        flags = " ".join(f"{o.flag} {getattr(args, o.name)}" for o in d.options
                         if getattr(args, o.name, None) not in (None, o.default))
        raise UsageError(f"{flags or '--workload ' + workload.name}: only with --brokers kafka:VERSION (the agents' "
                         f"{workload.name} client has no such mode)")
    return workload


def zk_from_args(args: argparse.Namespace) -> dict[str, int]:
    """``--zk KEY=VALUE`` flags as ``TestSpec.zk_overrides``."""
    from harness.zkoverrides import parse_zk_args

    try:
        return parse_zk_args(getattr(args, "zk", None) or [])
    except ValueError as e:
        raise UsageError(str(e)) from None


def _fault_names(args: argparse.Namespace) -> list[str]:
    return [f.strip() for f in args.faults.split(",") if f.strip()] if getattr(args, "faults", None) else []


def brokers_from_args(args: argparse.Namespace, inv: Inventory) -> KafkaBrokers | None:
    """``--brokers kafka:VERSION`` (with ``--zk-socket``/``--zk-hosts``) as ``KafkaBrokers`` (its jars
    not fetched yet); toggles with it are bad input (they configure the agents)."""
    brokers = getattr(args, "brokers", None)
    if brokers is None:
        return None if not hasattr(args, "zk_socket") else kafka_brokers(None, "--brokers kafka:VERSION", args)
    kafka = kafka_brokers(kafka_target(brokers, "--brokers"), "--brokers", args, len(inv.zookeepers))
    if args.toggle:
        raise UsageError("--toggle: agent toggles do not apply to real Kafka brokers (--brokers)")
    from nemesis.episodes import agent_only

    if episodes := agent_only(_fault_names(args)):
        raise UsageError(f"--faults {', '.join(episodes)}: these episodes act through the agents' request hooks; with "
                         "--brokers kafka:VERSION use link and process faults, lost_connect or revived_session")
    return kafka


def _schedule_from_args(args: argparse.Namespace, inv: Inventory, seed: int, name: str) -> tuple[Schedule, str]:
    faults = _fault_names(args)
    if faults and args.schedule:
        raise UsageError("--faults and --schedule: choose one")
    if args.schedule:
        from nemesis.scripted import Topology, load_schedule

        schedule = load_schedule(args.schedule, Topology.of(inv))
        used = {step.op.f for step in schedule.steps}
        _refuse_host_faults(inv, used, "--schedule " + str(args.schedule))
        if "zk_rules" in used and not getattr(args, "zkproxy", False):
            raise UsageError(f"--schedule {args.schedule}: its zk_rules steps need the ZooKeeper wire proxy "
                             "(--zkproxy)")
        return schedule, args.test or Path(args.schedule).stem
    if faults:
        _refuse_host_faults(inv, set(faults), "--faults")
        from nemesis.episodes import Cluster
        from nemesis.packages import PACKAGEABLE, expected_steps, package_schedule

        unknown = [f for f in faults if f not in PACKAGEABLE]
        if unknown:
            raise UsageError(f"--faults: {', '.join(unknown)} cannot be packaged (choose from "
                             f"{', '.join(PACKAGEABLE)})")
        if not MIN_INTERVAL_S <= args.interval <= MAX_SECONDS:  # also nan (a Namespace built by hand)
            raise UsageError(f"--interval: must be in [{MIN_INTERVAL_S:g}, {MAX_SECONDS:g}] seconds, got {args.interval}")
        if (n := expected_steps(faults, args.interval, args.time_limit)) > MAX_SCHEDULE_STEPS:
            raise UsageError(f"--interval: {len(faults)} fault(s) every {args.interval:g}s for --time-limit "
                             f"{args.time_limit:g} is about {n:.0f} steps, over the limit of {MAX_SCHEDULE_STEPS}")
        cluster = Cluster(tuple(b.name for b in inv.brokers), inv.agents.session_timeout_ms / 1000.0)
        _refuse_short_sync(args, inv, faults, cluster)
        return package_schedule(faults, args.interval, args.time_limit, seed, cluster=cluster), name
    return _isolate_one(args, inv, random.Random(seed)), name


def _refuse_short_sync(args: argparse.Namespace, inv: Inventory, faults: list[str], cluster: Any) -> None:
    """An episode that needs the leader to outlast paused followers (revived_session) on an ensemble
    whose syncLimit would end its leadership first is bad input, not a harmless run."""
    from nemesis.episodes import sync_error

    zk = {"tick_time_ms": inv.zookeeper.tick_time_ms, "sync_limit": inv.zookeeper.sync_limit, **zk_from_args(args)}
    if (why := sync_error(faults, cluster, zk["tick_time_ms"], zk["sync_limit"])) is not None:
        raise UsageError(f"--faults: {why} (--zk sync_limit=N, or a campaign fault set's zookeeper table)")


def _refuse_host_faults(inv: Inventory, faults: set[str], where: str) -> None:
    from nemesis.registry import external_only

    if inv.embedded and faults & external_only():
        raise UsageError(f"{where}: {', '.join(sorted(faults & external_only()))} needs nodes that are their own "
                         f"hosts (an external inventory); on {inv.path} use partition (Toxiproxy)")


def _isolate_one(args: argparse.Namespace, inv: Inventory, rng: random.Random) -> Schedule:
    """Cut one broker from every ZooKeeper server for 2×T + 1 s, so its session expires."""
    if args.target is not None:
        try:
            node = inv.broker(args.target)
        except KeyError:
            raise UsageError(f"--target: no broker {args.target} in {inv.path}") from None
    else:
        node = rng.choice(inv.brokers)
    warmup = min(2.0, args.time_limit / 4)
    duration = 2 * inv.agents.session_timeout_ms / 1000.0 + 1.0
    if warmup + duration > args.time_limit:
        raise UsageError(f"--time-limit: {args.time_limit}s is too short to isolate a broker for "
                         f"{duration:.1f}s (2×T+1s) after a {warmup:.1f}s warm-up")
    return isolate_schedule(node.name, warmup, duration)


def run(args: argparse.Namespace) -> int:
    from harness.engine import Engine

    console = output_console()
    inv = load_inventory(args.inventory)
    spec = spec_from_args(args, inv)
    if args.junit:
        writable_file(args.junit, "--junit")
    console.print(f"[bold]test[/] {spec.name}  seed={spec.seed}  inventory={inv.path}")
    with Engine(inv, args.store, console, args.spark_master, check_server=not args.no_server) as engine:
        outcome = engine.run(spec)
    print_verdict(console, outcome.results, outcome.run_dir)
    console.print("  phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in outcome.phases.items())
                  + f"; total {outcome.wall_s:.1f}s", highlight=False)
    if args.junit:
        from checkers.junit import case_for, case_name, run_properties, write_junit

        props = run_properties(outcome.run_dir)
        write_junit(args.junit, [case_for(case_name(props, str(outcome.run_dir)), outcome.results, props,
                                          outcome.wall_s)], name="harness run")
        console.print(f"junit: {args.junit}")
    if outcome.error is not None:
        console.print(f"[bold red]the run did not complete:[/] {outcome.error}", highlight=False)
        if outcome.crashed:
            return EXIT_CRASH
    return outcome.exit_code


def print_verdict(console: Console, results: dict, run_dir: Path) -> None:
    valid = results["valid"]
    colour = {True: "green", False: "red"}.get(valid, "yellow")
    word = {True: "valid", False: "invalid"}.get(valid, "unknown")
    for name, sub in results.get("checkers", {}).items():
        console.print(f"  {name}: {sub['valid']}  {sub.get('stats', {})}", highlight=False)
    for name, feed in results.get("feeds", {}).items():
        if "fed_from" not in feed:
            console.print(f"  {name}: unknown (not run: {feed['reason']})", highlight=False)
    stats = results.get("stats", {})
    ops = stats.get("client_ops")
    if ops:
        console.print(f"  client operations: {sum(ops.values())} ({ops})", highlight=False)
    for a in results.get("anomalies", [])[:20]:
        console.print(f"  [red]anomaly[/] {a['checker']}: {a['message']}  events {', '.join(a['event_ids'])}",
                      highlight=False)
    checked = f"  {stats['client_operations']} client operations checked" if "client_operations" in stats else ""
    console.print(f"[bold {colour}]{word}[/]{checked}  results: {run_dir / 'results.json'}", highlight=False)
