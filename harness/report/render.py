"""Rendering for the report: shaped data (``harness.report.shape``) → plotly figures → one HTML page.

``page`` is the reusable template (inline CSS, plotly.js embedded once so the page works offline,
no CDN); ``figure_div`` turns a figure into a div for it. A campaign index page uses the same two.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from harness.report.shape import Band, ClientOp, Context, Instant, Lanes, event_id

STATE_COLORS = {
    "connected": "#2ca02c", "started": "#98df8a", "suspended": "#ff7f0e", "lost": "#d62728",
    "down": "#7f7f7f", "registered": "#1f77b4", "absent": "#c7c7c7",
}
OP_COLORS = {"ok": "#2ca02c", "fail": "#d62728", "info": "#ff7f0e", "pending": "#9467bd"}
BAND_COLORS = ("#e377c2", "#bcbd22", "#17becf", "#8c564b", "#9467bd", "#ff9896")
VERDICT_COLORS = {"true": "#2ca02c", "false": "#d62728", "unknown": "#ff7f0e"}

CSS = """
body { font-family: -apple-system, system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: .2em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: .85em; margin: .4em 0; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
tr.cited td { background: #fff3c4; font-weight: bold; }
code, pre { font-family: ui-monospace, monospace; font-size: .85em; }
pre { white-space: pre-wrap; background: #f6f6f6; padding: .5em; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; color: #fff; font-weight: bold; }
.note { color: #666; font-style: italic; }
.plot { margin: .5em 0; }
"""


def page(title: str, body: str, *, plotly: bool = True) -> str:
    """A complete, self-contained HTML page; plotly.js is inlined once when ``plotly``."""
    js = f"<script type=\"text/javascript\">{get_plotlyjs()}</script>" if plotly else ""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\">"
            f"<title>{html.escape(title)}</title><style>{CSS}</style>{js}</head>\n"
            f"<body>\n{body}\n</body></html>\n")


def figure_div(fig: go.Figure, div_id: str) -> str:
    return ("<div class=\"plot\">" + fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                                                 config={"displaylogo": False, "responsive": True}) + "</div>")


def verdict_badge(valid: Any) -> str:
    key = str(valid).lower()
    return (f"<span class=\"verdict\" style=\"background:{VERDICT_COLORS.get(key, '#7f7f7f')}\">"
            f"{html.escape(_verdict_text(valid))}</span>")


def _verdict_text(valid: Any) -> str:
    return {True: "valid", False: "INVALID"}.get(valid, str(valid)) if isinstance(valid, bool) else str(valid)


def _band_colors(bands: Sequence[Band]) -> dict[str, str]:
    fs = sorted({b.f for b in bands})
    return {f: BAND_COLORS[i % len(BAND_COLORS)] for i, f in enumerate(fs)}


def add_bands(fig: go.Figure, bands: Sequence[Band], instants: Sequence[Instant], *, labels: bool = False) -> None:
    """The nemesis bands (shaded spans) and instant faults/heals (dashed lines) on ``fig``."""
    colors = _band_colors(bands)
    for b in bands:
        label = {"annotation_text": b.label, "annotation_position": "top left"} if labels else {}
        fig.add_vrect(x0=b.start, x1=max(b.end, b.start + 0.05), fillcolor=colors[b.f], opacity=0.18,
                      line_width=0, layer="below", **label)
    for i in instants:
        fig.add_vline(x=i.t, line_dash="dot", line_width=1,
                      line_color="#999" if i.f == "heal" else "#d62728")


def timeline_figure(bands: Sequence[Band], instants: Sequence[Instant], lanes: Lanes, xr: tuple[float, float]) -> go.Figure:
    """One row per fault (its bands as bars) and per broker lane (its states as bars), marks for
    registrations, with the bands shaded across every row."""
    fig = go.Figure()
    colors = _band_colors(bands)
    nem_rows = [f"nemesis: {b.label}" for b in bands]
    for f in sorted({b.f for b in bands}):
        bs = [b for b in bands if b.f == f]
        fig.add_trace(go.Bar(
            orientation="h", base=[b.start for b in bs], x=[max(b.end - b.start, 0.05) for b in bs],
            y=[f"nemesis: {b.label}" for b in bs], name=f"fault {f}", marker_color=colors[f],
            customdata=[[b.start_id, b.end_id or "(never stopped)"] for b in bs],
            hovertemplate="%{y}<br>%{base:.2f}s → +%{x:.2f}s<br>%{customdata[0]} → %{customdata[1]}<extra></extra>"))
    if instants:
        fig.add_trace(go.Scatter(
            x=[i.t for i in instants], y=[f"nemesis: {i.f}" for i in instants], mode="markers",
            marker={"symbol": "line-ns-open", "size": 14, "color": ["#999" if i.f == "heal" else "#d62728"
                                                                       for i in instants]},
            name="instant faults / heals", text=[f"{i.label} {i.event_id}" for i in instants],
            hovertemplate="%{text}<br>%{x:.2f}s<extra></extra>"))
    for state in STATE_COLORS:
        segs = [s for s in lanes.segments if s.state == state]
        if segs:
            fig.add_trace(go.Bar(
                orientation="h", base=[s.start for s in segs], x=[max(s.end - s.start, 0.02) for s in segs],
                y=[s.lane for s in segs], name=state, marker_color=STATE_COLORS[state],
                text=[s.text for s in segs], textposition="inside", insidetextanchor="start",
                customdata=[s.event_id for s in segs],
                hovertemplate="%{y}: " + state + " %{text}<br>from %{base:.2f}s for %{x:.2f}s<br>"
                              "%{customdata}<extra></extra>"))
    other = [s for s in lanes.segments if s.state not in STATE_COLORS]
    if other:
        fig.add_trace(go.Bar(orientation="h", base=[s.start for s in other], x=[s.end - s.start for s in other],
                             y=[s.lane for s in other], name="other", text=[s.state for s in other]))
    if lanes.marks:
        fig.add_trace(go.Scatter(
            x=[m.t for m in lanes.marks], y=[m.lane for m in lanes.marks], mode="markers",
            marker={"symbol": "diamond", "size": 10, "color": "#000"}, name="registration",
            text=[f"{m.label} ({m.event_id})" for m in lanes.marks], hovertemplate="%{text}<br>%{x:.2f}s<extra></extra>"))
    rows = list(dict.fromkeys(nem_rows + [f"nemesis: {i.f}" for i in instants])) + lanes.lanes
    add_bands(fig, bands, instants, labels=True)
    fig.update_layout(
        title="Timeline: nemesis bands and per-broker session / znode lanes", barmode="overlay",
        height=140 + 28 * max(len(rows), 3), margin={"l": 170, "r": 20, "t": 60, "b": 40},
        xaxis={"title": "seconds since run start", "range": list(xr)},
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(rows)), "type": "category"},
        legend={"orientation": "h", "y": -0.15})
    return fig


def epochs_figure(lanes: Lanes, bands: Sequence[Band], instants: Sequence[Instant], xr: tuple[float, float]) -> go.Figure:
    fig = go.Figure()
    for b, pts in sorted(lanes.epochs.items()):
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                 line_shape="hv", name=f"b{b}", text=[p[2] for p in pts],
                                 hovertemplate="b" + str(b) + " epoch %{y}<br>%{x:.2f}s %{text}<extra></extra>"))
    add_bands(fig, bands, instants)
    fig.update_layout(title="Broker epochs (czxid of each registration)", height=300,
                      xaxis={"title": "seconds since run start", "range": list(xr)},
                      yaxis={"title": "epoch", "tickformat": "d"}, margin={"t": 50, "b": 40})
    return fig


def latency_figure(ops: Sequence[ClientOp], bands: Sequence[Band], instants: Sequence[Instant],
                   xr: tuple[float, float]) -> go.Figure:
    fig = go.Figure()
    done = [o for o in ops if o.end is not None]
    for f in sorted({o.f for o in done}):
        for typ in ("ok", "fail", "info"):
            sel = [o for o in done if o.f == f and o.type == typ]
            if sel:
                fig.add_trace(go.Scatter(
                    x=[o.start for o in sel], y=[max(o.latency_ms or 0.0, 0.01) for o in sel], mode="markers",
                    name=f"{f} {typ}", marker={"color": OP_COLORS[typ], "size": 5,
                                               "symbol": _symbol(f, sorted({o.f for o in done}))},
                    text=[f"process {o.process} {o.invoke_id}" for o in sel],
                    hovertemplate="%{text}<br>invoked %{x:.2f}s, %{y:.1f} ms<extra></extra>"))
    add_bands(fig, bands, instants)
    fig.update_layout(title="Client latency (invoke → completion) by operation and outcome", height=360,
                      xaxis={"title": "invoked at, seconds since run start", "range": list(xr)},
                      yaxis={"title": "latency (ms)", "type": "log"}, margin={"t": 50, "b": 40})
    return fig


def _symbol(f: str, fs: list[str]) -> str:
    return ("circle", "square", "diamond", "triangle-up", "x", "cross")[fs.index(f) % 6]


def throughput_figure(rates: Mapping[tuple[str, str], list[tuple[float, float]]], bands: Sequence[Band],
                      instants: Sequence[Instant], xr: tuple[float, float], bucket_s: float) -> go.Figure:
    fig = go.Figure()
    for (f, typ), pts in rates.items():
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                 name=f"{f} {typ}", line={"color": OP_COLORS.get(typ), "dash": _dash(f, rates)},
                                 hovertemplate=f"{f} {typ}" + " %{y:.1f}/s at %{x:.1f}s<extra></extra>"))
    add_bands(fig, bands, instants)
    fig.update_layout(title=f"Client throughput per operation and outcome ({bucket_s:g} s buckets)", height=320,
                      xaxis={"title": "completed at, seconds since run start", "range": list(xr)},
                      yaxis={"title": "ops/s"}, margin={"t": 50, "b": 40})
    return fig


def _dash(f: str, rates: Mapping[tuple[str, str], Any]) -> str:
    fs = sorted({k[0] for k in rates})
    return ("solid", "dash", "dot", "dashdot", "longdash")[fs.index(f) % 5]


def bands_table(bands: Sequence[Band], instants: Sequence[Instant]) -> str:
    rows = [(b.start, f"<tr><td>{b.start:.2f}</td><td>{b.end:.2f}</td><td>{html.escape(b.f)}</td>"
                      f"<td>{html.escape(', '.join(b.targets))}</td><td><code>{html.escape(b.start_id)} → "
                      f"{html.escape(b.end_id or 'never stopped')}</code>{' (start failed)' if b.error else ''}</td></tr>")
            for b in bands]
    rows += [(i.t, f"<tr><td>{i.t:.2f}</td><td></td><td>{html.escape(i.f)}</td><td>{html.escape(', '.join(i.targets))}"
                   f"</td><td><code>{html.escape(i.event_id)}</code> {html.escape(i.detail)}"
                   f"{' (error)' if i.error else ''}</td></tr>") for i in instants]
    if not rows:
        return "<p class=\"note\">No faults were injected in this run.</p>"
    return ("<table><tr><th>from (s)</th><th>to (s)</th><th>fault</th><th>targets</th><th>events</th></tr>"
            + "".join(r for _, r in sorted(rows, key=lambda x: x[0])) + "</table>")


def anomalies_html(anomalies: Sequence[Mapping[str, Any]], contexts: Sequence[Sequence[Context]], t0: float) -> str:
    if not anomalies:
        return "<p class=\"note\">No anomalies.</p>"
    parts = []
    for n, (a, ctxs) in enumerate(zip(anomalies, contexts, strict=True), 1):
        keys = {k: v for k, v in a.items() if k not in ("checker", "message", "event_ids")}
        parts.append(f"<h3 id=\"anomaly-{n}\">{n}. <code>{html.escape(str(a.get('checker', '?')))}</code>: "
                     f"{html.escape(str(a.get('message', '')))}</h3>")
        if keys:
            parts.append(f"<pre>{html.escape(json.dumps(keys, default=str))}</pre>")
        for c in ctxs:
            if not c.found:
                parts.append(f"<p class=\"note\">cited event <code>{html.escape(c.cited)}</code> is not in "
                             "history.jsonl</p>")
                continue
            parts.append(f"<p>Event <code>{html.escape(c.cited)}</code> in context:</p>" + events_table(c.events, t0,
                                                                                                    c.cited))
    return "\n".join(parts)


def events_table(events: Sequence[Mapping[str, Any]], t0: float, cited: str | None = None) -> str:
    rows = []
    for e in events:
        eid = event_id(e)
        cls = " class=\"cited\"" if eid == cited else ""
        rows.append(f"<tr{cls}><td>{e.get('index', '')}</td><td>{float(e['t_wall']) - t0:.3f}</td>"
                    f"<td><code>{html.escape(eid)}</code></td><td>{html.escape(str(e.get('type')))}</td>"
                    f"<td>{html.escape(str(e.get('f')))}</td><td>{html.escape(str(e.get('process')))}</td>"
                    f"<td><code>{html.escape(json.dumps(e.get('value') or {}, default=str))}</code></td></tr>")
    return ("<table><tr><th>#</th><th>t (s)</th><th>id</th><th>type</th><th>f</th><th>process</th><th>value</th></tr>"
            + "".join(rows) + "</table>")
