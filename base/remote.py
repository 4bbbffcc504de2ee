"""Remote: the only way the control node touches a node. Run a command, start or stop a
background process (pid file + log file), put and get files, fan out over nodes.

Two transports share one small protocol: ``SSHRemote`` (paramiko; what runs use) and
``LocalRemote`` (subprocess; for unit-level fixtures that need a real server without sshd).
Background processes run in their own session (``setsid``) so signals reach the whole group.
"""

from __future__ import annotations

import math
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import paramiko

from base.components import ProcState, parse_stat
from base.errors import EnvironmentFailed, UsageError
from base.hostkeys import UnknownHostKey

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


class RemoteError(EnvironmentFailed):
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

    def signal_pidfile(self, pidfile: str, sig: str) -> bool:
        """Signal the process (group) of ``pidfile`` in one remote command; False when none."""
        pf = shlex.quote(pidfile)
        res = self.remote.run(f"test -f {pf} && p=$(cat {pf}) && ({signal_group(sig)})", timeout=10)
        return res.ok

    def stop(self, pidfile: str, grace: float = 5.0) -> bool:
        """SIGCONT and SIGTERM, wait up to ``grace``, then SIGKILL. True if something was running.
        One remote command, waiting on the node: over SSH each command is a round trip (0.25-0.6 s
        each on a loaded 2-core control node), and stopping took five or more of them."""
        res = self.remote.run(stop_command(pidfile, grace), timeout=grace + 10)
        return res.stdout.strip() in ("term", "kill")

    def kill(self, pidfile: str) -> bool:
        """SIGKILL the process (group) and wait until it is gone; True if something was running."""
        res = self.remote.run(kill_command(pidfile), timeout=KILL_WAIT_S + 10)
        return res.stdout.strip() == "kill"


_POLL_S = 0.1
# SIGKILL is delivered, not done: on a loaded node the process can still be listed for a while,
# and a caller that checks it, or starts its successor on the same port, must not see it. Bounded,
# because a process in uninterruptible sleep dies only when its I/O ends.
KILL_WAIT_S = 5.0
_KILL_WAIT_POLLS = math.ceil(KILL_WAIT_S / _POLL_S)


def signal_group(sig: str) -> str:
    """Shell that sends ``sig`` to the process group ``$p`` leads (a negative pid: ``setsid`` made it
    a group), else to ``$p`` alone. ``kill -SIG -PID``, never ``kill -SIG -- -PID``: dash's kill (the
    ``sh`` of Debian and Ubuntu) refuses ``--``, and the group then went unsignalled."""
    return f"kill -{sig} -$p 2>/dev/null || kill -{sig} $p 2>/dev/null"


def _pid_and_gone(pidfile: str) -> str:
    """Shell prologue shared by stop and kill: ``$p`` from the pidfile and ``gone`` (``parse_stat``'s
    stopped: no process, or a zombie); prints ``none`` and exits when nothing runs, after killing
    whatever its group left (a child of a leader that died)."""
    return (
        f"p=$(cat {shlex.quote(pidfile)} 2>/dev/null); case \"$p\" in ''|*[!0-9]*) echo none; exit 0;; esac; "
        "gone() { s=$(ps -o stat= -p \"$p\" 2>/dev/null); case \"$s\" in ''|*[ZXx]*) return 0;; esac; return 1; }; "
        f"if gone; then {_STRAGGLERS} echo none; exit 0; fi; "
    )


# Once the leader is gone, what is left of its group is a straggler (a child that ignored the
# signal or outlived its parent): killed, so that a stop leaves nothing of the group running. The
# group id cannot have been reused: the kernel gives no new process the id of a group that exists.
_STRAGGLERS = "kill -KILL -$p 2>/dev/null;"

_KILL_AND_WAIT = (
    f"{signal_group('KILL')}; "
    f"i=0; while [ $i -lt {_KILL_WAIT_POLLS} ] && ! gone; do sleep {_POLL_S}; i=$((i+1)); done; echo kill"
)


def kill_command(pidfile: str) -> str:
    """Shell that SIGKILLs the process (group) of ``pidfile``, waits until it is gone (up to
    ``KILL_WAIT_S``) and prints ``kill``, or ``none`` when nothing ran."""
    return _pid_and_gone(pidfile) + _KILL_AND_WAIT


def stop_command(pidfile: str, grace: float) -> str:
    """Shell that stops the process (group) of ``pidfile`` and prints ``none`` (nothing ran), ``term``
    (gone within ``grace`` of SIGTERM; its group's stragglers SIGKILLed) or ``kill`` (SIGKILLed after
    it, as ``kill_command``). A paused process is continued first: it cannot act on SIGTERM."""
    polls = max(1, math.ceil(grace / _POLL_S))
    term = f"gone && {{ {_STRAGGLERS} echo term; exit 0; }}"
    return (
        _pid_and_gone(pidfile)
        + f"{signal_group('CONT')}; {signal_group('TERM')}; "
        f"i=0; while [ $i -lt {polls} ]; do {term}; sleep {_POLL_S}; i=$((i+1)); done; {term}; "
        + _KILL_AND_WAIT
    )


