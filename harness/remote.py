"""Remote: the only way the control node touches a node. Run a command, start or stop a
background process (pid file + log file), put and get files, fan out over nodes.

Two transports share one small protocol: ``SSHRemote`` (paramiko; what runs use) and
``LocalRemote`` (subprocess; for unit-level fixtures that need a real server without sshd).
Background processes run in their own session (``setsid``) so signals reach the whole group.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import paramiko

from harness.components import ProcState, parse_stat
from harness.errors import UsageError
from harness.hostkeys import UnknownHostKey
from harness.wait import wait_until

T = TypeVar("T")
N = TypeVar("N")


@dataclass(frozen=True, slots=True)
class CommandResult:
    command: str
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class RemoteError(RuntimeError):
    pass


class HostKeyRefused(UsageError):
    """A node's SSH host key is unknown or changed: one line saying how to trust it (exit 254)."""


class Remote(Protocol):
    """Transport to one node."""

    name: str

    def run(self, command: str, timeout: float = 60.0, check: bool = False) -> CommandResult: ...

    def put(self, local: str | os.PathLike[str], remote: str) -> None: ...

    def get(self, remote: str, local: str | os.PathLike[str]) -> None: ...

    def close(self) -> None: ...


def background_command(command: str, cwd: str, pidfile: str, logfile: str, env: dict[str, str] | None) -> str:
    """Shell snippet that starts ``command`` detached, in its own session, and records its pid."""
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    inner = f"{exports} exec {command}" if exports else f"exec {command}"
    return (
        f"mkdir -p {shlex.quote(cwd)} && cd {shlex.quote(cwd)} && "
        f"(setsid sh -c {shlex.quote(inner)} > {shlex.quote(logfile)} 2>&1 < /dev/null & "
        f"echo $! > {shlex.quote(pidfile)}) && cat {shlex.quote(pidfile)}"
    )


class ProcessControl:
    """Background-process verbs built on ``Remote.run``: identical for every transport."""

    def __init__(self, remote: Remote) -> None:
        self.remote = remote

    def start(
        self, command: str, cwd: str, pidfile: str, logfile: str, env: dict[str, str] | None = None
    ) -> int:
        res = self.remote.run(background_command(command, cwd, pidfile, logfile, env), timeout=30)
        if not res.ok or not res.stdout.strip().isdigit():
            raise RemoteError(f"{self.remote.name}: could not start {command!r}: {res.stderr.strip()}")
        return int(res.stdout.strip())

    def pid(self, pidfile: str) -> int | None:
        res = self.remote.run(f"cat {shlex.quote(pidfile)} 2>/dev/null", timeout=10)
        text = res.stdout.strip()
        return int(text) if text.isdigit() else None

    def state(self, pidfile: str) -> ProcState:
        """The process's state in one remote command (the one definition: ``parse_stat``)."""
        pf = shlex.quote(pidfile)
        res = self.remote.run(f"test -f {pf} && ps -o stat= -p $(cat {pf}) 2>/dev/null", timeout=10)
        return parse_stat(res.stdout)

    def _pid_state(self, pid: int) -> ProcState:
        return parse_stat(self.remote.run(f"ps -o stat= -p {pid} 2>/dev/null", timeout=10).stdout)

    def signal(self, pid: int, sig: str) -> bool:
        # Negative pid = the whole process group created by setsid.
        res = self.remote.run(f"kill -{sig} -- -{pid} 2>/dev/null || kill -{sig} {pid} 2>/dev/null", timeout=10)
        return res.ok

    def signal_pidfile(self, pidfile: str, sig: str) -> bool:
        """Signal the process (group) of ``pidfile`` in one remote command; False when none."""
        pf = shlex.quote(pidfile)
        res = self.remote.run(f"test -f {pf} && p=$(cat {pf}) && "
                              f"(kill -{sig} -- -$p 2>/dev/null || kill -{sig} $p 2>/dev/null)", timeout=10)
        return res.ok

    def stop(self, pidfile: str, grace: float = 5.0) -> bool:
        """SIGCONT and SIGTERM, wait up to ``grace``, then SIGKILL. True if something was running."""
        pid = self.pid(pidfile)
        if pid is None or self._pid_state(pid) is ProcState.STOPPED:
            return False
        # a paused process cannot act on SIGTERM
        self.remote.run(f"kill -CONT -- -{pid} 2>/dev/null; kill -TERM -- -{pid} 2>/dev/null || "
                        f"kill -TERM {pid} 2>/dev/null", timeout=10)
        if not wait_until(lambda: self._pid_state(pid) is ProcState.STOPPED, grace):
            self.signal(pid, "KILL")
        return True

    def kill(self, pidfile: str) -> bool:
        return self.signal_pidfile(pidfile, "KILL")


