"""ProcessControl.stop and .kill on real processes, each in one remote command
(``remote.stop_command``, ``remote.kill_command``): a process that exits on SIGTERM, one that
ignores it (SIGKILLed after the grace), a paused one (continued first), and nothing to stop (no
pidfile, a process already gone). Both return only once the process is gone: a fast bounce starts
its successor right after, and a SIGKILLed process can still be listed for a while on a loaded node."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from harness.components import ProcState
from harness.remote import LocalRemote, ProcessControl
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


def _start(tmp_path: Path, script: str) -> tuple[ProcessControl, str, int]:
    control = ProcessControl(LocalRemote())
    pidfile = str(tmp_path / "p.pid")
    pid = control.start(f"sh -c {script!r}", str(tmp_path), pidfile, str(tmp_path / "p.log"))
    time.sleep(0.3)  # the shell has set its traps
    return control, pidfile, pid


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in "ZXx"


@pytest.mark.parametrize("script, pause", [
    ("sleep 30 & wait", False),
    ("trap '' TERM; while :; do sleep 0.1; done", False),
    ("sleep 30 & wait", True),
])
def test_stop_ends_the_process_whatever_it_does_with_sigterm(tmp_path: Path, script: str, pause: bool) -> None:
    control, pidfile, pid = _start(tmp_path, script)
    if pause:
        os.killpg(pid, signal.SIGSTOP)
        wait_for(lambda: control.state(pidfile) is ProcState.PAUSED, 10, "the process to be paused")
    assert control.stop(pidfile, grace=1.0) is True
    assert _gone(pid) and control.state(pidfile) is ProcState.STOPPED


def test_stop_with_nothing_running_says_so(tmp_path: Path) -> None:
    control = ProcessControl(LocalRemote())
    assert control.stop(str(tmp_path / "none.pid"), grace=1.0) is False
    _, pidfile, pid = _start(tmp_path, "exit 0")
    assert control.stop(pidfile, grace=1.0) is False


@pytest.mark.parametrize("pause", [False, True])
def test_kill_returns_once_the_process_is_gone(tmp_path: Path, pause: bool) -> None:
    control, pidfile, pid = _start(tmp_path, "trap '' TERM; while :; do sleep 0.1; done")
    if pause:
        os.killpg(pid, signal.SIGSTOP)
    assert control.kill(pidfile) is True
    assert _gone(pid) and control.state(pidfile) is ProcState.STOPPED
    assert control.kill(pidfile) is False
    assert control.kill(str(tmp_path / "none.pid")) is False
