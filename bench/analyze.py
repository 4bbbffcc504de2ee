"""`harness analyze` over many stored runs on Spark vs the same aggregation in one plain Python process.

    python bench/analyze.py                 # 1,000 runs, local[2]
    python bench/analyze.py --events 9000   # each run tiled to ~9,000 events, a `make run`'s size
    python bench/analyze.py --from store    # copies of the runs `make run` left in store/
    python bench/analyze.py --runs 200 --master 'local[*]' --keep DIR
    python bench/analyze.py --events 9000 --repeat 3   # medians of 3 alternated samples (noise here: ±5%)
    python bench/analyze.py --events 9000 --server     # also through a batch check server (started and stopped here)
    python bench/analyze.py --events 9000 --add 10     # then 10 new runs onto the 1,000 already ingested

Generates N run directories from the real stored runs in ``tests/data/store/`` (each copy gets its
own timestamp, run id and seed, one of a few toggle sets, a verdict flipped now and then, and its
history's times shifted and stretched by a random factor so the percentiles vary), then times, each
in a fresh process:

* ``harness analyze STORE --out OUT --spark-master MASTER`` on an empty dataset (ingest + the four
  tables, CSV + Parquet + analysis.html), and a second call (nothing new: the saved tables, no Spark);
* with ``--server``, the same first call handed to a batch check server (``harness check-server start
  --batch``, started once before the samples and stopped after; its start is printed apart): the
  session a user keeps warm across calls;
* with ``--add K``, K more runs added to the store and a call that ingests them onto the dataset of
  the first N (a copy of it per side: in-process, and on the server with ``--server``), against
  the plain process over all N + K runs (it has no dataset: it reads every run again);
* the plain baseline: the same run reading (``harness.analysis.runs``) and the same pairing,
  percentiles and grouping (``harness.analysis.pairing``) in one Python process, writing the same
  CSVs and page (no Parquet: the plain process has no Parquet writer).

Prints the times and the ratios; the issue's target is Spark ≤ 0.6× plain. Timings are measured,
never asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from base.localstate import bench_scratch  # noqa: E402
from base.parsing import summary  # noqa: E402
from harness.phases import sigterm_as_interrupt  # noqa: E402

SOURCES = sorted((ROOT / "tests" / "data" / "store").glob("*/2*"))
TOGGLE_SETS = ({}, {"reregister_on_expiry": False}, {"registration": "pre_2_2"}, {"broker_epoch_check": "off"})


def generate(store: Path, n: int, seed: int = 13, events: int = 0, sources: list[Path] = SOURCES,
             start: int = 0) -> None:
    """``n`` runs copied from ``sources``; with ``events``, each history repeated end to end until it
    has at least that many lines (the stored fixtures have 109 and 306; a `make run` writes about 9,000).
    ``start``: the first run's number (its time stamp), to add runs to a generated store."""
    rng = random.Random(seed + start)
    for i in range(start, start + n):
        src = sources[i % len(sources)]
        run = json.loads((src / "run.json").read_text())
        res = json.loads((src / "results.json").read_text())
        day = 1 + i % 7
        stamp = f"202611{day:02d}T{i // 3600 % 24:02d}{i // 60 % 60:02d}{i % 60:02d}.{i % 1000:03d}"
        test = str(run.get("test"))
        run.update(run_id=f"{test}-{stamp}", seed=rng.randrange(1 << 31), toggles=rng.choice(TOGGLE_SETS))
        if rng.random() < 0.15:  # a verdict that differs across seeds
            res["valid"] = False
            name = rng.choice(sorted(res.get("checkers") or {"registration_liveness": {}}))
            res.setdefault("checkers", {}).setdefault(name, {})["valid"] = False
            res["anomalies"] = [{"checker": name, "event_ids": []}]
        d = store / test / stamp
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps(run))
        (d / "results.json").write_text(json.dumps(res))
        (d / "history.jsonl").write_text(_perturbed(src / "history.jsonl", run["run_id"], rng, events))


def _perturbed(history: Path, run_id: str, rng: random.Random, events: int = 0) -> str:
    lines = [json.loads(ln) for ln in history.read_text().splitlines() if ln.strip()]
    lines = _tiled(lines, events)
    t0 = min(e["t_wall"] for e in lines)
    shift, stretch = rng.uniform(-86400, 86400), rng.uniform(0.7, 1.5)
    out = []
    for e in lines:
        e["run"] = run_id
        e["t_wall"] = t0 + shift + (e["t_wall"] - t0) * stretch
        if isinstance(e.get("t_mono"), int):
            e["t_mono"] = int(e["t_mono"] * stretch)
        out.append(json.dumps(e, separators=(",", ":")))
    return "\n".join(out) + "\n"


