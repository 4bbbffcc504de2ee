"""A tiny TCP result board on the driver: Spark tasks report part verdicts as they finish and ask
whether their history is already decided.

Spark only returns a job's results when every task is done, which is too late to cancel the
parts of a history once one part is illegal (Porcupine's c50-bad: one part fails in ms, two
others run for minutes). Tasks therefore connect back to the driver (they can always reach it),
send ``R <json>`` per finished part and poll ``Q <history>`` -> ``1``/``0`` between search slices.
The driver waits on :attr:`Board.decided` and then cancels the whole job group.

When the parts are only known in the tasks (``checkers.ref_search``: the histories are parsed in
the job), the board is made with the number of tasks; each task announces ``A <json>`` the parts
it holds per history, and ``F <history>`` a history it found it cannot read (the driver parses it
again itself). A history is then decided when it is dead, given up, or when every task has
announced and all its parts reported.

Protocol: one line per message, UTF-8 JSON payloads.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import uuid
from collections.abc import Callable
from typing import Any


class Board:
    def __init__(self, expected: dict[str, int], host: str = "127.0.0.1", tasks: int = 0) -> None:
        self.expected = dict(expected)  # history -> number of parts (with ``tasks``: announced so far)
        self.tasks = tasks  # tasks still to announce their parts (0: ``expected`` is whole)
        self.ops: dict[str, int] = dict.fromkeys(expected, 0)  # history -> ops announced
        self.given_up: set[str] = set()
        self.spent: list[dict[str, Any]] = []  # what each task says it spent (``S <json>``)
        self.results: list[dict[str, Any]] = []
        self.done_parts: dict[str, int] = dict.fromkeys(expected, 0)
        self.dead: set[str] = set()
        self.lock = threading.Lock()
        self.decided = threading.Event()
        board = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for raw in self.rfile:
                    line = raw.decode("utf-8").rstrip("\n")
                    if line.startswith("Q "):
                        with board.lock:
                            h = line[2:]
                            ans = b"1\n" if h in board.dead or h in board.given_up else b"0\n"
                        self.wfile.write(ans)
                        self.wfile.flush()
                    elif line.startswith("R "):
                        board.add(json.loads(line[2:]))
                    elif line.startswith("A "):
                        board.announce(json.loads(line[2:]))
                    elif line.startswith("F "):
                        board.give_up(line[2:])
                    elif line.startswith("S "):
                        with board.lock:
                            board.spent.append(json.loads(line[2:]))

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((host, 0), Handler)
        self.address = self.server.server_address[:2]
        self.thread = threading.Thread(target=self.server.serve_forever, name="result-board", daemon=True)
        self._check_decided()

    def start(self) -> Board:
        self.thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Board:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, r: dict[str, Any]) -> None:
        with self.lock:
            h = r["history"]
            self.results.append(r)
            self.done_parts[h] = self.done_parts.get(h, 0) + 1
            if r["valid"] is False:
                self.dead.add(h)
            self._check_decided()

    def announce(self, held: dict[str, list[int]]) -> None:
        """A task's parts and ops per history (``{history: [parts, ops]}``)."""
        with self.lock:
            for h, (parts, ops) in held.items():
                self.expected[h] = self.expected.get(h, 0) + parts
                self.ops[h] = self.ops.get(h, 0) + ops
                self.done_parts.setdefault(h, 0)
            self.tasks -= 1
            self._check_decided()

    def give_up(self, history: str) -> None:
        with self.lock:
            self.given_up.add(history)
            self.expected.setdefault(history, 0)
            self._check_decided()

    def _check_decided(self) -> None:
        stopped = self.dead | self.given_up
        if self.tasks > 0:  # parts still unannounced: only stopped histories are decided
            if self.expected and all(h in stopped for h in self.expected):
                self.decided.set()
            return
        if all(h in stopped or self.done_parts.get(h, 0) >= n for h, n in self.expected.items()):
            self.decided.set()

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.results)


class BoardClient:
    """Task side. Falls back to "never cancelled" if the board cannot be reached."""

    def __init__(self, address: tuple[str, int] | list[Any], timeout: float = 10.0) -> None:
        try:
            self.sock: socket.socket | None = socket.create_connection(tuple(address), timeout=timeout)
            self.rfile = self.sock.makefile("rb")
        except OSError:
            self.sock = None

    def cancelled(self, history: str) -> bool:
        if self.sock is None:
            return False
        try:
            self.sock.sendall(f"Q {history}\n".encode())
            return self.rfile.readline().strip() == b"1"
        except OSError:
            self.sock = None
            return False

    def report(self, result: dict[str, Any]) -> None:
        self._send("R " + json.dumps(result, default=str))

    def announce(self, held: dict[str, list[int]]) -> None:
        self._send("A " + json.dumps(held))

    def give_up(self, history: str) -> None:
        self._send(f"F {history}")

    def spent(self, seconds: dict[str, Any]) -> None:
        self._send("S " + json.dumps(seconds))

    def _send(self, line: str) -> None:
        if self.sock is None:
            return
        try:
            self.sock.sendall((line + "\n").encode())
        except OSError:
            self.sock = None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


def run_until_decided(sc: Any, board: Board, label: str, description: str, collect: Callable[[], Any],
                      grace_seconds: float = 0.0) -> dict[str, Any]:
    """Run ``collect`` (one Spark job) in a job group of its own on a thread, and cancel the group
    once ``board`` has decided every history, after ``grace_seconds`` for the tasks to end on their
    own (their rows then arrive). Returns ``rows`` (what ``collect`` returned), ``error`` (what it
    raised: a cancelled job raises) and ``cancelled``, as far as each happened."""
    from pyspark import InheritableThread

    group_id = f"{label}-{uuid.uuid4().hex[:8]}"
    outcome: dict[str, Any] = {}

    def job() -> None:
        sc.setJobGroup(group_id, description, interruptOnCancel=True)
        try:
            outcome["rows"] = collect()
        except Exception as e:  # noqa: BLE001 - a cancelled job raises; the board has the verdicts
            outcome["error"] = e

    th = InheritableThread(target=job, name=f"{label}-job")
    th.start()
    while th.is_alive():
        if board.decided.wait(0.05):
            if grace_seconds:
                th.join(grace_seconds)
            if th.is_alive():
                sc.cancelJobGroup(group_id)
                outcome["cancelled"] = True
            break
    th.join()
    return outcome
