"""A real standalone Spark cluster on loopback, from pyspark's own distribution, for tests.

``standalone_cluster(tmp)`` starts a master and one worker in the foreground (``spark-class``,
each its own process group) on 127.0.0.1 with ports chosen at run time, waits until the master
lists the worker alive, yields the ``spark://`` URL and stops both (also on failure).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from base.ports import free_port

HOST = "127.0.0.1"


@dataclass
class Standalone:
    url: str
    webui: str
    procs: list[subprocess.Popen[bytes]]
    log_dir: Path


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "PYTHON", "SPARK", "VIRTUAL_ENV"))}
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, SPARK_MASTER_HOST=HOST,
               SPARK_LOG_DIR=str(work / "logs"), SPARK_WORKER_DIR=str(work / "worker"),
               SPARK_NO_DAEMONIZE="1")
    return env


def _start(args: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=env, cwd=cwd,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _alive_workers(webui: str) -> int:
    with suppress(OSError, ValueError):
        with urllib.request.urlopen(f"{webui}/json/", timeout=2) as r:
            state = json.load(r)
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")
    return 0


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):
        with suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


@contextmanager
def standalone_cluster(work: Path, *, cores: int = 2, memory: str = "1g", timeout: float = 90.0) -> Iterator[Standalone]:
    work.mkdir(parents=True, exist_ok=True)
    env = _env(work)
    port, ui, wport, wui = (free_port(HOST) for _ in range(4))
    url, webui = f"spark://{HOST}:{port}", f"http://{HOST}:{ui}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_start(["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                             "--webui-port", str(ui)], env, work / "logs" / "master.out", work))
        procs.append(_start(["org.apache.spark.deploy.worker.Worker", url, "--host", HOST, "--port", str(wport),
                             "--webui-port", str(wui), "--cores", str(cores), "--memory", memory,
                             "--work-dir", str(work / "worker")], env, work / "logs" / "worker.out", work))
        deadline = time.monotonic() + timeout
        while _alive_workers(webui) < 1:
            for p, name in zip(procs, ("master", "worker"), strict=True):
                if p.poll() is not None:
                    tail = (work / "logs" / f"{name}.out").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"spark {name} exited {p.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no alive worker at {webui} after {timeout:.0f}s")
            time.sleep(0.5)
        yield Standalone(url, webui, procs, work / "logs")
    finally:
        _stop(procs)
