"""`harness repro`: reproduce a JIRA on demand and show it fixed.

    harness repro --list                 # id, title, availability
    harness repro KAFKA-14845            # expect the anomaly (exit 0 when the checker fires)
    harness repro KAFKA-14845 --fixed    # expect a clean run (exit 0 when the checker passes)
    harness repro KAFKA-14845 --runs 5   # reproduction rate and time per run (cluster kept up)
    harness repro KAFKA-14845 --kafka 3.9.1   # real Kafka brokers, same story (the client as reported)

Exit: 0 every run matched the expectation, 1 some run did not, 254 bad input (unknown or
unavailable scenario, bad flags). The verdict is always the checkers' over the recorded history. A run
whose story could not be told as written (a fault that did not bite, a race the other way: "story not
told", with why) never counts as clean; an anomaly it shows still counts.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from rich.console import Console

from base.bounds import bounded_int
from base.errors import EXIT_BAD_INPUT, UsageError
from base.parsing import summary
from checkers.spark import add_master_flag
from harness.checkserver import add_no_server_flag
from harness.commands.kafkaflags import add_zk_client_args, fetch, kafka_brokers, kafka_target

MAX_REPRO_RUNS = 1000  # runs on one cluster, each a whole story


def register(sub: argparse._SubParsersAction) -> None:
    from scenarios import jiras

    p = sub.add_parser("repro", help=f"reproduce a known JIRA ({_short(jiras())}) and show it fixed",
                       description=summary(__doc__))
    p.add_argument("id", nargs="?", metavar="ID", help="scenario id (see --list)")
    p.add_argument("--list", action="store_true", help="list scenarios: id, title, availability, which Kafka release fixed it")
    p.add_argument("--fixed", action="store_true", help="run with the fix's toggles and expect a clean run")
    p.add_argument("--runs", type=bounded_int(1, MAX_REPRO_RUNS), default=1, metavar="N", help="runs on one cluster (default 1)")
    p.add_argument("--inventory", metavar="FILE", help="inventory TOML (default: inventory/local.toml)")
    p.add_argument("--store", metavar="DIR", default=None, help="store directory (default: ./store)")
    p.add_argument("--spark", action="store_true",
                   help="run the registration checks on Spark too (the fencing invariants always do)")
    add_master_flag(p)
    add_no_server_flag(p, "check each run")
    p.add_argument("--no-timeline", action="store_true", help="do not print the per-run timeline")
    p.add_argument("--kafka", metavar="VERSION",
                   help="real Apache Kafka VERSION brokers (ZooKeeper mode, 2.x-3.9.x) in place of the agents; "
                        "jars from Maven Central, cached under .local/kafka")
    add_zk_client_args(p, "--kafka")
    p.add_argument("--compare", metavar="kafka:VERSION",
                   help="run the agents' variant and the real-broker variant with the same story and print "
                        "both outcomes side by side (--zk-socket defaults to the socket the agents model)")
    p.set_defaults(func=run)


def _short(jiras: list[str]) -> str:
    """KAFKA-6584, -7235, -14139: the project prefix said once."""
    out: list[str] = []
    for j in jiras:
        project, _, number = j.rpartition("-")
        out.append(f"-{number}" if out and jiras[0].startswith(project + "-") else j)
    return ", ".join(out)


def compare_option(args: argparse.Namespace, sc: Any) -> bool:
    """``--compare kafka:VERSION`` folded into ``args.kafka`` (and ``args.zk_socket``, by default the
    ZooKeeper client socket the scenario's agents model); False without ``--compare``."""
    if args.compare is None:
        return False
    version = kafka_target(args.compare, "--compare")
    if args.kafka is not None:
        raise UsageError("--compare: give the version once: --compare kafka:VERSION without --kafka")
    if args.runs != 1:
        raise UsageError(f"--runs: --compare runs one pair, got {args.runs}")
    args.kafka = version
    as_reported(args, sc)
    args.zk_socket = args.zk_socket or sc.agent_zk_socket
    return True


def as_reported(args: argparse.Namespace, sc: Any) -> bool:
    """With ``--kafka`` and neither ``--zk-socket`` nor ``--zk-hosts``: the brokers' ZooKeeper client
    as the JIRA reported it (``Scenario.kafka_as_reported``), set on ``args``; True when it was."""
    if args.kafka is None or args.zk_socket is not None or args.zk_hosts is not None or not sc.kafka_as_reported:
        return False
    args.zk_socket = sc.kafka_as_reported.get("zk_socket")
    args.zk_hosts = sc.kafka_as_reported.get("zk_hosts")
    return True


def kafka_option(args: argparse.Namespace, sc: Any, ensemble: int | None = None) -> Any:
    """The ``--kafka`` / ``--zk-socket`` / ``--zk-hosts`` flags as ``KafkaBrokers`` (None without
    ``--kafka``); bad input is a ``UsageError`` naming the flag. ``ensemble``: servers in the
    inventory, the most ``--zk-hosts`` can name."""
    as_reported(args, sc)
    kafka = kafka_brokers(args.kafka, "--kafka", args, ensemble)
    if kafka is None:
        return None
    if sc.not_on_kafka is not None:
        raise UsageError(f"--kafka: {sc.id} cannot run on a real Kafka broker: {sc.not_on_kafka}")
    if sc.kafka_since is not None:
        from base.components.kafka import parse_version

        since, why = sc.kafka_since
        if parse_version(kafka.version) < parse_version(since):
            raise UsageError(f"--kafka: {sc.id} runs on Kafka {since} and later, not {kafka.version}: {why}")
    if args.fixed:
        from scenarios.fixes import fix_status

        raise UsageError(f"--fixed: no Kafka release to run with --kafka: {sc.id}: {fix_status(sc.jira)}")
    if why := unfed_checker(sc, kafka.version):
        raise UsageError(f"--kafka: {sc.id} on Kafka {kafka.version}: {why}")
    return kafka


def unfed_checker(sc: Any, version: str) -> str | None:
    """Why one of the story's real-broker checkers (``checkers_on_kafka``) cannot judge its run on ``version``
    (``checkers.kafka_feeds``: a checker given nothing would say valid, and a clean run would read
    as the fix), or None. A story's run has the ZooKeeper proxy, the Kafka proxy when it asks for
    it, and the queue client when a queue checker judges it."""
    from checkers.kafka_feeds import kafka_feeds

    feeds = kafka_feeds(version, kafkaproxy=sc.kafka_proxy, zkproxy=True,
                        queue=any(c.startswith("queue_") for c in sc.checkers_on_kafka()))
    for name in sc.checkers_on_kafka():
        if feeds[name].fed_from is None:
            return f"its checker {name} cannot judge a real broker there: {feeds[name].unknown}"
    return None


def _list(console: Console) -> int:
    from scenarios import scenarios
    from scenarios.fixes import fix_status

    for sc in scenarios().values():
        why = sc.available()
        state = "" if why is None else f"  [yellow](not available: {why})[/]"
        console.print(f"{sc.id:<30} {sc.title}{state}", highlight=False)
        console.print(f"{'':<30} [dim]fix: {fix_status(sc.jira)}[/]", highlight=False)
        kafka = "runs with --kafka VERSION" if sc.not_on_kafka is None else f"not with --kafka: {sc.not_on_kafka}"
        if sc.not_on_kafka is None and sc.kafka_since is not None:
            kafka += f" ({sc.kafka_since[0]} and later: {sc.kafka_since[1]})"
        if sc.not_on_kafka is None and sc.kafka_properties:  # the broker configuration the story needs
            kafka += f"; its brokers with {', '.join(f'{k}={v}' for k, v in sc.kafka_properties.items())}"
        console.print(f"{'':<30} [dim]real brokers: {kafka}[/]", highlight=False)
    return 0


def run(args: argparse.Namespace) -> int:
    console = Console(highlight=False, soft_wrap=True)
    if args.list:
        return _list(console)
    from scenarios import scenarios

    found = scenarios()
    if not args.id:
        raise UsageError("repro: give a scenario ID or --list")
    sc = found.get(args.id) or found.get(args.id.upper())
    if sc is None:
        raise UsageError(f"repro: unknown scenario {args.id!r} (known: {', '.join(found)})")
    if args.runs < 1:
        raise UsageError(f"--runs: must be >= 1, got {args.runs}")
    compare = compare_option(args, sc)
    kafka = kafka_option(args, sc)
    why = sc.available()
    if why is not None and (kafka is None or compare):
        console.print(f"[yellow]{sc.id} is not available in this build:[/] {why}")
        return EXIT_BAD_INPUT
    from base.inventory import load_inventory
    from harness.engine import Engine
    from scenarios.timeline import render

    inv = load_inventory(args.inventory)
    kafka = kafka_option(args, sc, ensemble=len(inv.zookeepers))
    if kafka is not None:
        with console.status(f"resolving Kafka {kafka.version} (Maven Central, cached under .local/kafka)"):
            fetch(kafka, "--compare" if compare else "--kafka")
    if compare:
        return _compare(console, args, sc, inv, kafka)
    spec = sc.spec(args.fixed, spark=args.spark, kafka=kafka)
    what = kafka.describe() if kafka is not None else f"toggles {spec.toggles}"
    console.print(f"[bold]{sc.id}[/]: {sc.title}\n  {what}; expecting {spec.expect.describe()}")
    clean = _clean_flag(sc, kafka)
    if clean:
        console.print(clean)
    results = []
    with Engine(inv, args.store, console, args.spark_master, keep_warm=True, check_server=not args.no_server) as engine:
        for i in range(args.runs):
            if args.runs > 1:
                console.rule(f"run {i + 1}/{args.runs}")
            res = engine.run(sc.spec(args.fixed, spark=args.spark, kafka=kafka))
            results.append(res)
            if not args.no_timeline:
                console.print("[bold]timeline[/] (seconds from run start; event ids in the history)")
                for line in render(res.run_dir / "history.jsonl"):
                    console.print(line)
            _print_result(console, res)
    _summary(console, sc.id, args.fixed, results, engine.cold_s)
    if clean:
        console.print(clean)
    return 0 if all(r.matched for r in results) else 1


def _clean_flag(sc: Any, kafka: Any) -> str:
    """What makes the bug disappear on a released broker (``Scenario.kafka_clean_flag``), said with a
    real-broker run; empty otherwise."""
    if kafka is None or sc.kafka_clean_flag is None:
        return ""
    flag, why = sc.kafka_clean_flag
    reported = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in sc.kafka_as_reported.items())
    return (f"  as the JIRA reported it: {reported or 'Kafka defaults'}; the bug cannot show with {flag}: {why} "
            f"(harness repro {sc.id} --kafka {kafka.version} {flag})")


