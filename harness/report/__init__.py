"""The per-run HTML report: the last step of the data path, after ``results.json``.

``store/<test>/<time>/`` (run.json, history.jsonl, results.json, logs/) → ``report.html`` in the same
directory: nemesis bands, per-broker session/znode/epoch lanes, client latency and throughput with
the same bands, the anomalies with each cited event in context, links to the node logs. Written by
the engine at the end of every run and by ``harness report RUN_DIR``; ``harness serve`` renders a
missing one in memory.

``shape`` holds the pure event → data functions, ``render`` the plotly figures and the reusable
page template; this module reads a run directory and puts the two together.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.report import render, shape
from history import HistoryFormatError, read_records

REPORT = "report.html"
THROUGHPUT_BUCKET_S = 1.0


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Page:
    html: str
    problem: str | None  # why part of the history is not shown ("<file>:<line>: ..."), or None


def readable_events(hist: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The history's events up to its first line that is not a valid event, and why that line is not
    (None: all of them). A report of a damaged run still shows what was recorded before the damage."""
    events: list[dict[str, Any]] = []
    if not hist.exists():
        return events, None
    try:
        for record in read_records(hist):
            events.append(record)
    except HistoryFormatError as e:
        return events, str(e)
    except OSError as e:
        return events, f"{hist}: cannot read ({e.strerror or e})"
    return events, None


def build_report(run_dir: Path) -> str:
    """The report of the run in ``run_dir`` as one self-contained HTML page."""
    return render_report(run_dir).html


def render_report(run_dir: Path) -> Page:
    """``build_report``'s page, and what of the history it could not show."""
    run_dir = Path(run_dir)
    run = _read_json(run_dir / "run.json")
    results = _read_json(run_dir / "results.json")
    outcome = _read_json(run_dir / "outcome.json")
    events, problem = readable_events(run_dir / "history.jsonl")
    t0 = shape.origin(events)
    end = shape.span(events, t0)
    start = min((float(e["t_wall"]) - t0 for e in events), default=0.0)
    xr = (min(start, 0.0) - 0.5, end + 0.5)
    bands, instants = shape.nemesis_bands(events, t0)
    lanes = shape.broker_lanes(events, t0)
    ops = shape.client_ops(events, t0)
    anomalies = results.get("anomalies") or []
    contexts = [shape.event_contexts(a, events) for a in anomalies]

    title = f"{run.get('test', run_dir.parent.name)} {run_dir.name}"
    body = [f"<h1>{html.escape(title)}</h1>",
            f"<p>Verdict: {render.verdict_badge(results.get('valid', 'no results.json'))} · "
            f"{len(events)} events over {end:.1f} s · seed {html.escape(str(run.get('seed')))} · "
            f"toggles <code>{html.escape(json.dumps(run.get('toggles') or {}))}</code> · "
            f"workload {html.escape(str(run.get('workload')))} · "
            f"{len(anomalies)} anomal{'y' if len(anomalies) == 1 else 'ies'}</p>"]
    if outcome:
        body.append(f"<p>Expected: <code>{html.escape(json.dumps(outcome.get('expected'), default=str))}</code> · "
                    f"matched: <b>{html.escape(str(outcome.get('matched')))}</b></p>")
    body.append(_links(run_dir))
    if problem is not None:
        body.append(f"<p class=\"note\">{html.escape(problem)}: this report shows the {len(events)} events "
                    "before it.</p>")
    if not events:
        body.append("<p class=\"note\">history.jsonl is missing or empty: nothing to plot.</p>")
    else:
        body.append("<h2>Timeline</h2>")
        body.append(render.figure_div(render.timeline_figure(bands, instants, lanes, xr), "timeline"))
        body.append(render.bands_table(bands, instants))
        if lanes.epochs:
            body.append(render.figure_div(render.epochs_figure(lanes, bands, instants, xr), "epochs"))
        body.append("<h2>Client operations</h2>")
        body.append(_client_section(ops, bands, instants, xr))
    body.append("<h2 id=\"anomalies\">Anomalies</h2>")
    body.append(render.anomalies_html(anomalies, contexts, t0))
    body.append("<h2>Checkers</h2>" + _checkers_table(results))
    return Page(render.page(f"zkfence report {title}", "\n".join(body)), problem)


def _client_section(ops: list[shape.ClientOp], bands: list[shape.Band], instants: list[shape.Instant],
                    xr: tuple[float, float]) -> str:
    done = [o for o in ops if o.end is not None]
    if not done:
        pending = f" ({len(ops)} invoked, none completed)" if ops else ""
        return f"<p class=\"note\">No client operations in this run{pending}.</p>"
    counts: dict[tuple[str, str], int] = {}
    for o in ops:
        counts[(o.f, o.type)] = counts.get((o.f, o.type), 0) + 1
    table = ("<table><tr><th>operation</th><th>outcome</th><th>count</th></tr>"
             + "".join(f"<tr><td>{html.escape(f)}</td><td>{html.escape(t)}</td><td>{n}</td></tr>"
                       for (f, t), n in sorted(counts.items())) + "</table>")
    return (render.figure_div(render.latency_figure(ops, bands, instants, xr), "latency")
            + render.figure_div(render.throughput_figure(shape.throughput(ops, THROUGHPUT_BUCKET_S), bands, instants,
                                                         xr, THROUGHPUT_BUCKET_S), "throughput") + table)


def _links(run_dir: Path) -> str:
    files = [n for n in ("run.json", "results.json", "outcome.json", "history.jsonl") if (run_dir / n).exists()]
    logs = sorted(p.name for p in (run_dir / "logs").iterdir()) if (run_dir / "logs").is_dir() else []
    out = "<p>Files: " + " · ".join(f"<a href=\"{html.escape(n)}\">{html.escape(n)}</a>" for n in files) + "</p>"
    if logs:
        out += ("<p>Node logs: " + " · ".join(f"<a href=\"logs/{html.escape(n)}\">{html.escape(n)}</a>" for n in logs)
                + "</p>")
    return out


def _checkers_table(results: dict[str, Any]) -> str:
    checkers = results.get("checkers") or {}
    if not checkers:
        return "<p class=\"note\">No checker results.</p>"
    rows = "".join(f"<tr><td><code>{html.escape(str(name))}</code></td><td>{render.verdict_badge(r.get('valid'))}"
                   f"</td></tr>" for name, r in checkers.items() if isinstance(r, dict))
    return f"<table><tr><th>checker</th><th>verdict</th></tr>{rows}</table>"


def write_report(run_dir: Path) -> tuple[Path, str | None]:
    """Write ``report.html`` into ``run_dir`` (atomically): its path, and what of the history it
    could not show (``Page.problem``)."""
    run_dir = Path(run_dir)
    path = run_dir / REPORT
    tmp = path.with_suffix(".html.tmp")
    page = render_report(run_dir)
    tmp.write_text(page.html, encoding="utf-8")
    tmp.replace(path)
    return path, page.problem
