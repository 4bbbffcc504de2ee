"""The check server: one warm SparkSession that ``harness check`` processes hand their project
histories to, so a check from a cold process pays neither the JVM's start nor its cold JIT; started
with ``--batch``, ``harness analyze`` hands it its jobs too.

``harness check-server start`` runs ``python -m harness.checkserver`` detached. It starts a local session
tuned for run-sized input (``checkers.spark.QUICK_JVM``), checks a small built-in history once so
the JVM has compiled the checkers' code paths (``HARNESS_SPARK_WARM_UP=off`` skips the warm-ups),
then records ``STATE`` (pid, 127.0.0.1 port, a random key, master, batch) and answers requests until
``stop`` or ``--idle-timeout`` seconds without one (so a forgotten server does not hold its JVM
forever). ``harness teardown`` stops it too.

``--batch`` starts the session for throughput instead (``checkers.spark.BATCH_JVM``, the settings of an
in-process ``harness analyze``) and also runs ``harness.analysis.job.warm_up``: on a latency-tuned JVM
(C1 only) the ingest of 9M events took twice as long.

A request is ``{"op": "check", "paths": [...], "margin_ms": N, "names": [...], "skip_damaged": B}`` (all
but ``paths`` optional: ``names`` the checkers to run, as a run's test names them); the reply is ``{"results": {path: result}}`` from
``checkers.project.check_histories`` on the server's session (the verdicts of an in-process
check), or ``{"error": "usage" | "crash", "message": ...}``. On a batch server,
``{"op": "analyze", "store": ..., "out": ...}`` runs ``harness.analysis.job.analyze``; the reply is
``{"outcome": Outcome}``. The transport is
``multiprocessing.connection`` on loopback, authenticated with the key (the state file is mode 0600).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any

from base.errors import EnvironmentFailed, UsageError
from base.localstate import STATE_DIR, owner_alive, process_start_time, taking_turns
from base.remote import kill_local_pid

STATE = STATE_DIR / "check-server" / "server.json"  # beside the run states `harness teardown` reads
DEFAULT_IDLE_TIMEOUT_S = 3600.0


@dataclass
class ServerState:
    pid: int
    start_time: int | None  # the process's kernel start time: a reused pid is not the server
    port: int
    key: str  # hex
    master: str
    started: float
    log: str
    batch: bool = False  # a throughput-tuned session that takes `harness analyze` jobs

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def alive(self) -> bool:
        return owner_alive(self.pid, self.start_time)


def add_no_server_flag(p: argparse.ArgumentParser, what: str = "check") -> None:
    """``--no-server``, for every command that checks project histories (run, repro, campaign, hunt, check)."""
    p.add_argument("--no-server", action="store_true",
                   help=f"{what} in this process even when a check server (`harness check-server`) is running")


NO_SESSION_EXIT = 2  # the server's exit when Spark gives it no session; its log's last line says why
NO_SESSION_PREFIX = "no session: "


class NotReady(RuntimeError):
    """The server exited or did not answer before it was ready (stopped): the message names its log."""


def read_state(path: Path = STATE) -> ServerState | None:
    """The recorded server if its process is alive; a stale record is removed."""
    try:
        st = ServerState(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    if not st.alive:
        path.unlink(missing_ok=True)
        return None
    return st


def serving(master: str | None, batch: bool = False) -> ServerState | None:
    """The running server whose session has ``master`` (``--spark-master``, else as a session
    resolves it), a batch one when ``batch``; None if there is none such."""
    from checkers.spark import resolve_master

    st = read_state()
    return st if st is not None and st.master == resolve_master(master) and (st.batch or not batch) else None


def request(st: ServerState, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """Send one request and wait for its reply (``timeout`` None: as long as the check takes)."""
    with Client(st.address, authkey=bytes.fromhex(st.key)) as conn:
        conn.send(message)
        if timeout is not None and not conn.poll(timeout):
            raise TimeoutError(f"check server pid {st.pid}: no reply in {timeout:.0f}s")
        return conn.recv()


def check_remote(st: ServerState, paths: list[str], margin_ms: int | None = None,
                 names: list[str] | None = None, skip_damaged: bool = False) -> dict[str, Any]:
    """{path: result} checked by the server, as ``checkers.project.check_histories`` with the same
    arguments would in-process (``margin_ms``: registration_liveness's, None for its default; ``names``:
    the checkers, None for all); a bad history is the same ``UsageError`` as in-process."""
    message: dict[str, Any] = {"op": "check", "paths": [str(Path(p).resolve()) for p in paths]}
    if margin_ms is not None:
        message["margin_ms"] = margin_ms
    if names is not None:
        message["names"] = list(names)
    if skip_damaged:
        message["skip_damaged"] = True
    by_abs = _work(st, message, "results")
    return {p: by_abs[str(Path(p).resolve())] for p in paths}


def analyze_remote(st: ServerState, store: Path, out: Path) -> Any:
    """``harness.analysis.job.analyze`` run by the server; its ``Outcome``."""
    return _work(st, {"op": "analyze", "store": str(store.resolve()), "out": str(out.resolve())}, "outcome")


def _work(st: ServerState, message: dict[str, Any], field: str) -> Any:
    """The ``field`` of the server's reply to a work request; its error raised as in-process (bad
    input a ``UsageError``)."""
    reply = request(st, message)
    if "error" in reply:
        if reply["error"] == "usage":
            raise UsageError(reply["message"])
        raise RuntimeError(f"check server pid {st.pid}: {reply['message']}")
    return reply[field]


def start(master: str | None = None, idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S, wait: float = 300.0,
          path: Path = STATE, batch: bool = False) -> tuple[ServerState, bool]:
    """Start a server (detached, in its own session) and wait until it answers: (its record, True);
    (the running one's, False) if there is one already. Concurrent starts take turns (a lock file
    beside the record): the second finds the first's server, where both used to start one and wait
    for a record the other overwrote."""
    with taking_turns(path.with_name("start.lock")):
        running = read_state(path)
        if running is not None:
            return running, False
        return _start(master, idle_timeout, wait, path, batch), True


def _start(master: str | None, idle_timeout: float, wait: float, path: Path, batch: bool) -> ServerState:
    import subprocess

    log = path.with_name("server.log")
    cmd = [sys.executable, "-m", "harness.checkserver", "--state", str(path), "--idle-timeout", str(idle_timeout)]
    if master:
        cmd += ["--spark-master", master]
    if batch:
        cmd.append("--batch")
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=Path(__file__).resolve().parent.parent)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        st = read_state(path)
        if st is not None and st.pid == proc.pid:
            return st
        if proc.poll() is not None:
            if proc.returncode == NO_SESSION_EXIT:  # its last line says why, as an in-process check would
                raise EnvironmentFailed(f"{_tail(log, 1).removeprefix(NO_SESSION_PREFIX)} (check server log: {log})")
            raise NotReady(f"check server exited with code {proc.returncode} before it was ready; "
                           f"its log: {log}: {_tail(log)}")
        time.sleep(0.2)
    kill_local_pid(proc.pid, signal.SIGTERM)  # still warming up: let it remove its temporary files
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
    kill_local_pid(proc.pid)
    raise NotReady(f"check server not ready after {wait:.0f}s (stopped); its log: {log}")


def stop(path: Path = STATE) -> int | None:
    """Stop the recorded server (asked, then its process group signalled); the pid, or None."""
    st = read_state(path)
    if st is None:
        return None
    with contextlib.suppress(OSError, EOFError, TimeoutError, ValueError):  # a server mid-check answers after it
        request(st, {"op": "stop"}, timeout=10)
    deadline = time.monotonic() + 20
    while st.alive and time.monotonic() < deadline:
        time.sleep(0.2)
    if st.alive:
        kill_local_pid(st.pid)
    path.unlink(missing_ok=True)
    return st.pid


def status(st: ServerState) -> dict[str, Any]:
    return request(st, {"op": "status"}, timeout=10)


# --- the server process -------------------------------------------------------------------------------
def serve(state_path: Path, master: str | None, idle_timeout: float, batch: bool = False) -> int:
    from checkers.project import WARM_UP_ENV, warm_up, warm_up_wanted
    from checkers.spark import get_spark, stop_spark
    from harness.analysis import job

    signal.signal(signal.SIGTERM, _interrupt)  # stopped while warming up: the warm-up's temp dir goes too
    try:
        try:
            spark = get_spark(master, quick=not batch)
        except EnvironmentFailed as e:  # no session: one line for the starter to show
            print(f"{NO_SESSION_PREFIX}{e}", flush=True)
            return NO_SESSION_EXIT
        if not warm_up_wanted():
            print(f"no warm-up ({WARM_UP_ENV}=off)", flush=True)
        else:
            print(f"warm-up check {warm_up(spark):.1f}s", flush=True)
            if batch:
                print(f"warm-up analysis {job.warm_up(spark):.1f}s", flush=True)
    except KeyboardInterrupt:
        print("stopped while warming up", flush=True)
        stop_spark()
        return 0
    key = secrets.token_bytes(32)
    served = {"check": 0, "analyze": 0}
    with Listener(("127.0.0.1", 0), authkey=key) as listener:
        st = ServerState(os.getpid(), process_start_time(os.getpid()), listener.address[1], key.hex(),
                         str(spark.sparkContext.master), time.time(), str(state_path.with_name("server.log")), batch)
        tmp = state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(st)), encoding="utf-8")
        tmp.chmod(0o600)
        os.replace(tmp, state_path)
        print(f"check server pid {st.pid} on 127.0.0.1:{st.port}, session {st.master}"
              + (" (batch)" if batch else ""), flush=True)
        idle = _IdleWatch(st, idle_timeout)
        try:
            while True:
                try:
                    conn = listener.accept()
                except (OSError, EOFError) as e:  # a client with the wrong key, or gone
                    print(f"refused a connection: {e}", flush=True)
                    continue
                with conn:
                    try:
                        msg = conn.recv()
                    except (OSError, EOFError):
                        continue
                    op = msg.get("op") if isinstance(msg, dict) else None
                    if op == "stop":
                        conn.send({"stopping": True})
                        print("idle: stopping" if msg.get("idle") else "asked to stop", flush=True)
                        break
                    if op == "status":
                        conn.send({**asdict(st), "key": "", "served": served, "uptime_s": time.time() - st.started})
                        continue
                    if op not in served or (op == "analyze" and not batch):
                        conn.send({"error": "crash", "message": f"unknown request {op!r}"
                                   + (" (a batch server's)" if op == "analyze" else "")})
                        continue
                    with idle.busy():
                        reply = _serve(op, msg, spark)
                    served[op] += 1
                    try:
                        conn.send(reply)
                    except OSError as e:  # the client was interrupted: the work is done, serve the next one
                        print(f"client gone before the reply ({e})", flush=True)
        except KeyboardInterrupt:
            pass
        finally:
            with contextlib.suppress(OSError):
                if json.loads(state_path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                    state_path.unlink()
            stop_spark()
    return 0


def _serve(op: str, msg: dict[str, Any], spark: Any) -> dict[str, Any]:
    from checkers.project import check_histories
    from harness.analysis import job

    t0 = time.monotonic()
    try:
        if op == "check":
            paths = msg.get("paths") or []
            margin, names = msg.get("margin_ms"), msg.get("names")
            if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
                raise UsageError(f"check request: names must be a list of checker names, got {names!r}")
            reply = {"results": check_histories(paths, spark=spark, margin_ms=margin if isinstance(margin, int) else None,
                                                names=names, skip_damaged=msg.get("skip_damaged") is True)}
            what = f"checked {len(paths)} histories"
        else:
            outcome = job.analyze(Path(msg["store"]), Path(msg["out"]), lambda: spark)
            reply, what = {"outcome": outcome}, f"analyzed {msg['store']}"
    except UsageError as e:
        return {"error": "usage", "message": str(e)}
    except Exception as e:  # noqa: BLE001 - the client says what broke; the server keeps serving
        traceback.print_exc()
        return {"error": "crash", "message": f"{type(e).__name__}: {e}"}
    print(f"{what} in {time.monotonic() - t0:.1f}s", flush=True)
    return reply


class _IdleWatch:
    """After ``timeout`` seconds without a check (none running, none finished), asks the server to
    stop, as a client would (the serving loop blocks in ``accept``)."""

    def __init__(self, st: ServerState, timeout: float) -> None:
        import threading

        self.st, self.timeout, self.last, self.checking = st, timeout, time.monotonic(), False
        threading.Thread(target=self._watch, name="idle-watch", daemon=True).start()

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        self.checking = True
        try:
            yield
        finally:
            self.checking, self.last = False, time.monotonic()

    def _watch(self) -> None:
        while True:
            time.sleep(min(5.0, self.timeout / 4))
            if not self.checking and time.monotonic() - self.last >= self.timeout:
                with contextlib.suppress(OSError, EOFError):
                    request(self.st, {"op": "stop", "idle": True}, timeout=30)
                return


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _tail(log: Path, n: int = 3) -> str:
    try:
        return " | ".join(log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-n:])
    except OSError:
        return "(no log)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.checkserver")
    p.add_argument("--state", type=Path, default=STATE)
    p.add_argument("--spark-master")
    p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S)
    p.add_argument("--batch", action="store_true")
    args = p.parse_args(argv)
    return serve(args.state, args.spark_master, args.idle_timeout, args.batch)


if __name__ == "__main__":
    sys.exit(main())
