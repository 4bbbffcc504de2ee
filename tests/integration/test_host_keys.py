"""SSH host keys against a real sshd: unknown keys refused with a one-line hint, trust on first
use records the key beside the inventory and says so, a changed key is refused in every mode,
and the embedded sshd's own key is pinned."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from base import hostkeys
from base.components.sshd import EmbeddedSshd
from base.errors import UsageError
from base.remote import HostKeyRefused, SSHRemote

pytestmark = pytest.mark.integration
ADDRESS = "127.0.0.31"


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = EmbeddedSshd(tmp_path_factory.mktemp("sshd"), [ADDRESS])
    server.start()
    yield server
    server.stop()


def _connect(sshd: EmbeddedSshd, mode: str, known_hosts: Path, trust_file: Path, said: list[str]) -> SSHRemote:
    return SSHRemote("n1", ADDRESS, sshd.port, sshd.user, str(sshd.client_key),
                     host_keys=lambda c: hostkeys.configure(c, mode, str(known_hosts), trust_file, "vms.toml",
                                                            said.append))


def test_unknown_key_refused_then_trusted_on_first_use_then_verified(sshd, tmp_path):
    known, trust, said = tmp_path / "known_hosts", tmp_path / "vms.known_hosts", []
    with pytest.raises(HostKeyRefused) as refused:
        _connect(sshd, hostkeys.VERIFY, known, trust, said)
    msg = str(refused.value)
    assert isinstance(refused.value, UsageError) and "\n" not in msg  # one line, exit 254
    assert "unknown host key ssh-ed25519 SHA256:" in msg and f"ssh-keyscan -p {sshd.port} {ADDRESS}" in msg
    assert 'host_keys = "trust_on_first_use"' in msg and not trust.exists()

    remote = _connect(sshd, hostkeys.TRUST_ON_FIRST_USE, known, trust, said)
    assert remote.run("echo hi").stdout.strip() == "hi"
    remote.close()
    assert len(said) == 1 and "trusted the new host key" in said[0] and str(trust) in said[0]
    recorded = trust.read_text()
    assert recorded.startswith(f"[{ADDRESS}]:{sshd.port} ssh-ed25519 ")
    assert recorded.split()[2] == Path(f"{sshd.host_key}.pub").read_text().split()[1]

    remote = _connect(sshd, hostkeys.VERIFY, known, trust, said)  # now known: verified, nothing new said
    assert remote.run("true").ok
    remote.close()
    assert len(said) == 1


def test_a_changed_key_is_refused_even_on_first_use(sshd, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    trust = tmp_path / "vms.known_hosts"
    trust.write_text(f"[{ADDRESS}]:{sshd.port} " + " ".join(Path(f"{other}.pub").read_text().split()[:2]) + "\n")
    for mode in hostkeys.MODES:
        with pytest.raises(HostKeyRefused, match="CHANGED"):
            _connect(sshd, mode, tmp_path / "none", trust, [])


def test_the_embedded_sshd_key_is_pinned(sshd):
    remote = SSHRemote("n1", ADDRESS, sshd.port, sshd.user, str(sshd.client_key),
                       host_keys=lambda c: hostkeys.pin(c, [(ADDRESS, sshd.port)], Path(f"{sshd.host_key}.pub")))
    assert remote.run("true").ok
    remote.close()
    with pytest.raises(HostKeyRefused):  # no host_keys at all: nothing is trusted
        SSHRemote("n1", ADDRESS, sshd.port, sshd.user, str(sshd.client_key),
                  host_keys=lambda c: c.set_missing_host_key_policy(hostkeys.RefuseUnknown(Path("x"), "inv")))
