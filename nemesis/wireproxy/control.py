"""HTTP/JSON control API for a running wire proxy (loopback only; stdlib ``http.server`` in a thread).

Role in the data path: the harness (or a person with curl) changes a running proxy's rules, arms
them, releases held frames and closes connections through it; one API for every protocol's proxy
(``nemesis.zkproxy``, ``nemesis.kafkaproxy``): rule bodies are parsed with the proxy's own
``DIALECT``. Every handler hops onto the proxy's event loop, so rules and connections are only ever touched
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
    GET    /sessions                    [{"session_id", "conns", "negotiated_timeout_ms", ...}] (ZooKeeper; [] else)
    GET    /held                        [{"frame_seq", "conn", "dir", "rule_id", "bytes"}]: frames a hold keeps
    POST   /release                     release every held frame -> {"released": n}
    POST   /release/<rule_id>           release the frames that rule holds -> {"released": n}
    GET    /captured                    [{"frame_seq", "listener", "dir", "rule_id", "bytes"}]: frames a capture kept
    POST   /replay                      re-send every captured request on a new upstream connection ->
                                        {"replayed": [{"replay_of", "request_seq", "response_seq", "api", "error"}]}
    POST   /replay/<rule_id>            the same for the frames that rule captured (400: nothing captured, or a
                                        proxy whose protocol cannot replay)

Total on hostile input: every malformed request gets a 4xx and a one-line ``{"error": ...}`` (never
a 500, 501 or an HTML page): an unknown path 404, a known path with another method 405, a body that
is not UTF-8 / strict JSON / nested past MAX_DEPTH / a valid rule, or a body on a route that takes
none 400, a POST without Content-Length or a chunked body 411. The checks are pure functions
(``body_length``, ``decode_body``, ``match_route``, ``validate``) so they can be tested without a
socket; only a bug answers 500 and only an event loop that does not answer 503.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nemesis.wireproxy.proxy import ReplayError, WireProxy
from nemesis.wireproxy.rules import Dialect, Rule, RuleError, parse_rules


class _HttpError(Exception):
    """A request the API refuses: ``status`` (4xx for anything the client sent), a one-line message,
    and ``close`` when the connection cannot carry another request (the body's end is unknown)."""

    def __init__(self, status: int, msg: str, close: bool = False) -> None:
        super().__init__(one_line(msg))
        self.status = status
        self.close = close


MAX_BODY = 1 << 20  # a rules document is a few KiB
MAX_DEPTH = 32  # JSON nesting: a rule is 3 deep; a deeper document is an attack on the stack
MAX_ERROR = 300  # characters of an error message
REPLAY_TIMEOUT_S = 60.0  # a replay waits for each answer (nemesis.kafkaproxy.proxy.REPLAY_ANSWER_S)


def one_line(msg: str) -> str:
    """An error message as one short line (it may quote the client's bytes)."""
    flat = " ".join(str(msg).split())
    return flat if len(flat) <= MAX_ERROR else flat[: MAX_ERROR - 3] + "..."


def _reject_constant(name: str) -> Any:
    raise _HttpError(400, f"request body is not strict JSON: {name} is not a number")


def _finite_float(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise _HttpError(400, f"request body is not strict JSON: {s[:40]} overflows: expected a finite number")
    return v


def _depth_ok(doc: Any) -> bool:
    """Iteratively (a recursive walk is what this guards against): nesting <= MAX_DEPTH."""
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > MAX_DEPTH:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


def decode_body(raw: bytes) -> Any:
    """A request body: empty -> None, else strict UTF-8 JSON (no NaN/Infinity, no float that
    overflows, at most MAX_DEPTH deep); else a 400."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _HttpError(400, f"request body is not UTF-8: bad byte at offset {e.start}") from None
    if not text.strip():
        return None
    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise _HttpError(400, f"request body is not JSON: {e.msg} (line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise _HttpError(400, f"request body is nested deeper than {MAX_DEPTH}") from None
    except ValueError as e:  # an integer of more than 4300 digits
        raise _HttpError(400, f"request body is not usable JSON: {e}") from None
    if not _depth_ok(doc):
        raise _HttpError(400, f"request body is nested deeper than {MAX_DEPTH}")
    return doc


def body_length(method: str, content_length: list[str], transfer_encoding: str | None) -> int:
    """How many body bytes to read: one Content-Length of 0..MAX_BODY. A POST must say (411): the
    API never guesses where a body ends, and a chunked body is refused rather than misread."""
    if transfer_encoding is not None:
        raise _HttpError(411, "Transfer-Encoding is not supported: send a Content-Length", close=True)
    values = {v.strip() for v in content_length}
    if len(values) > 1:
        raise _HttpError(400, "conflicting Content-Length headers", close=True)
    if not values:
        if method == "POST":
            raise _HttpError(411, "a POST needs a Content-Length (0 for no body)", close=True)
        return 0
    cl = values.pop()
    if not (cl.isascii() and cl.isdigit()) or len(cl) > 12 or int(cl) > MAX_BODY:
        raise _HttpError(400, f"bad Content-Length {cl[:40]!r}: expected 0..{MAX_BODY}", close=True)
    return int(cl)


# (method, path pattern): None in a pattern is a parameter
ROUTES: tuple[tuple[str, tuple[str | None, ...]], ...] = (
    ("GET", ("health",)), ("GET", ("listeners",)), ("GET", ("rules",)), ("POST", ("rules",)),
    ("DELETE", ("rules",)), ("DELETE", ("rules", None)), ("POST", ("arm", None)), ("POST", ("disarm", None)),
    ("GET", ("armed",)), ("GET", ("connections",)), ("POST", ("connections", None, "close")),
    ("GET", ("sessions",)), ("GET", ("held",)), ("POST", ("release",)), ("POST", ("release", None)),
    ("GET", ("captured",)), ("POST", ("replay",)), ("POST", ("replay", None)),
)


def _fits(pattern: tuple[str | None, ...], parts: list[str]) -> bool:
    return len(pattern) == len(parts) and all(p is None or p == x for p, x in zip(pattern, parts, strict=True))


def match_route(method: str, path: str) -> tuple[tuple[str | None, ...], list[str]]:
    """``(pattern, params)`` for a request line; 404 for an unknown path, 405 for a known one
    asked with another method."""
    parts = [x for x in path.split("?", 1)[0].split("/") if x]
    fits = [(m, pat) for m, pat in ROUTES if _fits(pat, parts)]
    for m, pat in fits:
        if m == method:
            return pat, [x for p, x in zip(pat, parts, strict=True) if p is None]
    if fits:
        allowed = ", ".join(sorted({m for m, _ in fits}))
        raise _HttpError(405, f"method {method[:20]} not allowed on {path[:80]} (allowed: {allowed})")
    raise _HttpError(404, f"no route {method[:20]} {path[:80]}")


def close_body(ordinal: str, body: Any) -> tuple[int, bool]:
    """``POST /connections/<n>/close``: the ordinal (decimal) and ``rst`` (a bool, default false)."""
    if not (ordinal.isascii() and ordinal.isdigit()) or len(ordinal) > 18:
        raise _HttpError(400, f"connection ordinal must be an integer, got {ordinal[:40]!r}")
    if body is None:
        return int(ordinal), False
    if not isinstance(body, dict) or set(body) - {"rst"}:
        raise _HttpError(400, 'close takes no body or {"rst": true|false}')
    rst = body.get("rst", False)
    if not isinstance(rst, bool):
        raise _HttpError(400, f"rst: expected true or false, got {rst!r}"[:120])
    return int(ordinal), rst


def rules_body(body: Any, dialect: Dialect, start_index: int = 0) -> list[Rule]:
    """``POST /rules``: a rule object, a list, or ``{"rules": [...]}``; a RuleError is a 400."""
    if isinstance(body, dict) and "rules" not in body:
        body = [body]
    try:
        return parse_rules(body, dialect, source="control API", start_index=start_index)
    except RuleError as e:
        raise _HttpError(400, str(e)) from None


def validate(method: str, pattern: tuple[str | None, ...], params: list[str], body: Any, dialect: Dialect,
             start_index: int = 0) -> Any:
    """The pure half of a request: its body checked for its route, or a 400. Returns the rules of a
    POST /rules, ``(ordinal, rst)`` of a close, None for the other routes (they take no body)."""
    if (method, pattern) == ("POST", ("rules",)):
        return rules_body(body, dialect, start_index)
    if pattern == ("connections", None, "close"):
        return close_body(params[0], body)
    if body is not None:
        raise _HttpError(400, f"{method} /{'/'.join(p or '<>' for p in pattern)} takes no body")
    return None


class ControlServer:
    def __init__(self, proxy: WireProxy, loop: asyncio.AbstractEventLoop, host: str = "127.0.0.1", port: int = 0):
        self.proxy = proxy
        self.loop = loop
        self._added = 0
        handler = self._make_handler()
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.host, self.port = self.httpd.server_address[:2]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name=f"{proxy.DIALECT.name}-control", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        async def run() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=10)

    def _replay(self, rule_id: str | None) -> Any:
        try:
            return asyncio.run_coroutine_threadsafe(self.proxy.replay(rule_id), self.loop).result(
                timeout=REPLAY_TIMEOUT_S)
        except ReplayError as e:
            raise _HttpError(400, str(e)) from None

    # --- routes -------------------------------------------------------------------------------

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """One request, its body already decoded: ``(status, answer)`` or an :class:`_HttpError`."""
        pattern, params = match_route(method, path)
        arg = validate(method, pattern, params, body, self.proxy.DIALECT, self._added)
        return 200, self._dispatch(method, pattern, params, arg)

    def _dispatch(self, method: str, pattern: tuple[str | None, ...], params: list[str], arg: Any) -> Any:
        p = self.proxy
        route = (method, pattern)
        if route == ("GET", ("health",)):
            return self._on_loop(lambda: {
                "ok": True, "pid": os.getpid(), "seed": p.seed, "listeners": p.listeners_info(),
                "rules": len(p.ruleset.rules), "connections": len(p.conns),
            })
        if route == ("GET", ("listeners",)):
            return self._on_loop(p.listeners_info)
        if route == ("GET", ("rules",)):
            return self._on_loop(lambda: [r.to_dict() for r in p.ruleset.rules])
        if route == ("POST", ("rules",)):
            try:
                ids = self._on_loop(p.add_rules, arg)
            except RuleError as e:  # a duplicate of a rule already there
                raise _HttpError(400, str(e)) from None
            self._added += len(arg)
            return {"ids": ids}
        if route == ("DELETE", ("rules",)):
            return {"removed": self._on_loop(p.clear_rules)}
        if route == ("DELETE", ("rules", None)):
            if not self._on_loop(p.remove_rule, params[0]):
                raise _HttpError(404, f"no rule with id {params[0][:80]!r}")
            return {"removed": True}
        if route == ("POST", ("arm", None)):
            self._on_loop(p.arm, params[0])
            return {"armed": params[0]}
        if route == ("POST", ("disarm", None)):
            return {"disarmed": params[0], "was_armed": self._on_loop(p.disarm, params[0])}
        if route == ("GET", ("armed",)):
            now = time.monotonic()
            return self._on_loop(lambda: {k: now - v for k, v in p.ruleset.armed.items()})
        if route == ("GET", ("connections",)):
            return self._on_loop(lambda: [c.summary() for c in p.conns.values()])
        if route == ("POST", ("connections", None, "close")):
            n, rst = arg
            if not self._on_loop(p.close_conn, n, rst):
                raise _HttpError(404, f"no open connection {n}")
            return {"closed": n}
        if route == ("GET", ("sessions",)):
            return self._on_loop(lambda: [dict(s) for s in getattr(p, "sessions", {}).values()])
        if route == ("GET", ("held",)):
            return self._on_loop(p.held_info)
        if route == ("POST", ("release",)):
            return {"released": self._on_loop(p.release, None)}
        if route == ("POST", ("release", None)):
            return {"released": self._on_loop(p.release, params[0])}
        if route == ("GET", ("captured",)):
            return self._on_loop(p.captured_info)
        if route == ("POST", ("replay",)):
            return {"replayed": self._replay(None)}
        if route == ("POST", ("replay", None)):
            return {"replayed": self._replay(params[0])}
        raise AssertionError(f"route {route} has no handler")  # pragma: no cover - ROUTES and this agree

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            """Total: every request gets one JSON answer; a malformed one a 4xx ``{"error": ...}``,
            including what the stdlib refuses itself (bad request line, long headers, an unknown
            method: its 501 becomes a 405) and HTTP/0.9 (it would get no status line)."""

            protocol_version = "HTTP/1.1"
            timeout = 30.0  # a client that stalls mid-request loses its connection, not a thread for good

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return None

            def parse_request(self) -> bool:
                self.refused = False
                if not super().parse_request():
                    if not self.refused and self.requestline:  # only whitespace (NEL, FF...): dropped unanswered
                        self.send_error(400, "empty request line")
                    return False
                if self.request_version == "HTTP/0.9":
                    self.request_version = "HTTP/1.0"  # so the refusal has a status line
                    self.send_error(400, "HTTP/0.9 is not supported")
                    return False
                return True

            def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
                self.refused = True
                status = 405 if code == 501 else 400 if code >= 500 else code
                if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
                    self.request_version = "HTTP/1.0"  # the stdlib's default: it would omit status and headers
                try:
                    phrase = HTTPStatus(code).phrase
                except ValueError:
                    phrase = "bad request"
                self._reply(status, {"error": one_line(message or phrase)}, close=True)

            def _reply(self, status: int, out: Any, close: bool = False) -> None:
                try:
                    data = json.dumps(out, allow_nan=False).encode()
                except ValueError as e:
                    status, data = 500, json.dumps({"error": one_line(f"unserialisable answer: {e}")}).encode()
                if close:
                    self.close_connection = True
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if close:
                    self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _body(self, method: str) -> Any:
                n = body_length(method, self.headers.get_all("Content-Length") or [],
                                self.headers.get("Transfer-Encoding"))
                try:
                    raw = self.rfile.read(n) if n else b""
                except OSError:  # includes the socket timeout
                    raise _HttpError(408, "request body not received", close=True) from None
                if len(raw) < n:
                    raise _HttpError(400, f"request body ended after {len(raw)} of {n} bytes", close=True)
                return decode_body(raw)

            def _do(self, method: str) -> None:
                close = False
                try:
                    status, out = server.handle(method, self.path, self._body(method))
                except _HttpError as e:
                    status, out, close = e.status, {"error": str(e)}, e.close
                except TimeoutError:
                    status, out = 503, {"error": "the proxy's event loop did not answer in time"}
                except Exception as e:  # noqa: BLE001 - a bug: report it, keep serving
                    status, out = 500, {"error": one_line(f"{type(e).__name__}: {e}")}
                self._reply(status, out, close)

            def do_GET(self) -> None:  # noqa: N802
                self._do("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._do("POST")

            def do_DELETE(self) -> None:  # noqa: N802
                self._do("DELETE")

        return Handler
