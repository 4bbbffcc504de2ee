"""The two ways a component's process is run, each implemented once.

* ``RemoteProcess``: on a node, over a ``Remote`` (SSH, or local for the embedded inventory),
  started detached in its own session with its pid in a file (ZooKeeper servers, broker agents).
* ``LocalProcess``: a child of the control node (the Toxiproxy server, the embedded sshd, the
  ZooKeeper wire proxy).

Both give the Component protocol's verbs; a subclass says how to start and what its data is.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from base.components import ProcState, Unsupported, parse_stat
from base.errors import EnvironmentFailed
from base.remote import KILL_WAIT_S, ProcessControl, Remote, RemoteError, stop_child

EXIT_LOG_LINES = 20  # the log lines quoted for a process that exited before it was up


class RemoteProcess:
    role = "process"

    def __init__(self, name: str, remote: Remote, workdir: str, pidfile: str, logfile: str) -> None:
        self.name = name
        self.remote = remote
        self.workdir = workdir
        self.pidfile = pidfile
        self.logfile = logfile
        self.proc = ProcessControl(remote)

    def command(self) -> tuple[str, dict[str, str] | None]:
        """The command line that runs this process, and its environment."""
        raise NotImplementedError

    def start(self) -> None:
        cmd, env = self.command()
        self.proc.start(cmd, self.workdir, self.pidfile, self.logfile, env=env)

    def stop(self, grace: float = 5.0) -> bool:
        return self.proc.stop(self.pidfile, grace)

    def kill(self) -> bool:
        return self.proc.kill(self.pidfile)

    def pause(self) -> bool:
        return self.proc.signal_pidfile(self.pidfile, "STOP")

    def resume(self) -> bool:
        return self.proc.signal_pidfile(self.pidfile, "CONT")

    def state(self) -> ProcState:
        return self.proc.state(self.pidfile)

    def wipe(self) -> None:
        raise Unsupported(f"{self.name}: a {self.role} keeps no data to wipe")

    def logs(self, dest: Path) -> list[Path]:
        local = self.download(self.logfile, dest / f"{self.name}-{self.role}.log")
        return [local] if local is not None else []

    def log_tail(self, lines: int = 5) -> str:
        """The last lines of this process's log, for an error saying why it did not come up."""
        try:
            res = self.remote.run(f"tail -n {int(lines)} {shlex.quote(self.logfile)}", timeout=10)
        except RemoteError as e:
            return f"(log unreadable: {e})"
        text = " | ".join(ln.strip() for ln in res.stdout.splitlines() if ln.strip())
        return text or "(log empty)"

    @property
    def label(self) -> str:
        """What this process is, for an error (``KafkaBroker``: ``Kafka VERSION``)."""
        return self.role

    def how_it_ended(self) -> str:
        """How the process ended, for an error; a process whose command records its exit status
        (``KafkaBroker``) says it."""
        return "exited"

    def exited_error(self, when: str) -> EnvironmentFailed:
        """The error for a process found gone before it was up: what it is, how it ended and its
        log's last ``EXIT_LOG_LINES`` lines, in one line."""
        return EnvironmentFailed(f"{self.name}: {self.label} {self.how_it_ended()} {when}; "
                                 f"its log ends: {self.log_tail(EXIT_LOG_LINES)}")

    def download(self, remote_path: str, local: Path) -> Path | None:
        """Copy a file of this process's node here; None when it cannot be had (not written yet)."""
        try:
            self.remote.get(remote_path, local)
        except (OSError, RemoteError):
            return None
        return local


class LocalProcess:
    role = "process"

    def __init__(self, name: str, logfile: Path) -> None:
        self.name = name
        self.logfile = logfile
        self.process: subprocess.Popen[bytes] | None = None
        # told the pid the moment the process exists, before it is ready: a control node killed while
        # it waits leaves the pid recorded for `harness teardown` (harness.cluster.RunState)
        self.on_spawn: Callable[[int], None] | None = None

    def start(self) -> None:
        raise NotImplementedError

    def _spawn(self, args: list[str], **popen: Any) -> subprocess.Popen[bytes]:
        self.process = subprocess.Popen(args, **popen)
        if self.on_spawn is not None:
            self.on_spawn(self.process.pid)
        return self.process

    def stop(self, grace: float = 5.0) -> bool:
        running = self.state() is not ProcState.STOPPED
        self.resume()  # a paused process cannot handle SIGTERM
        stop_child(self.process, grace)
        return running

    def kill(self) -> bool:
        """SIGKILL, then reap it, so that it is gone when this returns (as ``ProcessControl.kill``)."""
        if not self._signal(signal.SIGKILL):
            return False
        assert self.process is not None
        try:
            self.process.wait(timeout=KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            pass  # uninterruptible sleep: it dies when its I/O ends
        return True

    def pause(self) -> bool:
        return self._signal(signal.SIGSTOP)

    def resume(self) -> bool:
        return self._signal(signal.SIGCONT)

    def _signal(self, sig: int) -> bool:
        if self.process is None or self.process.poll() is not None:
            return False
        try:
            os.killpg(os.getpgid(self.process.pid), sig) if self._own_group() else self.process.send_signal(sig)
        except ProcessLookupError:
            return False
        return True

    def _own_group(self) -> bool:
        assert self.process is not None
        try:
            return os.getpgid(self.process.pid) == self.process.pid
        except ProcessLookupError:
            return False

    def state(self) -> ProcState:
        if self.process is None or self.process.poll() is not None:
            return ProcState.STOPPED
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return ProcState.STOPPED
        return parse_stat(stat.rsplit(")", 1)[1].split()[0])

    def wipe(self) -> None:
        raise Unsupported(f"{self.name}: a {self.role} keeps no data to wipe")

    def logs(self, dest: Path) -> list[Path]:
        if not self.logfile.exists():
            return []
        dest.mkdir(parents=True, exist_ok=True)
        out = dest / f"{self.name}.log"
        shutil.copy(self.logfile, out)
        return [out]