def _compare(console: Console, args: argparse.Namespace, sc: Any, inv: Any, kafka: Any) -> int:
    """The agents' variant, then the real brokers', the same story and seed; both outcomes side by
    side. Exit as for one repro: 0 when both showed what was expected."""
    import random

    from rich.table import Table

    from harness.engine import Engine
    from history import read_records
    from scenarios.compare import Side, compare_rows, judged_by_one, same_verdict
    from scenarios.timeline import render

    seed = random.SystemRandom().randrange(2**31)
    variants = [("agents", sc.spec(False, spark=args.spark)), (f"kafka {kafka.version} ({kafka.zk_socket})",
                                                                sc.spec(False, spark=args.spark, kafka=kafka))]
    console.print(f"[bold]{sc.id}[/]: {sc.title}\n  compare: the agents (toggles {variants[0][1].toggles}) and "
                  f"{kafka.describe()}; seed {seed}")
    sides: list[Side] = []
    with Engine(inv, args.store, console, args.spark_master, keep_warm=False, check_server=not args.no_server) as engine:
        for label, spec in variants:
            console.rule(label)
            spec.seed = seed
            res = engine.run(spec)
            if not args.no_timeline:
                for line in render(res.run_dir / "history.jsonl"):
                    console.print(line)
            _print_result(console, res)
            history = res.run_dir / "history.jsonl"
            events = list(read_records(history)) if history.exists() else []
            sides.append(Side(label, res.verdicts, res.matched, res.reproduced, res.error, events))
    table = Table(title=f"{sc.id}: the same story, side by side", show_lines=False)
    table.add_column("")
    for side in sides:
        table.add_column(side.label)
    for row in compare_rows(*sides):
        table.add_row(*row)
    console.print(table)
    agree = "the same verdict" if same_verdict(*sides) else "[bold red]different verdicts[/]"
    apart = "".join(f"; judged by {label} only: {', '.join(names)}" for label, names in judged_by_one(*sides).items())
    console.print(f"[bold]{sc.id} --compare kafka:{kafka.version}[/]: {agree}{apart}")
    return 0 if all(s.matched for s in sides) else 1