class SSHRemote:
    """paramiko transport. One SSH connection per node; channels are opened per command.

    A dropped connection is re-established (``RECONNECTS`` tries, backing off) when it is found
    dead *before* a command is sent, so a command never runs twice; a connection lost while a
    command runs fails that command (``RemoteError``), and the next one reconnects. File copies
    are idempotent and are retried once after a reconnect."""

    RECONNECTS = 4
    BACKOFF_S = 0.5

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
        (``base.hostkeys``); without it every host key is refused."""
        self.name = name
        self.host = host
        self.port = port
        self.user = user
        self.key_file = key_file
        self.connect_timeout = connect_timeout
        self.host_keys = host_keys
        self.reconnects = 0  # how many times a dropped connection was re-established
        self._lock = threading.Lock()  # guards the client and the SFTP session while they are replaced
        self._sftp_lock = threading.Lock()
        self._sftp: paramiko.SFTPClient | None = None
        self._client = self._connect()

    def _connect(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if self.host_keys is not None:
            self.host_keys(client)
        else:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        where = f"{self.name}: SSH to {self.user}@{self.host}:{self.port}"
        try:
            client.connect(hostname=self.host, port=self.port, username=self.user, key_filename=self.key_file,
                           timeout=self.connect_timeout, banner_timeout=self.connect_timeout,
                           auth_timeout=self.connect_timeout, allow_agent=False,
                           look_for_keys=self.key_file is None)
        except UnknownHostKey as e:
            raise HostKeyRefused(f"{where}: {e}") from None
        except paramiko.BadHostKeyException as e:
            raise HostKeyRefused(f"{where}: the host key CHANGED ({e}); refused: remove the old key from "
                                 "known_hosts only if the change is expected") from None
        except (paramiko.SSHException, OSError, EOFError) as e:
            client.close()
            raise RemoteError(f"{where} failed: {e}") from e
        return client

    def _alive_client(self) -> paramiko.SSHClient:
        """The connection, re-established if it has dropped (bounded retries with backoff)."""
        with self._lock:
            transport = self._client.get_transport()
            if transport is not None and transport.is_active():
                return self._client
            error: RemoteError | None = None
            for attempt in range(self.RECONNECTS):
                time.sleep(self.BACKOFF_S * attempt)
                try:
                    fresh = self._connect()
                except HostKeyRefused:
                    raise
                except RemoteError as e:
                    error = e
                    continue
                self._client.close()
                self._client, self._sftp = fresh, None
                self.reconnects += 1
                return fresh
            raise RemoteError(f"{self.name}: unreachable: the SSH connection dropped and {self.RECONNECTS} "
                              f"reconnects failed ({error})")

    def channel(self) -> paramiko.Channel:
        """A new session channel on the (re-established if need be) connection."""
        for attempt in range(2):
            client = self._alive_client()
            try:
                return client.get_transport().open_session(timeout=self.connect_timeout)  # type: ignore[union-attr]
            except (paramiko.SSHException, OSError, EOFError, AttributeError) as e:
                if attempt:
                    raise RemoteError(f"{self.name}: cannot open an SSH channel: {e}") from e
                client.close()  # dead though not yet noticed: the next try reconnects
        raise AssertionError("unreachable")

    def run(self, command: str, timeout: float = 60.0, check: bool = False) -> CommandResult:
        chan = self.channel()
        try:
            chan.settimeout(timeout)
            chan.exec_command(command)
            stdout, stderr = chan.makefile("rb"), chan.makefile_stderr("rb")
            out = stdout.read().decode("utf-8", "replace")
            err = stderr.read().decode("utf-8", "replace")
            code = chan.recv_exit_status()
        except (paramiko.SSHException, OSError, TimeoutError, EOFError) as e:
            raise RemoteError(f"{self.name}: {command!r} failed: {e}") from e
        finally:
            chan.close()
        result = CommandResult(command, code, out, err)
        if check and not result.ok:
            raise RemoteError(f"{self.name}: {command!r} exited {code}: {err.strip() or out.strip()}")
        return result

    def _copy(self, op: Callable[[paramiko.SFTPClient], None]) -> None:
        with self._sftp_lock:
            for attempt in range(2):
                client = self._alive_client()
                try:
                    if self._sftp is None:
                        self._sftp = client.open_sftp()
                    op(self._sftp)
                    return
                except (paramiko.SSHException, EOFError, ConnectionError, TimeoutError) as e:
                    self._sftp = None
                    client.close()  # the next try reconnects
                    if attempt:
                        raise RemoteError(f"{self.name}: file copy failed: {e}") from e

    def put(self, local: str | os.PathLike[str], remote: str) -> None:
        self._copy(lambda sftp: sftp.put(str(local), remote))

    def get(self, remote: str, local: str | os.PathLike[str]) -> None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        self._copy(lambda sftp: sftp.get(remote, str(local)))

    def close(self) -> None:
        with self._lock:
            if self._sftp is not None:
                self._sftp.close()
            self._client.close()


class LocalRemote:
    """Same protocol over subprocess on this machine, each command run by ``shell -c`` (``sh``; a
    test may name the shell a node's login shell would be)."""

    def __init__(self, name: str = "local", shell: str = "sh") -> None:
        self.name = name
        self.shell = shell

    def run(self, command: str, timeout: float = 60.0, check: bool = False) -> CommandResult:
        try:
            p = subprocess.run(
                [self.shell, "-c", command], capture_output=True, text=True, timeout=timeout, check=False
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
