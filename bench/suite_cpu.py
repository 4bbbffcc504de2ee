"""Benchmark: where `make test`'s CPU goes, by process kind and by test module. Not a test.

Usage: python bench/suite_cpu.py [--workers N] [--out DIR] [-- PYTEST_ARGS...]

Runs `make test`'s pytest line (``-n N --dist loadgroup -m "not nightly"``, N=2 as `make test`) from
this checkout while a sampler reads every process's CPU from ``/proc/<pid>/stat`` once a second, and
a pytest plugin logs each test's start and end per worker. Then it prints, side by side:

- the machine's busy CPU seconds over the suite (``/proc/stat``) against what the sampler saw (a
  process that lived under a second between two samples is missed: short commands over SSH, `bash
  -c`, quick CLI calls), and the wall time against busy CPU / cores, the suite's floor on this
  machine if both cores were kept busy;
- CPU by process kind (Spark driver JVMs, Kafka brokers, ZooKeeper servers, pytest workers, ...):
  how many processes and their CPU seconds;
- CPU by test module: a process is charged to the test named in its environment
  (``PYTEST_CURRENT_TEST``, inherited from the test that started it) or to the nearest ancestor
  that has one; a pytest worker's own CPU to the test it ran at the time; a process with neither
  (a ZooKeeper server or broker started over SSH, reparented) is split among the tests running at
  that second (marked ``~``);
- the cores kept busy, minute by minute, from the samples.

Run it on a fresh clone after ``make install``; other load on the machine shows in every figure, so
say how loaded it was (``uptime``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HZ = os.sysconf("SC_CLK_TCK")

PLUGIN = '''
import json, os, time
import pytest
_LOG = os.environ["SUITE_CPU_TIMING_LOG"]
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0 = time.time()
    yield
    with open(_LOG, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "id": item.nodeid, "t0": t0, "t1": time.time()}) + "\\n")
'''

# Checked in order: a broker's command line names ZooKeeper's client classes too.
KINDS = [
    ("kafka broker", ("kafka.Kafka",)),
    ("zookeeper", ("org.apache.zookeeper.server",)),
    ("spark cluster (master, worker, executor)", ("CoarseGrainedExecutorBackend", "deploy.master.Master",
                                                  "deploy.worker.Worker")),
    ("spark driver JVM", ("org.apache.spark.deploy.SparkSubmit",)),
    ("pyspark python worker", ("pyspark.daemon", "pyspark.worker")),
    ("pytest worker", ("sys.stdin.readline",)),
    ("harness CLI", ("harness.cli", "bin/harness")),
    ("broker agent", ("-m agent ",)),
    ("maven (fetching Kafka)", ("plexus-classworlds",)),
    ("toxiproxy", ("toxiproxy",)),
    ("sshd", ("sshd",)),
    ("chromium", ("chrom",)),
]


def kind_of(cmd: str) -> str:
    for name, marks in KINDS:
        if any(m in cmd for m in marks):
            return name
    head = cmd.split(" ", 1)[0].rsplit("/", 1)[-1]
    if head == "java":
        return "other JVM"
    return "other python" if head.startswith("python") else f"other ({head or '?'})"


@dataclass
class Proc:
    ppid: int
    kind: str
    test: str | None  # the module of the test in its environment


@dataclass
class Sampler:
    procs: dict[tuple[int, int], Proc] = field(default_factory=dict)
    seconds: list[tuple[float, list[tuple[tuple[int, int], float]]]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.before = self._read(record=False)  # what already ran is not the suite's

    def _read(self, record: bool = True) -> dict[tuple[int, int], int]:
        seen: dict[tuple[int, int], int] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                rest = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
                key, ticks = (int(name), int(rest[19])), int(rest[11]) + int(rest[12])
                seen[key] = ticks
                if record and key not in self.procs and key not in self.before:
                    cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
                    test = next((e.split(b"=", 1)[1].decode(errors="replace") for e in env
                                 if e.startswith(b"PYTEST_CURRENT_TEST=")), None)
                    self.procs[key] = Proc(int(rest[1]), kind_of(cmd), module(test) if test else None)
            except (OSError, IndexError, ValueError):
                continue  # gone since the listing
        return seen

    def run(self) -> None:
        last: dict[tuple[int, int], int] = {}
        while not self.stop.is_set():
            now = time.time()
            deltas = []
            for key, ticks in self._read().items():
                if key in self.procs and ticks != last.get(key, 0):
                    deltas.append((key, (ticks - last.get(key, 0)) / HZ))
                    last[key] = ticks
            self.seconds.append((now, deltas))
            self.stop.wait(max(0.0, 1.0 - (time.time() - now)))


def module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")


def busy_ticks() -> int:
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6, 7))


def charge(sampler: Sampler, timing: list[dict]) -> tuple[collections.Counter, dict[str, collections.Counter]]:
    """CPU seconds by test module, and within each module by kind (``~kind``: split by time)."""
    runs: dict[int, list[tuple[float, float, str]]] = collections.defaultdict(list)
    for t in timing:
        runs[t["pid"]].append((t["t0"], t["t1"], module(t["id"])))
    by_pid = collections.defaultdict(list)
    for key in sampler.procs:
        by_pid[key[0]].append(key)

    def parent(key: tuple[int, int]) -> tuple[int, int] | None:
        older = [k for k in by_pid.get(sampler.procs[key].ppid, []) if k[1] <= key[1]]
        return max(older, key=lambda k: k[1]) if older else None

    def owner(key: tuple[int, int] | None, at: float) -> str | None:
        hops = 0
        while key is not None and hops < 50:
            p = sampler.procs[key]
            if p.test:
                return p.test
            if p.kind == "pytest worker":
                return next((m for t0, t1, m in runs.get(key[0], []) if t0 - 0.5 <= at <= t1 + 0.5), None)
            key, hops = parent(key), hops + 1
        return None

    total: collections.Counter = collections.Counter()
    kinds: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for at, deltas in sampler.seconds:
        running = [m for spans in runs.values() for t0, t1, m in spans if t0 <= at <= t1]
        for key, cpu in deltas:
            kind = sampler.procs[key].kind
            mod = owner(key, at)
            if mod:
                total[mod] += cpu
                kinds[mod][kind] += cpu
                continue
            for m in running or ["(no test running)"]:
                total[m] += cpu / max(1, len(running))
                kinds[m]["~" + kind] += cpu / max(1, len(running))
    return total, kinds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (make test: 2)")
    ap.add_argument("--out", type=Path, help="keep the tests' timing log and the totals (kinds.json) here")
    ap.add_argument("--top", type=int, default=30, help="modules to list")
    ap.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments (e.g. test paths)")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="zkfence-suite-cpu-"))
    try:
        return measure(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(args: argparse.Namespace, scratch: Path) -> int:
    out = args.out or scratch
    out.mkdir(parents=True, exist_ok=True)
    (scratch / "suite_cpu_timing.py").write_text(PLUGIN)
    timing_log = out / "timing.jsonl"
    timing_log.unlink(missing_ok=True)
    env = {**os.environ, "SUITE_CPU_TIMING_LOG": str(timing_log),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(scratch), os.environ.get("PYTHONPATH")]))}
    cmd = [str(REPO / ".venv" / "bin" / "pytest"), "-q", "-ra", "-n", str(args.workers), "--dist", "loadgroup",
           "-m", "not nightly", "-p", "suite_cpu_timing", *args.pytest_args]
    sampler = Sampler()
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    b0, w0 = busy_ticks(), time.time()
    try:
        rc = subprocess.call(cmd, cwd=REPO, env=env)
    finally:
        wall, busy = time.time() - w0, (busy_ticks() - b0) / HZ
        sampler.stop.set()
        thread.join()
    timing = [json.loads(x) for x in timing_log.read_text().splitlines()] if timing_log.exists() else []
    by_kind: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for _, deltas in sampler.seconds:
        for key, cpu in deltas:
            by_kind[sampler.procs[key].kind] += cpu
    for p in sampler.procs.values():
        count[p.kind] += 1
    sampled = sum(by_kind.values())
    cores = os.cpu_count() or 1
    print(f"\npytest exit {rc}; {len(timing)} tests; wall {wall:.0f} s; busy CPU {busy:.0f} CPU-s "
          f"(floor on {cores} cores: {busy / cores:.0f} s, {busy / cores / wall:.2f} of the wall); "
          f"sampled {sampled:.0f} CPU-s ({sampled / busy:.0%} of busy)")
    print("\nby process kind:            processes   CPU-s   share of busy")
    for kind, cpu in by_kind.most_common():
        print(f"  {kind:42s} {count[kind]:5d} {cpu:8.1f} {cpu / busy:7.1%}")
    total, kinds = charge(sampler, timing)
    print(f"\nby test module (top {args.top}): CPU-s, then its largest kinds")
    for mod, cpu in total.most_common(args.top):
        top = ", ".join(f"{k} {v:.0f}" for k, v in kinds[mod].most_common(4))
        print(f"  {cpu:7.1f}  {mod}: {top}")
    minutes: collections.Counter = collections.Counter()
    for at, deltas in sampler.seconds:
        minutes[int((at - w0) // 60)] += sum(c for _, c in deltas)
    print("\ncores kept busy (sampled), minute by minute:")
    print("  " + " ".join(f"{minutes[m] / 60:.1f}" for m in sorted(minutes) if m >= 0))
    if args.out:
        with (out / "kinds.json").open("w") as f:
            json.dump({"wall": wall, "busy": busy, "sampled": sampled, "by_kind": by_kind, "by_module": total}, f)
    return rc


if __name__ == "__main__":
    sys.exit(main())
