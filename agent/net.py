"""Control-plane transport: a threaded TCP server answering one frame with one frame, and a
blocking request helper. Every agent→agent request goes to ``peers[id]`` (a Toxiproxy listener),
so cutting a link really cuts it.

Every request carries the run's control token (``use_token``; the harness makes one per run and
gives it to the agents in their config and to its own clients); a server with a token answers
anything else with CLUSTER_AUTHORIZATION_FAILED and never passes it to the handler, so nothing
but this run's harness and agents can drive an agent."""

from __future__ import annotations

import hmac
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any

from agent.errors import CLUSTER_AUTHORIZATION_FAILED
from agent.frames import FrameError, recv_frame, send_frame
from zkwire.client import parse_addr

Handler = Callable[[dict[str, Any]], dict[str, Any]]

_token: list[str] = [""]


def use_token(token: str) -> None:
    """The token this process's requests carry from now on ("" for none)."""
    _token[0] = token


def request(addr: str, msg: dict[str, Any], timeout: float = 2.0) -> dict[str, Any]:
    """Send one request on a fresh connection and return the reply. Raises OSError (including
    TimeoutError and ConnectionError) when the outcome is unknown."""
    with socket.create_connection(parse_addr(addr), timeout=timeout) as sock:
        sock.settimeout(timeout)
        send_frame(sock, {**msg, "token": _token[0]} if _token[0] else msg)
        reply = recv_frame(sock)
    if reply is None:
        raise ConnectionError(f"{addr} closed the connection without replying")
    return reply


class _ThreadingServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


class ControlServer:
    """Listens on (host, port); ``handler(request) -> reply`` runs on the connection's thread."""

    def __init__(self, host: str, port: int, handler: Handler, token: str = "") -> None:
        outer = self

        def authorized(msg: dict[str, Any]) -> bool:
            given = msg.pop("token", "")
            return not token or (isinstance(given, str) and hmac.compare_digest(given.encode(), token.encode()))


        class _Conn(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                while not outer.closed:
                    try:
                        msg = recv_frame(sock)
                    except (OSError, FrameError):
                        return
                    if msg is None:
                        return
                    if not authorized(msg):
                        reply = {"error_code": CLUSTER_AUTHORIZATION_FAILED, "error": "missing or wrong control token"}
                    else:
                        try:
                            reply = handler(msg)
                        except Exception as e:  # noqa: BLE001 - a handler bug must not kill the listener
                            reply = {"error_code": -1, "error": f"{type(e).__name__}: {e}"}
                    try:
                        send_frame(sock, reply)
                    except OSError:
                        return

        self.closed = False
        self.server = _ThreadingServer((host, port), _Conn)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="control-server", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.closed = True
        self.server.shutdown()
        self.server.server_close()
