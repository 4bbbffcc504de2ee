"""``harness check PATH...``: verdicts for store dirs, project JSONL histories and reference histories.

Reference histories (Porcupine etcd/kv, Knossos EDN) go through the WGL linearizability checker;
project histories (``history.jsonl``, see docs/events.md) through every project-history checker
(``checkers.project.check_histories``, the entry point the run engine uses too). A project history
with a damaged line (``history.validate``) is bad input, named ``FILE:LINE: reason``; with
``--skip-damaged`` its damaged lines are left out and counted, and its verdict is unknown. All paths share
one SparkSession and all reference histories one Spark job. Exit: 0 all valid, 1 any invalid, 2 any unknown and
none invalid, 254 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from base.bounds import MAX_SECONDS, finite_float
from base.errors import UsageError, exit_code_for
from base.parsing import summary
from checkers.parsers import FORMATS, ParseError
from checkers.result import Result, worst
from checkers.spark import add_master_flag
from harness.checkserver import add_no_server_flag
from harness.outputs import writable_dir, writable_file

RESULTS_FILE = "results-check.json"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "check",
        help="check histories: store dirs, history.jsonl, Porcupine/Knossos reference files",
        description=summary(__doc__),
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="store dir, JSONL history or reference history")
    p.add_argument("--format", choices=FORMATS, help="input format (detected per path when omitted)")
    p.add_argument("--model", help="linearizability model (default per format: etcd, kv, cas-register/...)")
    add_master_flag(p)
    p.add_argument("--budget-seconds", type=finite_float(0, MAX_SECONDS, lo_open=True), default=30.0, help="CPU budget per part; over it → unknown")
    p.add_argument("--local", action="store_true", help="check reference histories without Spark (pure path)")
    p.add_argument("--json", action="store_true", help="print one JSON result object per line")
    p.add_argument("--write", action="store_true", help=f"write {RESULTS_FILE} next to a store dir's history")
    p.add_argument("--parquet", metavar="OUT", help="also write the project events as Parquet under OUT")
    p.add_argument("--junit", metavar="FILE",
                   help="also write JUnit XML: a testsuite per path, a testcase per checker, anomalies as failures")
    p.add_argument("--skip-damaged", action="store_true",
                   help="leave out a project history's damaged lines (counted in its stats as damaged_lines) "
                        "instead of refusing the history; its verdict is then unknown (anomalies still listed)")
    add_no_server_flag(p)
    p.set_defaults(func=run)


def _resolve(raw: str) -> tuple[Path, Path | None]:
    """(history file, store dir or None)."""
    p = Path(raw)
    if p.is_dir():
        h = p / "history.jsonl"
        if not h.is_file():
            raise UsageError(f"{p}: a directory must be a store dir holding history.jsonl")
        return h, p
    if not p.is_file():
        raise UsageError(f"{p}: no such file or directory")
    return p, None


def _skip(path: str, why: str, total: int) -> dict[str, Any]:
    """A path that cannot be checked: alone it is bad input; among others it is skipped with a
    one-line warning and reported unknown, and the others are still checked."""
    if total == 1:
        raise UsageError(why)
    print(f"harness check: skipping {path}: {why}", file=sys.stderr)
    return {"path": path, "format": "-", "valid": "unknown", "anomalies": [], "stats": {}, "error": why}


def _run_margin(store: Path | None) -> int | None:
    """The registration_liveness margin a stored run was judged with (its ``run.json``), None for
    the default: a history checked again is judged as its run judged it."""
    if store is None or not (store / "run.json").is_file():
        return None
    try:
        margin = json.loads((store / "run.json").read_text()).get("margin_ms")
    except (OSError, ValueError, AttributeError):
        return None  # an unreadable run.json is refused with its line further on
    return margin if isinstance(margin, int) and not isinstance(margin, bool) and margin >= 0 else None


def stored_run_judged(result: dict[str, Any], store: Path | None) -> dict[str, Any]:
    """Every checker's ``result`` over a store dir's history judged as its run judged it (its
    ``run.json``; ``checkers.kafka_feeds.as_the_run_judged``: a real-broker run by the checkers it
    judged by), so the row and the run's own results.json agree; a history without a run.json as it is."""
    if store is None or not (store / "run.json").is_file():
        return result
    from checkers.kafka_feeds import as_the_run_judged

    try:
        run = json.loads((store / "run.json").read_text())
    except (OSError, ValueError) as e:
        raise UsageError(f"{store / 'run.json'}: not readable as JSON ({e})") from None
    return as_the_run_judged(result, run if isinstance(run, dict) else {})


