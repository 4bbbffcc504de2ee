"""Each command judges its Spark master and its output paths before it does any work: a malformed
master or an unwritable path is one line naming the flag (exit 254), a standalone master nothing
answers at (or where something other than Spark's RPC answers) one line and exit 2, all before a cluster, a session or a check starts."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.cli import main

REPO = Path(__file__).resolve().parents[2]
RUN = next((REPO / "tests/data/store/isolate-broker").glob("2*/"))
UNWRITABLE = Path("/proc/zkfence-no-such-dir")


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on return: nothing listens there


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("argv, flag", [
    (["check", str(RUN), "--junit", str(UNWRITABLE / "j.xml")], "--junit"),
    (["check", str(RUN), "--parquet", str(UNWRITABLE)], "--parquet"),
    (["analyze", str(REPO / "tests/data/store"), "--out", str(UNWRITABLE)], "--out"),
    (["run", "--store", str(UNWRITABLE)], "--store"),
    (["hunt", "--out", str(UNWRITABLE / "m.toml")], "--out"),
    (["campaign", str(REPO / "campaigns/nightly.toml"), "--store", str(UNWRITABLE)], "--store"),
])
def test_an_unwritable_output_is_the_flags_one_line_error(argv: list[str], flag: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 254
    assert _one_line(capsys).startswith(f"harness: {flag} {UNWRITABLE}")


def test_a_run_with_an_unwritable_junit_file_starts_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--store", str(tmp_path / "store"), "--junit", str(tmp_path)]) == 254
    assert _one_line(capsys) == f"harness: --junit {tmp_path}: is a directory, not a file"
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("command", [["check", str(RUN)], ["analyze", str(REPO / "tests/data/store")], ["run"],
                                     ["repro", "KAFKA-14845"], ["check-server", "start"]])
def test_a_malformed_master_is_the_flags_error(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([*command, "--spark-master", "bogus://x"])
    assert e.value.code == 254
    assert "argument --spark-master: 'bogus://x' is not a Spark master URL" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["check", str(RUN), "--no-server"], ["run"], ["repro", "KAFKA-14845"],
                                     ["check-server", "start"]])
def test_a_bad_lanes_variable_is_one_line_before_anything_starts(command: list[str], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARNESS_CHECK_LANES", "many")
    store = ["--store", str(tmp_path / "store")] if command[0] in ("run", "repro") else []
    assert main([*command, *store]) == 254
    assert _one_line(capsys) == ("harness: $HARNESS_CHECK_LANES: 'many' is not a number of lanes "
                                 "(1 runs the checkers one after another)")
    assert not (tmp_path / "store").exists()


class _QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # its request log goes to stderr, where the command's one line is read


@pytest.fixture
def web_server() -> Iterator[int]:
    """A loopback HTTP server (as a master's web UI is): the port a user may give for the RPC one."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _QuietHandler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        t.join(10)


@pytest.mark.parametrize("listener", ["none", "http"])
@pytest.mark.parametrize("command", [["check", str(RUN), "--no-server"],
                                     ["analyze", str(REPO / "tests/data/store"), "--no-server"],
                                     ["check-server", "start"]])
def test_a_standalone_master_that_is_not_there_is_unknown_at_once(command: list[str], listener: str, tmp_path: Path,
                                                                  request: pytest.FixtureRequest,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listening, or something other than Spark's RPC answering (a web UI's port)."""
    port = request.getfixturevalue("web_server") if listener == "http" else _refused_port()
    url = f"spark://127.0.0.1:{port}"
    if command[0] == "analyze":
        command = [*command, "--out", str(tmp_path / "analysis")]
    assert main([*command, "--spark-master", url]) == 2
    why = (f"127.0.0.1:{port} answers '<!DOCTYPE HTML>', not Spark's RPC" if listener == "http"
           else f"nothing accepts connections at 127.0.0.1:{port} (Connection refused)")
    assert _one_line(capsys) == f"harness: Spark master {url}: {why}"
