"""``analysis.html``: one section per cross-run table, a plotly figure and the table itself, on the
per-run report's page template (plotly.js inlined once, works offline)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go

from harness.analysis.pairing import Flaky, LatencyRow, Rate, RecoveryRow
from harness.analysis.tables import Table, cell, columns, values
from harness.report.render import figure_div, page

PCTS = ("p50_ms", "p90_ms", "p99_ms", "max_ms")


def rates_figure(rows: Sequence[Rate]) -> go.Figure:
    labels = [f"{r.checker} | {r.toggles} | {r.faults}" for r in rows]
    fig = go.Figure(go.Bar(x=[r.rate for r in rows], y=labels, orientation="h",
                           text=[f"{r.invalid}/{r.runs}" for r in rows], name="invalid ÷ runs"))
    fig.update_layout(xaxis={"title": "anomaly rate", "range": [0, 1], "tickformat": ".0%"},
                      yaxis={"autorange": "reversed"}, height=max(260, 22 * len(rows) + 120))
    return fig


def percentiles_figure(labels: Sequence[str], rows: Sequence[RecoveryRow | LatencyRow], unit: str) -> go.Figure:
    fig = go.Figure([go.Bar(name=p.removesuffix("_ms"), x=list(labels), y=[getattr(r, p) for r in rows]) for p in PCTS])
    fig.update_layout(barmode="group", yaxis={"title": unit}, height=360)
    return fig


def flaky_figure(rows: Sequence[Flaky]) -> go.Figure:
    labels = [f"{r.test} | {r.toggles} | {r.faults} | {r.workload} | zk {r.zk_version}" for r in rows]
    colors = {"valid": "#2ca02c", "invalid": "#d62728", "unknown": "#ff7f0e"}
    fig = go.Figure([go.Bar(name=v, y=labels, x=[getattr(r, v) for r in rows], orientation="h",
                            marker_color=c) for v, c in colors.items()])
    fig.update_layout(barmode="stack", xaxis={"title": "runs"}, yaxis={"autorange": "reversed"},
                      height=max(260, 22 * len(rows) + 120))
    return fig


def figure(t: Table) -> go.Figure:
    rows = t.rows
    if t.kind is Rate:
        return rates_figure(rows)
    if t.kind is RecoveryRow:
        return percentiles_figure([r.fault for r in rows], rows, "ms from heal to registration")
    if t.kind is LatencyRow:
        return percentiles_figure([f"{r.workload} {r.op}" for r in rows], rows, "ms from invoke to completion")
    return flaky_figure(rows)


def html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns(t))
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(v))}</td>" for v in values(t, r)) + "</tr>" for r in t.rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def section(t: Table) -> str:
    if not t.rows:
        return f'<section id="{t.name}"><h2>{html.escape(t.title)}</h2><p class="note">no rows</p></section>'
    return (f'<section id="{t.name}"><h2>{html.escape(t.title)}</h2>'
            f"{figure_div(figure(t), f'plot-{t.name}')}{html_table(t)}</section>")


def analysis_page(tables: Sequence[Table], summary: str) -> str:
    body = f"<h1>zkfence: cross-run analysis</h1><p>{html.escape(summary)}</p>" + "".join(section(t) for t in tables)
    return page("zkfence analysis", body)


def write_page(tables: Sequence[Table], summary: str, path: Path) -> None:
    tmp = path.with_suffix(".html.part")
    tmp.write_text(analysis_page(tables, summary), encoding="utf-8")
    tmp.replace(path)
