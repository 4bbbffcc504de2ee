"""HTTP/JSON control API for a running proxy (loopback only; stdlib ``http.server`` in a thread).

Every handler hops onto the proxy's event loop, so rules and connections are only ever touched
from one thread. Endpoints (JSON in, JSON out; errors are ``{"error": "one line"}``):

    GET    /health                      {"ok": true, "pid", "seed", "listeners", "rules", "connections"}
    GET    /listeners                   [{"index", "listen", "host", "port", "upstream"}]
    GET    /rules                       [rule + {"matched", "applied"}]
    POST   /rules                       a rule object, a list, or {"rules": [...]} -> {"ids": [...]}
    DELETE /rules                       remove all -> {"removed": n}
    DELETE /rules/<id>                  -> {"removed": true} (404 if unknown)
    POST   /arm/<name>                  start the rules whose budget.arm == name (window restarts)
    POST   /disarm/<name>
    GET    /armed                       {"name": seconds_since_armed}
    GET    /connections                 [per-connection summary]
    POST   /connections/<n>/close       body {"rst": bool} optional
    GET    /sessions                    [{"session_id", "conns", "negotiated_timeout_ms", ...}]
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nemesis.zkproxy.proxy import ZkProxy
from nemesis.zkproxy.rules import RuleError, parse_rules


class _HttpError(Exception):
    def __init__(self, status: int, msg: str) -> None:
        super().__init__(msg)
        self.status = status


MAX_BODY = 1 << 20  # a rules document is a few KiB


def _reject_constant(name: str) -> Any:
    raise _HttpError(400, f"request body is not strict JSON: {name} is not a number")


def decode_body(raw: bytes) -> Any:
    """A request body: empty -> None, else strict UTF-8 JSON (no NaN/Infinity); else a 400."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _HttpError(400, f"request body is not UTF-8: bad byte at offset {e.start}") from None
    if not text.strip():
        return None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise _HttpError(400, f"request body is not JSON: {e.msg} (line {e.lineno} column {e.colno})") from None


class ControlServer:
    def __init__(self, proxy: ZkProxy, loop: asyncio.AbstractEventLoop, host: str = "127.0.0.1", port: int = 0):
        self.proxy = proxy
        self.loop = loop
        self._added = 0
        handler = self._make_handler()
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.host, self.port = self.httpd.server_address[:2]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="zkproxy-control", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        async def run() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=10)

    # --- routes -------------------------------------------------------------------------------

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        p = self.proxy
        parts = [x for x in path.split("?", 1)[0].split("/") if x]
        if method == "GET" and parts == ["health"]:
            return 200, self._on_loop(lambda: {
                "ok": True, "pid": os.getpid(), "seed": p.seed, "listeners": p.listeners_info(),
                "rules": len(p.ruleset.rules), "connections": len(p.conns),
            })
        if method == "GET" and parts == ["listeners"]:
            return 200, self._on_loop(p.listeners_info)
        if parts[:1] == ["rules"]:
            if method == "GET" and len(parts) == 1:
                return 200, self._on_loop(lambda: [r.to_dict() for r in p.ruleset.rules])
            if method == "POST" and len(parts) == 1:
                if isinstance(body, dict) and "rules" not in body:
                    body = [body]
                start = self._added
                try:
                    rules = parse_rules(body, source="control API", start_index=start)
                    ids = self._on_loop(p.add_rules, rules)
                except RuleError as e:
                    raise _HttpError(400, str(e)) from None
                self._added += len(rules)
                return 200, {"ids": ids}
            if method == "DELETE" and len(parts) == 1:
                return 200, {"removed": self._on_loop(p.clear_rules)}
            if method == "DELETE" and len(parts) == 2:
                if not self._on_loop(p.remove_rule, parts[1]):
                    raise _HttpError(404, f"no rule with id {parts[1]!r}")
                return 200, {"removed": True}
        if method == "POST" and len(parts) == 2 and parts[0] == "arm":
            self._on_loop(p.arm, parts[1])
            return 200, {"armed": parts[1]}
        if method == "POST" and len(parts) == 2 and parts[0] == "disarm":
            return 200, {"disarmed": parts[1], "was_armed": self._on_loop(p.disarm, parts[1])}
        if method == "GET" and parts == ["armed"]:
            now = time.monotonic()
            return 200, self._on_loop(lambda: {k: now - v for k, v in p.ruleset.armed.items()})
        if method == "GET" and parts == ["connections"]:
            return 200, self._on_loop(lambda: [c.summary() for c in p.conns.values()])
        if method == "POST" and len(parts) == 3 and parts[0] == "connections" and parts[2] == "close":
            try:
                n = int(parts[1])
            except ValueError:
                raise _HttpError(400, f"connection ordinal must be an integer, got {parts[1]!r}") from None
            rst = bool(body.get("rst", False)) if isinstance(body, dict) else False
            if not self._on_loop(p.close_conn, n, rst):
                raise _HttpError(404, f"no open connection {n}")
            return 200, {"closed": n}
        if method == "GET" and parts == ["sessions"]:
            return 200, self._on_loop(lambda: [dict(s) for s in p.sessions.values()])
        raise _HttpError(404, f"no route {method} {path}")

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return None

            def _body(self) -> Any:
                cl = self.headers.get("Content-Length")
                if cl is None:
                    return None
                cl = cl.strip()
                if not (cl.isascii() and cl.isdigit()) or int(cl) > MAX_BODY:
                    self.close_connection = True  # the body's end is unknown: this connection is done
                    raise _HttpError(400, f"bad Content-Length {cl[:40]!r}: expected 0..{MAX_BODY}")
                n = int(cl)
                raw = self.rfile.read(n) if n else b""
                if len(raw) < n:
                    self.close_connection = True
                    raise _HttpError(400, f"request body ended after {len(raw)} of {n} bytes")
                return decode_body(raw)

            def _do(self, method: str) -> None:
                try:
                    body = self._body()
                    status, out = server.route(method, self.path, body)
                except _HttpError as e:
                    status, out = e.status, {"error": str(e)}
                except Exception as e:  # noqa: BLE001 - report, keep serving
                    status, out = 500, {"error": f"{type(e).__name__}: {e}"}
                try:
                    data = json.dumps(out, allow_nan=False).encode()
                except ValueError as e:
                    status, data = 500, json.dumps({"error": f"unserialisable answer: {e}"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._do("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._do("POST")

            def do_DELETE(self) -> None:  # noqa: N802
                self._do("DELETE")

        return Handler