class SSHRemote:
    """paramiko transport. One SSH connection per node; channels are opened per command."""

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        user: str,
        key_file: str | None,
        connect_timeout: float = 10.0,
        host_keys: Callable[[paramiko.SSHClient], None] | None = None,
    ) -> None:
        """``host_keys`` loads the keys to trust and sets the policy for unknown ones
        (``harness.hostkeys``); without it every host key is refused."""
        self.name = name
        self.host = host
        self.port = port
        self.user = user
        self._client = paramiko.SSHClient()
        if host_keys is not None:
            host_keys(self._client)
        else:
            self._client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            self._client.connect(
                hostname=host,
                port=port,
                username=user,
                key_filename=key_file,
                timeout=connect_timeout,
                banner_timeout=connect_timeout,
                auth_timeout=connect_timeout,
                allow_agent=False,
                look_for_keys=key_file is None,
            )
        except UnknownHostKey as e:
            raise HostKeyRefused(f"{name}: SSH to {user}@{host}:{port}: {e}") from None
        except paramiko.BadHostKeyException as e:
            raise HostKeyRefused(f"{name}: SSH to {user}@{host}:{port}: the host key CHANGED ({e}); "
                                 "refused: remove the old key from known_hosts only if the change is expected") from None
        except (paramiko.SSHException, OSError) as e:
            raise RemoteError(f"{name}: SSH to {user}@{host}:{port} failed: {e}") from e
        self._sftp_lock = threading.Lock()
        self._sftp: paramiko.SFTPClient | None = None

    def run(self, command: str, timeout: float = 60.0, check: bool = False) -> CommandResult:
        try:
            _, stdout, stderr = self._client.exec_command(command, timeout=timeout)
            out = stdout.read().decode("utf-8", "replace")
            err = stderr.read().decode("utf-8", "replace")
            code = stdout.channel.recv_exit_status()
        except (paramiko.SSHException, OSError, TimeoutError) as e:
            raise RemoteError(f"{self.name}: {command!r} failed: {e}") from e
        result = CommandResult(command, code, out, err)
        if check and not result.ok:
            raise RemoteError(f"{self.name}: {command!r} exited {code}: {err.strip() or out.strip()}")
        return result

    def _sftp_client(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            self._sftp = self._client.open_sftp()
        return self._sftp

    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        with self._sftp_lock:
            self._sftp_client().put(str(local), remote)

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        with self._sftp_lock:
            self._sftp_client().get(remote, str(local))

    def close(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
        self._client.close()


class LocalRemote:
    """Same protocol over subprocess on this machine."""

    def __init__(self, name: str = "local") -> None:
        self.name = name

    def run(self, command: str, timeout: float = 60.0, check: bool = False) -> CommandResult:
        try:
            p = subprocess.run(
                ["sh", "-c", command], capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as e:
            raise RemoteError(f"{self.name}: {command!r} timed out after {timeout}s") from e
        result = CommandResult(command, p.returncode, p.stdout, p.stderr)
        if check and not result.ok:
            raise RemoteError(f"{self.name}: {command!r} exited {p.returncode}: {p.stderr.strip()}")
        return result

    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        import shutil

        Path(remote).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, remote)

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        self.put(remote, str(local))

    def close(self) -> None:
        pass


def on_nodes(items: Iterable[N], fn: Callable[[N], T], max_workers: int = 16) -> list[T]:
    """Run ``fn`` on every item in parallel; re-raise the first error after all finish."""
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(max_workers, len(items))) as pool:
        futures = [pool.submit(fn, it) for it in items]
        results: list[T] = []
        first_error: BaseException | None = None
        for fut in futures:
            try:
                results.append(fut.result())
            except BaseException as e:  # noqa: BLE001 - collected, re-raised below
                first_error = first_error or e
        if first_error is not None:
            raise first_error
        return results


def stop_child(process: subprocess.Popen | None, grace: float = 5.0) -> None:
    """Terminate a child process started by the control node; SIGKILL after ``grace`` seconds."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(grace)


def kill_local_pid(pid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a local process group (falling back to the pid). Used by crash teardown."""
    for target in (-pid, pid):
        try:
            os.kill(target, sig)
            return True
        except ProcessLookupError:
            continue
        except PermissionError:
            return False
    return False