def _tiled(lines: list[dict], events: int) -> list[dict]:
    """``lines`` followed by copies of themselves until there are ``events``: each copy later in time
    (wall and monotonic) and in every source's ``seq`` than the one before, so it reads as the same
    run going on."""
    if not lines or len(lines) >= events:
        return lines
    wall = max(e["t_wall"] for e in lines) - min(e["t_wall"] for e in lines) + 1.0
    monos = [e["t_mono"] for e in lines if isinstance(e.get("t_mono"), int)]
    mono = max(monos) - min(monos) + 1_000_000_000 if monos else 0
    seqs = max(e["seq"] for e in lines)
    out = []
    for k in range(-(-events // len(lines))):
        for e in lines:
            c = dict(e, t_wall=e["t_wall"] + k * wall, seq=e["seq"] + k * seqs)
            if isinstance(e.get("t_mono"), int):
                c["t_mono"] = e["t_mono"] + k * mono
            out.append(c)
    return out


def plain(store: Path, out: Path) -> int:
    """The four tables in one Python process, from the run directories; returns the runs read."""
    from harness.analysis import pairing as P
    from harness.analysis.page import write_page
    from harness.analysis.runs import BadRun, candidate_dirs, pairing_events, rows_for_run
    from harness.analysis.tables import Table, write_csv

    checks, recs, ops = [], [], []
    for d in candidate_dirs(store):
        try:
            rows = rows_for_run(d)
        except BadRun:
            continue
        checks += rows
        evs = pairing_events(d)
        recs += P.recoveries(evs)
        ops += [(rows[0].workload, o) for o in P.op_latencies(evs)] if rows[0].workload != "none" else []
    runs = {r.run_dir: r for r in checks}
    tables = [
        Table("anomaly_rate", "anomaly rate", P.anomaly_rates((r.run_dir, r.checker, r.toggles, r.faults, r.valid)
                                                             for r in checks), P.Rate),
        Table("heal_to_registration", "heal to re-registration", P.recovery_table(recs), P.RecoveryRow),
        Table("op_latency", "client latency", P.latency_table(ops), P.LatencyRow),
        Table("flaky", "flaky", P.flaky(P.RunVerdict(r.run_id, r.test, r.toggles, r.faults, r.workload, r.zk_version,
                                                     r.run_valid) for r in runs.values()), P.Flaky),
    ]
    out.mkdir(parents=True, exist_ok=True)
    for t in tables:
        write_csv(t, out / f"{t.name}.csv")
    write_page(tables, f"{len(runs)} runs (plain Python)", out / "analysis.html")
    return len(runs)


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return wall, p.stdout


def _incremental(args: argparse.Namespace, base: Path, harness: list[str], *, served: bool,
                 sources: list[Path]) -> None:
    """``args.add`` new runs onto a copy of the first N's dataset, per side; plain over all of them."""
    generate(base / "store", args.add, events=args.events, sources=sources, start=args.runs)
    sides = [("in-process", ["--no-server"]), *([("on the batch check server", [])] if served else [])]
    times = {}
    for name, flags in sides:
        out = base / f"inc-{len(times)}"
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(base / "spark", out)
        wall, text = timed([*harness, *flags, "--out", str(out)])
        if f"ingested {args.add} new run(s)" not in text:
            raise SystemExit(f"bench/analyze.py --add: expected {args.add} new runs to be ingested, got:\n{text[-800:]}")
        times[name] = wall
    plain_s, runs = timed([sys.executable, str(Path(__file__).resolve()), "--plain-only", str(base / "store"),
                           str(base / "plain-all")])
    for name, wall in times.items():
        print(f"{args.add} new runs onto {args.runs}, {name}: {wall:7.1f}s  ratio to plain over all {runs.strip()} "
              f"runs ({plain_s:.1f}s) {wall / plain_s:5.2f}x")


def _start_server(master: str) -> float:
    """Start a batch check server on ``master``; its start-up seconds. Refuses to use a running one
    (its session may be tuned or warmed otherwise, and it is not this bench's to stop)."""
    from harness import checkserver as server

    if server.read_state() is not None:
        raise SystemExit("bench/analyze.py --server: a check server is already running; `harness check-server stop` first")
    wall, _ = timed([sys.executable, "-m", "harness.cli", "check-server", "start", "--batch", "--spark-master", master])
    return wall


def _samples(times: list[float]) -> str:
    return f"  (median of {len(times)}: {', '.join(f'{t:.1f}' for t in times)})" if len(times) > 1 else ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/analyze.py", description=summary(__doc__))
    p.add_argument("--runs", type=int, default=1000, help="stored runs to generate (default 1000)")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--from", dest="source", metavar="STORE",
                   help="copy the runs of this store (STORE/<test>/<time>/) instead of tests/data/store/")
    p.add_argument("--events", type=int, default=0, metavar="N",
                   help="repeat each stored history until it has N events (default: as stored, 109 and 306)")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="time the first call and the plain process K times each, alternated; print medians (default 1)")
    p.add_argument("--server", action="store_true",
                   help="also time the first call on a batch check server (started before, stopped after)")
    p.add_argument("--add", type=int, default=0, metavar="K",
                   help="then add K runs and time the call that ingests them onto the first N (default 0: not timed)")
    p.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (default: a temporary dir, removed)")
    p.add_argument("--plain-only", nargs=2, metavar=("STORE", "OUT"), help=argparse.SUPPRESS)  # the baseline's own process
    args = p.parse_args(argv)
    if args.repeat < 1 or args.add < 0:
        flag = f"--repeat {args.repeat}: must be at least 1" if args.repeat < 1 else f"--add {args.add}: must be at least 0"
        print(f"bench/analyze.py: {flag}", file=sys.stderr)
        return 254
    if args.plain_only:
        print(plain(Path(args.plain_only[0]), Path(args.plain_only[1])))
        return 0
    base = Path(args.keep) if args.keep else bench_scratch()
    server_start: float | None = None  # set once this bench has started a server: it stops that one only
    try:
        store = base / "store"
        for old in (store, base / "spark", base / "served", base / "plain"):  # --keep DIR again: start from an empty dataset
            shutil.rmtree(old, ignore_errors=True)
        t0 = time.monotonic()
        sources = SOURCES
        if args.source:
            sources = sorted(d for d in Path(args.source).glob("*/2*")
                             if all((d / f).is_file() for f in ("run.json", "results.json", "history.jsonl")))
            if not sources:
                print(f"bench/analyze.py: --from {args.source}: no finished runs (<test>/<time>/ with run.json, "
                      "results.json, history.jsonl)", file=sys.stderr)
                return 254
        generate(store, args.runs, events=args.events, sources=sources)
        lines = sum(1 for h in store.glob("*/*/history.jsonl") for _ in h.open("rb"))
        print(f"generated {args.runs} runs ({lines:,} events) from {len(sources)} stored ones in "
              f"{time.monotonic() - t0:.1f}s: {store}")
        harness = [sys.executable, "-m", "harness.cli", "analyze", str(store), "--spark-master", args.master]
        if args.server:
            server_start = _start_server(args.master)
        firsts, served, plains, text = [], [], [], ""
        for _ in range(args.repeat):  # alternated, so that a slow spell of the machine hits every side
            shutil.rmtree(base / "spark", ignore_errors=True)
            firsts.append(timed([*harness, "--no-server", "--out", str(base / "spark")])[0])
            if server_start is not None:
                shutil.rmtree(base / "served", ignore_errors=True)
                served.append(timed([*harness, "--out", str(base / "served")])[0])
            wall, text = timed([sys.executable, str(Path(__file__).resolve()), "--plain-only", str(store), str(base / "plain")])
            plains.append(wall)
        second, _ = timed([*harness, "--no-server", "--out", str(base / "spark")])
        first, base_s = statistics.median(firsts), statistics.median(plains)
        same = all((base / side / f"{n}.csv").read_text() == (base / "plain" / f"{n}.csv").read_text()
                   for n in ("anomaly_rate", "heal_to_registration", "op_latency", "flaky")
                   for side in ("spark", *(["served"] if served else [])))
        print(f"harness analyze {args.master}, empty dataset (ingest + tables): {first:7.1f}s  ratio to plain {first / base_s:5.2f}x"
              f"{_samples(firsts)}")
        if served:
            on = statistics.median(served)
            print(f"harness analyze {args.master}, on a batch check server:         {on:7.1f}s  ratio to plain "
                  f"{on / base_s:5.2f}x{_samples(served)}; the server started in {server_start:.1f}s (once, before)")
        print(f"harness analyze {args.master}, second call (nothing new):       {second:7.1f}s  ratio to plain {second / base_s:5.2f}x")
        print(f"plain Python, one process ({text.strip()} runs):                   {base_s:7.1f}s{_samples(plains)}")
        print(f"target: Spark <= 0.6x plain; the four CSVs identical between the two: {same}")
        if args.add:
            _incremental(args, base, harness, served=server_start is not None, sources=sources)
    finally:
        if server_start is not None:
            subprocess.run([sys.executable, "-m", "harness.cli", "check-server", "stop"], capture_output=True, cwd=ROOT)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    with sigterm_as_interrupt():  # what the bench started is stopped on SIGTERM too
        sys.exit(main())
