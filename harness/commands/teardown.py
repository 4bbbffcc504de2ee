"""`harness teardown`: clean up after a crashed run from the state files it left in .local/state."""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import shutil
import tempfile
from pathlib import Path

from base.localstate import (
    BENCH_PREFIX,
    DOCTOR_PREFIX,
    ENGINE_PREFIX,
    JAVAC_PREFIX,
    KAFKA_LOGS_PREFIX,
    STATE_DIR,
    orphaned,
    owner_alive,
    processes_mentioning,
)
from base.remote import ProcessControl, RemoteError, kill_local_pid
from harness.salvage import salvage


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("teardown", help="stop everything a crashed run left behind", description=__doc__)
    p.add_argument("--force", action="store_true",
                   help="also stop runs whose control process is still alive (default: leave them running)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from checkers.spark import SCRATCH_PREFIX
    from harness import checkserver as server
    from harness.analysis.job import WARM_UP_PREFIX

    stopped = server.stop()
    if stopped is not None:
        print(f"teardown: stopped the check server (pid {stopped})")
    orphans = _remove_orphans((
        (WARM_UP_PREFIX, "the warm-up store"),  # a batch server killed while it warmed up
        (SCRATCH_PREFIX, "the Spark driver's temporary files"),  # a JVM killed outright
        (BENCH_PREFIX, "a bench's scratch dir"),  # a bench killed outright
        (JAVAC_PREFIX, "a build of the JVM functions' classes"),  # killed mid-build
        (DOCTOR_PREFIX, "harness doctor's scratch dir"),
        (KAFKA_LOGS_PREFIX, "a Kafka broker's logs copied to be parsed")))
    states = sorted(STATE_DIR.glob("*.json")) if STATE_DIR.exists() else []
    for path in states:
        try:
            st = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"teardown: {path}: unreadable state ({e}); removing it")
            path.unlink(missing_ok=True)
            continue
        if not args.force and owner_alive(st.get("owner_pid"), st.get("owner_start")):
            print(f"teardown: run {st.get('run_id')} is still running (pid {st['owner_pid']}); "
                  "left alone (use --force to stop it)")
            continue
        killed = 0
        salvaged: int | None = None
        if st.get("embedded", True):
            for pidfiles in st.get("node_pidfiles", {}).values():
                for pf in pidfiles:
                    try:
                        pid = int(Path(pf).read_text().strip())
                    except (OSError, ValueError):
                        continue
                    killed += kill_local_pid(pid)
            salvaged = salvage(st, _copy_local)  # the embedded nodes' files are on this machine
        else:
            killed, salvaged = _remote_teardown(st)
        for pid in st.get("local_pids", []):
            killed += kill_local_pid(pid)
        if st.get("scratch"):
            shutil.rmtree(st["scratch"], ignore_errors=True)
            with contextlib.suppress(OSError):  # the engine's own temp dir, once its last cluster is gone
                Path(st["scratch"]).parent.rmdir()
        path.unlink(missing_ok=True)
        print(f"teardown: run {st.get('run_id')}: signalled {killed} process group(s), removed its scratch dir")
        if salvaged is not None:
            print(f"teardown: salvaged {salvaged} events of the cut-short run into {st['run_dir']}/history.jsonl "
                  f"(harness check {st['run_dir']})")
    # After the states: a run's events are salvaged from its engine's dir before the dir goes. What is
    # left is a run killed before its cluster recorded a state, or after its cluster was torn down.
    orphans += _remove_orphans(((ENGINE_PREFIX, "a run's scratch dir"),))
    if stopped is None and not orphans and not states:
        print("teardown: nothing recorded; nothing to do")
    return 0


def _remove_orphans(kinds: tuple[tuple[str, str], ...]) -> list[Path]:
    """Remove the temporary dirs of each (prefix, what) whose process is gone, stopping what still
    runs in them first."""
    removed = []
    for prefix, what in kinds:
        for d in orphaned(Path(tempfile.gettempdir()), prefix):
            started = processes_mentioning(str(d))  # what runs in it still (a bench's ZooKeeper and proxy)
            for pid, _ in started:
                kill_local_pid(pid)
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
            print(f"teardown: removed {d}, {what} of a process that is gone"
                  + (f"; stopped the {len(started)} process(es) started in it" if started else ""))
    return removed


def _copy_local(node: str, src: str, dest: Path) -> bool:
    try:
        shutil.copyfile(src, dest)
    except OSError:
        return False
    return True


def _remote_teardown(st: dict) -> tuple[int, int | None]:
    from base.inventory import load_inventory
    from base.remote import on_nodes
    from harness.cluster import Cluster
    from nemesis.registry import crash_heals

    inv = load_inventory(st["inventory"])
    cluster = Cluster(inv, Path(st["scratch"]), st["run_id"])
    killed = 0
    try:
        cluster._connect()  # noqa: SLF001 - reuse the same SSH setup as a run
        for node, pidfiles in st.get("node_pidfiles", {}).items():
            remote = cluster.remotes.get(node)
            if remote is None:
                continue
            control = ProcessControl(remote)
            killed += sum(control.kill(pf) for pf in pidfiles)
        # What a fault leaves on the nodes past its processes (net_partition's nftables table).
        for command in crash_heals():
            on_nodes(list(cluster.remotes.values()), lambda r, command=command: r.run(command))

        def fetch(node: str, src: str, dest: Path) -> bool:
            try:
                cluster.remotes[node].get(src, dest)
            except (KeyError, OSError, RemoteError):
                return False
            return True

        salvaged = salvage(st, fetch)  # before the workdirs holding the agents' events go
        for node, wd in st.get("node_workdirs", {}).items():
            if node in cluster.remotes:
                cluster.remotes[node].run(f"rm -rf {shlex.quote(wd)}")
    finally:
        for r in cluster.remotes.values():
            r.close()
        if cluster.sshd is not None:
            cluster.sshd.stop()
    return killed, salvaged