def _check_project(jsonl: list[str], check: Callable[[list[str]], dict[str, Result]], total: int,
                   skipped: list[dict[str, Any]]) -> dict[str, Result]:
    """The project checkers over ``jsonl`` (``check``: in this process or on the check server); when a
    history is malformed and others were given, the malformed ones are skipped (found by the plain
    reader, which names file and line) and the rest checked."""
    from history import HistoryFormatError, read_records

    try:
        return check(jsonl)
    except UsageError:
        if total == 1:
            raise
        good = []
        for path in jsonl:
            try:
                for _ in read_records(path):
                    pass
                good.append(path)
            except HistoryFormatError as e:
                skipped.append(_skip(path, str(e), total))
        if len(good) == len(jsonl):
            raise
        return check(good) if good else {}


def _server_for(args: argparse.Namespace, fmts: list[str]) -> Any:
    """The running check server when it can take this check: project histories only (reference ones
    only with --local), no --parquet, the same Spark master."""
    from harness import checkserver as server

    if args.no_server or args.parquet or not all(f == "jsonl" or args.local for f in fmts):
        return None
    return server.serving(args.spark_master)


def run(args: argparse.Namespace) -> int:
    from checkers import models, parsers

    if args.budget_seconds is not None and args.budget_seconds <= 0:
        raise UsageError("--budget-seconds must be positive")
    if args.model is not None and args.model not in models.MODELS:
        raise UsageError(f"--model {args.model!r}: one of {', '.join(sorted(models.MODELS))}")
    if args.junit:
        writable_file(args.junit, "--junit")
    if args.parquet:
        writable_dir(args.parquet, "--parquet")
    resolved: list[tuple[Path, Path | None]] = []
    fmts: list[str] = []
    skipped: list[dict[str, Any]] = []
    for raw in args.paths:
        try:
            hist, store = _resolve(raw)
            fmt = args.format or parsers.detect_format(hist)
        except (UsageError, ParseError) as e:
            skipped.append(_skip(raw, str(e), len(args.paths)))
            continue
        resolved.append((hist, store))
        fmts.append(fmt)
    if not resolved:
        raise UsageError(f"none of the {len(args.paths)} paths can be checked (each is named above)")
    remote = _server_for(args, fmts)
    need_spark = remote is None and (any(f == "jsonl" for f in fmts) or not args.local)
    warm = None
    if need_spark:
        from checkers.events_df import small_input
        from checkers.project import check_preflight
        from checkers.spark import start_spark_in_background

        check_preflight(args.spark_master)
        # Run-sized input: a JVM tuned for start-up, not throughput (checkers.spark.QUICK_JVM).
        quick = small_input([h for h, _ in resolved])
        warm = start_spark_in_background(args.spark_master, quick=quick)

    t0 = time.monotonic()
    spark = warm.result() if warm is not None else None
    results: dict[str, Result] = {}
    # Porcupine's formats are parsed and paired where they are, in the job that checks them
    # (checkers.ref_search); what that path declines, and Knossos' EDN, are parsed here.
    todo = [(h, f) for (h, _), f in zip(resolved, fmts, strict=True) if f != "jsonl"]
    if spark is not None and not args.local:
        from checkers import ref_ops, ref_search, udfs

        named = [(h, f, args.model or parsers.DEFAULT_MODEL.get(f) or "") for h, f in todo]
        there = [ref_ops.RefFile(str(h), str(Path(h).resolve()), f, m) for h, f, m in named if ref_ops.supported(f, m)]
        if there and udfs.jar_loaded(spark):
            got, declined = ref_search.check_files(spark, there, budget_seconds=args.budget_seconds)
            results.update(got)
            todo = [(h, f) for h, f in todo if str(h) not in got or str(h) in declined]
    refs: list[tuple[str, list[Any], models.Model]] = []
    for hist, fmt in todo:
        try:
            fmt, ops = parsers.load(hist, fmt)
        except (ParseError, OSError) as e:
            skipped.append(_skip(str(hist), str(e), len(args.paths)))
            continue
        refs.append((str(hist), ops, models.make_model(args.model or parsers.default_model(fmt, ops))))

    if refs:
        from checkers.linearizability import check_histories

        results.update(check_histories(refs, None if args.local else spark, budget_seconds=args.budget_seconds))
    jsonl = [str(h) for (h, _), f in zip(resolved, fmts, strict=True) if f == "jsonl"]
    if jsonl:
        if args.parquet:
            from checkers.events_df import write_parquet

            write_parquet(spark, jsonl, args.parquet)
        if remote is not None:
            print(f"harness check: on the check server (pid {remote.pid}, {remote.master})", file=sys.stderr)
        # a stored run is judged with the liveness margin it ran with (real brokers': 30 s)
        margins = {str(h): _run_margin(store) for (h, store), f in zip(resolved, fmts, strict=True) if f == "jsonl"}
        for margin in dict.fromkeys(margins.values()):
            group = [p for p in jsonl if margins[p] == margin]
            if remote is not None:
                from harness.checkserver import check_remote

                results.update(_check_project(group, lambda paths, m=margin: check_remote(remote, paths, m,
                                                                                  skip_damaged=args.skip_damaged),
                                              len(args.paths), skipped))
            else:
                from checkers.project import check_histories

                results.update(_check_project(
                    group, lambda paths, m=margin: check_histories(paths, spark=spark, margin_ms=m,
                                                                   skip_damaged=args.skip_damaged),
                    len(args.paths), skipped))
    wall = time.monotonic() - t0

    rows = list(skipped)
    for (hist, store), fmt in zip(resolved, fmts, strict=True):
        if str(hist) not in results:  # skipped above: its row is already there
            continue
        r = stored_run_judged(results[str(hist)], store)
        row = {"path": str(store or hist), "format": fmt, **r}
        rows.append(row)
        if args.write and store is not None:
            (store / RESULTS_FILE).write_text(json.dumps(row, indent=2, default=str) + "\n", encoding="utf-8")
    if args.junit:
        from checkers.junit import case_for, case_name, run_properties, write_junit

        cases = []
        for row, (_, store) in zip(rows, resolved, strict=True):
            props = run_properties(store)
            cases.append(case_for(case_name(props, row["path"]), row, props or {"path": row["path"]}))
        write_junit(args.junit, cases, name="harness check")
    if args.json:
        for row in rows:
            print(json.dumps(row, default=str))
    else:
        _print_summary(rows, wall)
    return exit_code_for(worst(*(r["valid"] for r in rows)))


def _print_summary(rows: list[dict[str, Any]], wall: float) -> None:
    from rich.table import Table

    from harness.terminal import output_console

    console = output_console(soft_wrap=False)
    table = Table(title=f"harness check: {len(rows)} path(s) in {wall:.2f}s", show_lines=False)
    for col in ("path", "format", "model", "verdict", "ops", "first anomaly"):
        table.add_column(col, overflow="fold")
    style = {True: "green", False: "bold red", "unknown": "yellow"}
    for row in rows:
        st = row.get("stats", {})
        first = row["anomalies"][0] if row["anomalies"] else None
        msg = ""
        if first:
            ids = ", ".join(first.get("event_ids", [])[:4])
            msg = f"[{first['checker']}] {first['message'][:160]}" + (f" ({ids})" if ids else "")
        v = row["valid"]
        table.add_row(
            row["path"], row["format"], str(st.get("model", "-")),
            f"[{style[v]}]{'valid' if v is True else 'INVALID' if v is False else 'unknown'}[/]",
            str(st.get("ops", st.get("events", "-"))), msg,
        )
    console.print(table)
