"""``harness serve``: the store, read-only, over HTTP on loopback.

``/`` is an index of every run (test, time, verdict, a link to its report); every other path is a
file under the store (GET/HEAD only; nothing outside the store, symlinks included, is served). A run
without ``report.html`` gets one rendered in memory on request: the server never writes.
"""

from __future__ import annotations

import html
import json
import os
import threading
import urllib.parse
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness.report import REPORT, build_report, render

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class RunEntry:
    rel: str  # the run directory relative to the store, with "/"
    test: str
    time: str
    verdict: Any  # results.json "valid", or None when there are no results yet
    anomalies: int
    has_report: bool


def list_runs(store: Path) -> list[RunEntry]:
    """Every run directory (one holding run.json) under ``store``, newest first; ``latest`` links skipped."""
    out = []
    for run_json in store.glob("**/run.json"):
        run_dir = run_json.parent
        rel = run_dir.relative_to(store)
        if any(part == "latest" for part in rel.parts) or run_dir.is_symlink():
            continue
        try:
            results = json.loads((run_dir / "results.json").read_text())
        except (OSError, json.JSONDecodeError):
            results = {}
        try:
            test = json.loads(run_json.read_text()).get("test") or run_dir.parent.name
        except (OSError, json.JSONDecodeError):
            test = run_dir.parent.name
        out.append(RunEntry(rel.as_posix(), str(test), run_dir.name, results.get("valid") if results else None,
                            len(results.get("anomalies") or []), (run_dir / REPORT).exists()))
    out.sort(key=lambda r: (r.time, r.rel), reverse=True)
    return out


def index_page(store: Path) -> str:
    runs = list_runs(store)
    rows = []
    for r in runs:
        q = urllib.parse.quote(r.rel)
        verdict = render.verdict_badge(r.verdict) if r.verdict is not None else "<i>no results</i>"
        report = f"<a href=\"/{q}/{REPORT}\">report</a>" + ("" if r.has_report else " <i>(rendered on view)</i>")
        rows.append(f"<tr><td>{html.escape(r.test)}</td><td>{html.escape(r.time)}</td><td>{verdict}</td>"
                    f"<td>{r.anomalies}</td><td>{report}</td><td><a href=\"/{q}/results.json\">results</a> · "
                    f"<a href=\"/{q}/logs/\">logs</a> · <a href=\"/{q}/\">files</a></td></tr>")
    table = ("<table><tr><th>test</th><th>time</th><th>verdict</th><th>anomalies</th><th>report</th><th></th></tr>"
             + "".join(rows) + "</table>") if rows else "<p class=\"note\">No runs in this store yet.</p>"
    body = f"<h1>zkfence store</h1><p><code>{html.escape(str(store))}</code>: {len(runs)} runs</p>"
    body += _campaigns(store) + table
    return render.page("zkfence store", body, plotly=False)


def _campaigns(store: Path) -> str:
    """Links to every campaign's index.html (a directory holding campaign.json), newest first."""
    rows = []
    for state_file in sorted(store.glob("**/campaign.json"), reverse=True):
        rel = state_file.parent.relative_to(store)
        if "latest" in rel.parts or not (state_file.parent / "index.html").exists():
            continue
        try:
            state = json.loads(state_file.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        runs = state.get("runs") or {}
        bad = sum(1 for r in runs.values() if r.get("valid") is False)
        q = urllib.parse.quote(rel.as_posix())
        rows.append(f"<tr><td>{html.escape(str(state.get('name')))}</td><td>{html.escape(rel.name)}</td>"
                    f"<td>{len(runs)}/{len(state.get('plan') or [])}</td><td>{bad}</td>"
                    f"<td><a href=\"/{q}/index.html\">campaign index</a></td></tr>")
    if not rows:
        return ""
    return ("<h2>Campaigns</h2><table><tr><th>campaign</th><th>time</th><th>runs</th><th>invalid</th><th></th></tr>"
            + "".join(rows) + "</table><h2>Runs</h2>")


class StoreHandler(SimpleHTTPRequestHandler):
    """GET/HEAD of files under the store; the index at ``/``; missing reports rendered in memory."""

    store: Path

    def __init__(self, *args: Any, store: Path, **kwargs: Any) -> None:
        self.store = store
        super().__init__(*args, directory=str(store), **kwargs)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet: the test and the user read the page, not the access log

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == str(self.store) or real.startswith(str(self.store) + os.sep)

    def send_head(self) -> Any:
        url = urllib.parse.urlsplit(self.path).path
        if url in ("/", "/index.html"):
            return self._send_html(index_page(self.store))
        path = self.translate_path(self.path)
        if not self._inside(path):
            self.send_error(HTTPStatus.FORBIDDEN, "outside the store")
            return None
        if os.path.basename(path) == REPORT and not os.path.exists(path):
            run_dir = os.path.dirname(path)
            if os.path.exists(os.path.join(run_dir, "history.jsonl")):
                return self._send_html(build_report(Path(run_dir)))
        return super().send_head()

    def _send_html(self, text: str) -> Any:
        import io

        data = text.encode("utf-8")
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return io.BytesIO(data)


class StoreServer:
    """The server on ``127.0.0.1:port`` (0: allocated now); ``start`` in a thread or ``serve_forever``."""

    def __init__(self, store: Path, port: int = 0) -> None:
        self.store = Path(os.path.realpath(store))
        self.httpd = ThreadingHTTPServer((LOOPBACK, port), partial(StoreHandler, store=self.store))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.httpd.server_address[1]}/"

    def start(self) -> StoreServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="store-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(5)
        self.httpd.server_close()

    def __enter__(self) -> StoreServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
