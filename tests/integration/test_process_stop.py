"""ProcessControl.stop and .kill on real processes, each in one remote command
(``remote.stop_command``, ``remote.kill_command``): a process that exits on SIGTERM, one that
ignores it (SIGKILLed after the grace), a paused one (continued first), and nothing to stop (no
pidfile, a process already gone). Both return only once the process is gone: a fast bounce starts
its successor right after, and a SIGKILLed process can still be listed for a while on a loaded node.
And nothing of its group is left, whether the commands run in bash or in dash: dash's kill refused
``kill -SIG -- -PID``, so a paused process's child stayed stopped for good and a child of a stopped
one ran on."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from base.components import ProcState
from base.remote import LocalRemote, ProcessControl
from tests.waiting import wait_for

pytestmark = pytest.mark.integration


# The login shells a node may run the commands with: bash (root's on Debian) and dash (``sh``,
# and the login shell ``useradd`` gives a new user there).
@pytest.fixture(params=["dash", "bash"])
def shell(request: pytest.FixtureRequest) -> str:
    return request.param


def _start(tmp_path: Path, script: str, shell: str) -> tuple[ProcessControl, str, int]:
    control = ProcessControl(LocalRemote(shell=shell))
    pidfile = str(tmp_path / "p.pid")
    pid = control.start(f"sh -c {script!r}", str(tmp_path), pidfile, str(tmp_path / "p.log"))
    time.sleep(0.3)  # the shell has set its traps
    return control, pidfile, pid


def _group_gone(pgid: int) -> bool:
    """No process of the group ``pgid`` is left but zombies: not its leader, not a child of it."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZXx":
            return False
    return True


@pytest.mark.parametrize("script, pause", [
    ("sleep 30 & wait", False),
    ("trap '' TERM; while :; do sleep 0.1; done", False),
    ("sleep 30 & wait", True),
    ("(trap '' TERM; sleep 30) & wait", False),  # the leader ends on SIGTERM, its child does not
])
def test_stop_ends_the_process_whatever_it_does_with_sigterm(tmp_path: Path, script: str, pause: bool,
                                                            shell: str) -> None:
    control, pidfile, pid = _start(tmp_path, script, shell)
    if pause:
        os.killpg(pid, signal.SIGSTOP)
        wait_for(lambda: control.state(pidfile) is ProcState.PAUSED, 10, "the process to be paused")
    assert control.stop(pidfile, grace=1.0) is True
    # a member killed last may still be on its way out when stop returns (seen once in CI, under load)
    wait_for(lambda: _group_gone(pid), 5, "every process of the group to end")
    assert control.state(pidfile) is ProcState.STOPPED


def test_stop_with_nothing_running_says_so(tmp_path: Path, shell: str) -> None:
    control = ProcessControl(LocalRemote(shell=shell))
    assert control.stop(str(tmp_path / "none.pid"), grace=1.0) is False
    _, pidfile, pid = _start(tmp_path, "exit 0", shell)
    assert control.stop(pidfile, grace=1.0) is False


@pytest.mark.parametrize("pause", [False, True])
def test_kill_returns_once_the_process_is_gone(tmp_path: Path, pause: bool, shell: str) -> None:
    control, pidfile, pid = _start(tmp_path, "trap '' TERM; while :; do sleep 0.1; done", shell)
    if pause:
        os.killpg(pid, signal.SIGSTOP)
    assert control.kill(pidfile) is True
    assert _group_gone(pid) and control.state(pidfile) is ProcState.STOPPED
    assert control.kill(pidfile) is False
    assert control.kill(str(tmp_path / "none.pid")) is False


def test_a_command_under_recording_exit_is_stopped_killed_and_paused_as_one(tmp_path: Path, shell: str) -> None:
    """A Kafka broker's JVM runs under ``kafka.recording_exit``'s shell, which leads the group: a
    stop's SIGTERM lets the command finish its shutdown before the group counts as gone (a Kafka
    controlled shutdown), and its exit status is written; a pause stops both; a kill writes none."""
    from base.components.kafka import recording_exit

    done, exit_file = tmp_path / "done", str(tmp_path / "exit")
    slow_exit = f"trap 'sleep 0.5; echo shut > {done}; exit 0' TERM; while :; do sleep 0.1; done"
    control, pidfile, pid = _start_recorded(tmp_path, recording_exit(f"sh -c {slow_exit!r}", exit_file), shell)
    os.killpg(pid, signal.SIGSTOP)
    wait_for(lambda: control.state(pidfile) is ProcState.PAUSED, 10, "the group to be paused")
    assert control.stop(pidfile, grace=10.0) is True  # continued, then SIGTERM
    assert done.read_text() == "shut\n" and Path(exit_file).read_text() == "0\n"
    assert _group_gone(pid) and control.state(pidfile) is ProcState.STOPPED
    Path(exit_file).unlink()
    control, pidfile, pid = _start_recorded(tmp_path, recording_exit("sh -c 'sleep 30'", exit_file), shell)
    assert control.kill(pidfile) is True
    assert _group_gone(pid) and not Path(exit_file).exists()


def _start_recorded(tmp_path: Path, command: str, shell: str) -> tuple[ProcessControl, str, int]:
    control = ProcessControl(LocalRemote(shell=shell))
    pidfile = str(tmp_path / "r.pid")
    pid = control.start(command, str(tmp_path), pidfile, str(tmp_path / "r.log"))
    time.sleep(0.3)  # the shells have set their traps
    return control, pidfile, pid
