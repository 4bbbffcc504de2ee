"""Embedded sshd: the harness's own OpenSSH server for the local inventory, on a run-time port,
listening only on the nodes' loopback addresses, with host and client keys generated per run.
It never reads or touches the system sshd's configuration or keys.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
from pathlib import Path

from base.components.process import LocalProcess
from base.ports import free_port_on_all
from base.wait import wait_until

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


class EmbeddedSshd(LocalProcess):
    """The harness's own sshd for the embedded inventory (a Component)."""

    role = "sshd"

    def __init__(self, workdir: Path, addresses: list[str], port: int = 0, user: str = "",
                 netns: str | None = None) -> None:
        """``netns``: run inside that network namespace (a test host's own sshd on port 22)."""
        super().__init__("sshd", workdir / "sshd.log")
        self.netns = netns
        self.workdir = workdir
        self.addresses = addresses
        self.port = port
        self.user = user

    @property
    def client_key(self) -> Path:
        return self.workdir / "client_ed25519"

    @property
    def host_key(self) -> Path:
        return self.workdir / "host_ed25519"

    @property
    def pidfile(self) -> Path:
        return self.workdir / "sshd.pid"

    def _keygen(self, path: Path) -> None:
        if not path.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "zkfence-harness", "-f", str(path)],
                check=True,
                capture_output=True,
            )

    def config_text(self) -> str:
        lines = [f"Port {self.port}"]
        lines += [f"ListenAddress {a}" for a in self.addresses]
        lines += [
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.workdir / 'authorized_keys'}",
            f"PidFile {self.pidfile}",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            "StrictModes no",
            "PrintMotd no",
            "UseDNS no",
            "MaxSessions 200",
            "MaxStartups 200:30:400",
            "Subsystem sftp internal-sftp",
            # Bash run by sshd reads ~/.bashrc before every command unless it thinks it is nested
            # (SHLVL >= 1; bash's SSH_SOURCE_BASHRC, on in Debian). The harness's node commands need
            # none of it, and a developer's rc file can be dear: this machine's root runs `pyenv
            # init` there, about 50 processes, 110 ms and 150 CPU-ms per command (bench/RESULTS.md).
            "SetEnv SHLVL=1",
            f"AllowUsers {self.user}",
            "LogLevel ERROR",
        ]
        return "\n".join(lines) + "\n"

    def start(self, timeout: float = 15.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.user = self.user or getpass.getuser()
        self._keygen(self.host_key)
        self._keygen(self.client_key)
        (self.workdir / "authorized_keys").write_text(Path(f"{self.client_key}.pub").read_text())
        os.chmod(self.workdir / "authorized_keys", 0o600)
        # Privilege separation directory sshd insists on (harmless if it already exists).
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port_on_all(self.addresses)
        cfg = self.workdir / "sshd_config"
        cfg.write_text(self.config_text())
        with open(self.logfile, "ab") as log:
            inside = ["ip", "netns", "exec", self.netns] if self.netns else []
            process = self._spawn(
                [*inside, SSHD, "-D", "-e", "-f", str(cfg)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        pending = list(self.addresses)

        def listening() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"sshd exited with {process.returncode}: {self.logfile.read_text()[-500:]}")
            try:
                with socket.create_connection((pending[0], self.port), timeout=1):
                    pending.pop(0)
            except OSError:
                pass
            return not pending

        if not wait_until(listening, timeout, poll=0.05):
            raise RuntimeError(f"sshd not listening on {pending} port {self.port} after {timeout}s")
