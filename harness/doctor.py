"""`harness doctor`'s judgement, apart from its effects: what one node's probe printed becomes a
list of checks, each a line that passes or says what to fix.

The probe is one shell command per node (``probe_command``) printing ``key=value`` lines: the
user, root or password-less sudo, Java (ZooKeeper nodes) or Python with kazoo
(broker nodes), free disk under the work directory, and whether a broker reaches the control
node's Toxiproxy address. The node's clock, read apart with the shortest round trip of a few, is
judged against the zxid sweep's skew allowance.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

MIN_DISK_MB = 512
MIN_PYTHON = (3, 11)
MIN_JAVA = 11


@dataclass(frozen=True)
class Check:
    node: str
    what: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{self.node:<6} {self.what:<10} {'ok  ' if self.ok else 'FAIL'} {self.detail}"


def probe_command(workdir_base: str, java: str | None, python: str | None,
                  control: tuple[str, int] | None, pythonpath: str = "") -> str:
    """One shell command that prints what ``judge`` reads (nothing it runs changes the node);
    ``pythonpath``: where `harness setup` unpacked the agents' dependencies."""
    base = shlex.quote(workdir_base)
    parts = [
        "echo uid=$(id -u)",
        "(sudo -n true 2>/dev/null && echo sudo=yes || echo sudo=no)",
        f"d={base}; while [ ! -d \"$d\" ]; do d=$(dirname \"$d\"); done; "
        "echo disk_kb=$(df -Pk \"$d\" | awk 'NR==2{print $4}')",
    ]
    if java is not None:
        parts.append(f"echo java=$({shlex.quote(java)} -version 2>&1 | head -1)")
    if python is not None:
        script = ("import sys\nprint('python=%d.%d.%d' % sys.version_info[:3])\n"
                  "try:\n import kazoo, importlib.metadata as m; print('kazoo=' + m.version('kazoo'))\n"
                  "except Exception as e: print('kazoo=missing ' + type(e).__name__)\n")
        if control is not None:
            script += (f"import socket\ntry:\n socket.create_connection({control!r}, timeout=3).close(); "
                       "print('control=yes')\nexcept OSError as e: print('control=no ' + str(e))\n")
        env = f"PYTHONPATH={shlex.quote(pythonpath)} " if pythonpath else ""
        parts.append(f"({env}{shlex.quote(python)} -c {shlex.quote(script)} 2>&1 || echo python=missing)")
    return "; ".join(parts)


def parse_probe(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.isidentifier():
            out[key] = value.strip()
    return out


def judge(node: str, probe: dict[str, str], sent_at: float, received_at: float, skew_s: float,
          java: bool, python: bool, control: bool) -> list[Check]:
    """The checks of one node from its probe, the control node's clock around it, and what the
    node's roles need."""
    checks = [Check(node, "root", probe.get("uid") == "0" or probe.get("sudo") == "yes",
                    "root" if probe.get("uid") == "0" else "password-less sudo" if probe.get("sudo") == "yes"
                    else "neither root nor password-less sudo (needed for process faults and network rules)")]
    checks.append(_clock(node, probe.get("clock"), sent_at, received_at, skew_s))
    disk_mb = int(probe["disk_kb"]) // 1024 if probe.get("disk_kb", "").isdigit() else None
    checks.append(Check(node, "disk", disk_mb is not None and disk_mb >= MIN_DISK_MB,
                        f"{disk_mb} MiB free under the work directory" if disk_mb is not None else "unknown free space"))
    if java:
        checks.append(_java(node, probe.get("java", "")))
    if python:
        checks.append(_python(node, probe.get("python", "missing"), probe.get("kazoo", "missing")))
    if control:
        said = probe.get("control", "no answer")
        checks.append(Check(node, "toxiproxy", said == "yes",
                            "reaches the control node's Toxiproxy address" if said == "yes"
                            else f"cannot reach the control node's Toxiproxy address: {said}"))
    return checks


def _clock(node: str, clock: str | None, sent_at: float, received_at: float, skew_s: float) -> Check:
    try:
        remote = float(clock or "")
    except ValueError:
        return Check(node, "clock", False, "the node's clock could not be read")
    mid = (sent_at + received_at) / 2
    offset, slack = remote - mid, (received_at - sent_at) / 2
    bound = abs(offset) + slack
    return Check(node, "clock", bound <= skew_s,
                 f"offset {offset * 1000:+.1f} ms ± {slack * 1000:.1f} ms: the zxid sweep needs skew ≥ "
                 f"{bound * 1000:.1f} ms (allowed {skew_s * 1000:.0f} ms)")


def _java(node: str, line: str) -> Check:
    m = re.search(r'version "(\d+)(?:\.(\d+))?', line)
    if not m:
        return Check(node, "java", False, f"no Java runtime ({line or 'not found'})")
    major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
    return Check(node, "java", major >= MIN_JAVA, f"Java {major} ({line})" if major >= MIN_JAVA
                 else f"Java {major} is too old: ZooKeeper needs {MIN_JAVA}+")


def _python(node: str, version: str, kazoo: str) -> Check:
    try:
        parts = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:
        return Check(node, "python", False, f"no usable Python ({version})")
    if parts < MIN_PYTHON:
        return Check(node, "python", False, f"Python {version} is too old: the agent needs 3.11+")
    if kazoo.startswith("missing"):
        return Check(node, "python", False, f"Python {version} without kazoo: run `harness setup` or pip install kazoo")
    return Check(node, "python", True, f"Python {version}, kazoo {kazoo}")
