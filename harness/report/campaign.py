"""A campaign's ``index.html``: the matrix of its runs coloured by verdict, and a table of every run
linking its report. Built from the campaign state (``campaign.json``); no plots, so no plotly.js."""

from __future__ import annotations

import html
import json
from typing import Any

from harness.campaign import AGENTS
from harness.report import REPORT, render


def _toggles(t: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in t.items()) or "defaults"


def campaign_index(state: dict[str, Any]) -> str:
    runs: dict[str, dict[str, Any]] = state.get("runs") or {}
    plan: list[dict[str, Any]] = state.get("plan") or []
    counts = {"valid": 0, "invalid": 0, "unknown": 0}
    for r in runs.values():
        counts[{True: "valid", False: "invalid"}.get(r["valid"], "unknown")] += 1
    status = "finished" if state.get("finished") else "in progress"
    skipped = state.get("skipped") or []
    head = (f"<h1>campaign {html.escape(state.get('name', '?'))}</h1>"
            f"<p>{len(runs)}/{len(plan)} runs done ({status}) · {counts['valid']} valid · {counts['invalid']} invalid · "
            f"{counts['unknown']} unknown" + (f" · {len(skipped)} not started (budget)" if skipped else "")
            + (f" · {len(state['interrupted'])} interrupted" if state.get("interrupted") else "")
            + f" · file <code>{html.escape(str(state.get('file', '')))}</code> · "
              "<a href=\"junit.xml\">junit.xml</a> · <a href=\"campaign.json\">campaign.json</a></p>")
    return render.page(f"zkfence campaign {state.get('name', '')}",
                       head + _matrix(runs) + _table(plan, runs) + _interrupted(state.get("interrupted") or []),
                       plotly=False)


def _interrupted(recs: list[dict[str, Any]]) -> str:
    """Runs killed midway: their partial directories stay (the partial history and verdict are
    evidence), the run itself was done again on resume."""
    if not recs:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(str(r.get('key') or '?'))}</td><td>{html.escape(str(r.get('label', '')))}</td>"
        f"<td>interrupted · partial {render.verdict_badge(r.get('valid', 'unknown'))}</td><td>{r.get('anomalies', 0)}</td>"
        f"<td>{html.escape(str(r.get('reason', '')))}</td>"
        f"<td><a href=\"{html.escape(r['run_dir'])}/\">{html.escape(r['run_dir'])}</a></td></tr>" for r in recs)
    return ("<h2>Interrupted runs</h2><p class=\"note\">Killed midway; each was run again after the restart. "
            "Its partial directory is kept for its evidence.</p><table id=\"interrupted\"><tr><th>run</th>"
            "<th>faults · toggles · workload · seed</th><th>verdict</th><th>anomalies</th><th>why</th><th>directory</th>"
            "</tr>" + rows + "</table>")


def _cell(r: dict[str, Any]) -> str:
    return (f"<a class=\"run\" href=\"{html.escape(r['run_dir'])}/{REPORT}\" title=\"{html.escape(r['label'])}\">"
            f"{render.verdict_badge(r['valid'])}</a>")


def _column(run: dict[str, Any]) -> tuple[str, str, str]:
    """A run's matrix column: its toggles, workload and brokers (a campaign before brokers: agents)."""
    return _toggles(run["toggles"]), run["workload"], run.get("brokers", AGENTS)


def _matrix(runs: dict[str, dict[str, Any]]) -> str:
    """Rows: fault sets; columns: toggle sets (× workload); a cell: its runs' verdicts, each a link."""
    if not runs:
        return "<p class=\"note\">No run finished yet.</p>"
    rows = list(dict.fromkeys(r["faults"] for r in runs.values()))
    cols = list(dict.fromkeys(_column(r) for r in runs.values()))
    head = "<tr><th>faults \\ toggles</th>" + "".join(
        f"<th>{html.escape(t)}<br><i>{html.escape(w)}</i>{'' if b == AGENTS else '<br>' + html.escape(b)}</th>"
        for t, w, b in cols) + "</tr>"
    body = []
    for f in rows:
        cells = []
        for col in cols:
            mine = [r for r in runs.values() if r["faults"] == f and _column(r) == col]
            cells.append("<td>" + " ".join(_cell(r) for r in mine) + "</td>")
        body.append(f"<tr><th><code>{html.escape(f)}</code></th>{''.join(cells)}</tr>")
    return "<h2>Matrix</h2><table id=\"matrix\">" + head + "".join(body) + "</table>"


def _table(plan: list[dict[str, Any]], runs: dict[str, dict[str, Any]]) -> str:
    rows = []
    for p in plan:
        r = runs.get(p["key"])
        if r is None:
            rows.append(f"<tr><td>{html.escape(p['key'])}</td><td>{html.escape(p['label'])}</td>"
                        "<td><i>not run</i></td><td></td><td></td><td></td></tr>")
            continue
        err = f"<br><b>run error:</b> {html.escape(str(r['error']))}" if r.get("error") else ""
        rows.append(f"<tr><td>{html.escape(r['key'])}</td><td>{html.escape(r['label'])}</td>"
                    f"<td>{render.verdict_badge(r['valid'])}</td><td>{r['anomalies']}</td>"
                    f"<td>{html.escape(r.get('first_anomaly') or '')}{err}</td>"
                    f"<td><a href=\"{html.escape(r['run_dir'])}/{REPORT}\">report</a> · "
                    f"<a href=\"{html.escape(r['run_dir'])}/results.json\">results</a> · {r['wall_s']:.1f}s</td></tr>")
    return ("<h2>Runs</h2><table id=\"runs\"><tr><th>run</th><th>faults · toggles · workload · seed</th><th>verdict</th>"
            "<th>anomalies</th><th>first anomaly</th><th></th></tr>" + "".join(rows) + "</table>")
