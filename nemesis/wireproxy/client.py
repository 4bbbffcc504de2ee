"""Harness side of a wire proxy: ``WireProxyClient`` (the control API) and ``WireProxyProcess``
(spawn ``python -m <proxy module>`` + read its ready file).

Role in the data path: none; the harness, tests and benches drive a running proxy through these.
``nemesis.zkproxy.client`` and ``nemesis.kafkaproxy.client`` name the module to run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from base.components.process import LocalProcess
from base.wait import wait_until


class WireProxyError(RuntimeError):
    """The control API answered with an error (message is the API's one-line error)."""

    name = "wireproxy"

    def __init__(self, status: int, msg: str) -> None:
        super().__init__(f"{self.name} control: HTTP {status}: {msg}")
        self.status = status


class WireProxyClient:
    """Talks to a running proxy's control API (see nemesis/wireproxy/control.py for the routes)."""

    error: type[WireProxyError] = WireProxyError

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.base = f"http://{host}:{port}"
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                msg = json.loads(e.read()).get("error", e.reason)
            except (ValueError, AttributeError):
                msg = str(e.reason)
            raise self.error(e.code, msg) from None

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def listeners(self) -> list[dict[str, Any]]:
        return self._call("GET", "/listeners")

    def rules(self) -> list[dict[str, Any]]:
        return self._call("GET", "/rules")

    def add_rule(self, rule: dict[str, Any]) -> str:
        return self._call("POST", "/rules", rule)["ids"][0]

    def add_rules(self, rules: list[dict[str, Any]]) -> list[str]:
        return self._call("POST", "/rules", {"rules": rules})["ids"]

    def remove_rule(self, rule_id: str) -> None:
        self._call("DELETE", f"/rules/{rule_id}")

    def clear_rules(self) -> int:
        return self._call("DELETE", "/rules")["removed"]

    def arm(self, name: str) -> None:
        self._call("POST", f"/arm/{name}")

    def disarm(self, name: str) -> bool:
        return self._call("POST", f"/disarm/{name}")["was_armed"]

    def armed(self) -> dict[str, float]:
        return self._call("GET", "/armed")

    def connections(self) -> list[dict[str, Any]]:
        return self._call("GET", "/connections")

    def close_connection(self, conn: int, rst: bool = False) -> None:
        self._call("POST", f"/connections/{conn}/close", {"rst": rst})

    def sessions(self) -> list[dict[str, Any]]:
        return self._call("GET", "/sessions")

    def held(self) -> list[dict[str, Any]]:
        return self._call("GET", "/held")

    def release(self, rule_id: str | None = None) -> int:
        """Release held frames: all of them, or those ``rule_id`` holds."""
        return self._call("POST", "/release" + (f"/{rule_id}" if rule_id else ""))["released"]


    def captured(self) -> list[dict[str, Any]]:
        return self._call("GET", "/captured")

    def replay(self, rule_id: str | None = None) -> list[dict[str, Any]]:
        """Re-send captured requests (all, or those ``rule_id`` captured) on a new upstream connection;
        one entry per request: ``replay_of`` (the captured frame's seq), its answer's ``error``."""
        saved, self.timeout = self.timeout, max(self.timeout, 70.0)  # the proxy waits for each answer
        try:
            return self._call("POST", "/replay" + (f"/{rule_id}" if rule_id else ""))["replayed"]
        finally:
            self.timeout = saved


def read_ready_file(path: str | Path, timeout: float = 15.0, proc: subprocess.Popen[Any] | None = None,
                    name: str = "zkproxy") -> dict:
    p = Path(path)

    def ready() -> dict | None:
        if p.exists():
            try:
                return json.loads(p.read_text())
            except ValueError:
                pass  # being written (the proxy renames into place, so this is rare)
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode} before becoming ready")
        return None

    found = wait_until(ready, timeout, poll=0.02)
    if found is None:
        raise TimeoutError(f"{name} ready file {p} did not appear within {timeout}s")
    return found


class WireProxyProcess(LocalProcess):
    """``python -m <module>`` as a child process (a Component); ``ports[i]`` is listener i's bound
    port. Use as a context manager; ``stop()`` sends SIGTERM (the proxy closes sockets, flushes
    events). ``upstreams`` are ``host:port`` (listen on a free port) or
    ``listen_host:port=host:port`` (a port the caller chose, e.g. one a broker advertises)."""

    role = "wireproxy"
    module = "nemesis.wireproxy"
    client_class: type[WireProxyClient] = WireProxyClient

    def __init__(
        self,
        upstreams: list[str],
        events: str | Path,
        workdir: str | Path,
        *,
        rules: str | Path | None = None,
        seed: int = 0,
        listen_host: str = "127.0.0.1",
        run: str = "",
        max_frame: int | None = None,
        extra_args: list[str] | None = None,
        python: str = sys.executable,
    ) -> None:
        super().__init__(self.role, Path(workdir) / f"{self.role}.log")
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.ready_file = self.workdir / f"{self.role}-ready-{os.getpid()}-{id(self)}.json"
        self.ready_file.unlink(missing_ok=True)
        self.events = Path(events)
        args = [python, "-m", self.module]
        for up in upstreams:
            args += ["--listen", up if "=" in up else f"{listen_host}:0={up}"]
        args += ["--events", str(events), "--control", f"{listen_host}:0", "--seed", str(seed),
                 "--ready-file", str(self.ready_file)]
        if rules is not None:
            args += ["--rules", str(rules)]
        if run:
            args += ["--run", run]
        if max_frame is not None:
            if isinstance(max_frame, bool) or not isinstance(max_frame, int) or not 0 < max_frame < 2**31:
                raise ValueError(f"max_frame must be an integer in [1, 2^31), got {max_frame!r}")
            args += ["--max-frame", str(max_frame)]
        args += extra_args or []
        self.args = args
        self.ready: dict[str, Any] = {}

    def start(self, timeout: float = 15.0) -> WireProxyProcess:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        with open(self.logfile, "ab") as logf:
            self._spawn(self.args, stdout=logf, stderr=subprocess.STDOUT, env=env)
        try:
            self.ready = read_ready_file(self.ready_file, timeout, self.process, self.role)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def ports(self) -> list[int]:
        return [lst["port"] for lst in self.ready["listeners"]]

    @property
    def addresses(self) -> list[str]:
        return [lst["listen"] for lst in self.ready["listeners"]]

    @property
    def connect_string(self) -> str:
        return ",".join(self.addresses)

    @property
    def client(self) -> WireProxyClient:
        ctl = self.ready["control"]
        return self.client_class(ctl["host"], ctl["port"])

    def stop(self, grace: float = 10.0) -> bool:
        return super().stop(grace)

    def __enter__(self) -> WireProxyProcess:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