def _print_result(console: Console, res: Any) -> None:
    for a in res.anomalies[:10]:
        console.print(f"  [red]anomaly[/] {a['checker']}: {a['message']}  events {', '.join(a['event_ids'])}")
    verdicts = ", ".join(f"{k}={v}" for k, v in res.verdicts.items())
    word = ("[red]REPRODUCED[/]" if res.reproduced else "[yellow]story not told[/]" if res.story_gaps
            else "[green]clean[/]") if not res.error else "[yellow]error[/]"
    ok = "[green]as expected[/]" if res.matched else "[bold red]NOT as expected[/]"
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in res.phases.items())
    console.print(f"  {word} ({verdicts}) — {ok} — {res.wall_s:.1f}s ({phases})\n  store: {res.run_dir}")
    if res.error:
        console.print(f"  [yellow]run error:[/] {res.error}")
    for why in res.story_gaps:  # a clean verdict from it shows nothing; an anomaly still counts
        console.print(f"  [yellow]story not told:[/] {why}")


def _summary(console: Console, sid: str, fixed: bool, results: list[Any], cold: float | None) -> None:
    n = len(results)
    rep = sum(r.reproduced for r in results)
    matched = sum(r.matched for r in results)
    walls = [r.wall_s for r in results]
    what = f"clean {matched}/{n}" if fixed else f"reproduced {rep}/{n}"
    untold = sum(bool(r.story_gaps) for r in results)
    what += f", story not told in {untold}/{n}" if untold else ""
    spread = f", min {min(walls):.1f}s, max {max(walls):.1f}s" if n > 1 else ""
    console.print(f"[bold]{sid}{' --fixed' if fixed else ''}[/]: {what} ({matched}/{n} as expected); "
                  f"per run (cluster warm) mean {statistics.mean(walls):.1f}s{spread}; "
                  f"cluster cold start {cold or 0:.1f}s; total {time.monotonic() - _T0:.1f}s")


_T0 = time.monotonic()
