"""JUnit XML for CI servers: one ``<testsuite>`` per checked run, one ``<testcase>`` per checker.

A checker's verdict maps onto JUnit's: ``valid`` → passed, ``invalid`` → ``<failure>`` whose
message is the first anomaly and whose text lists every anomaly of that checker with the event ids
that prove it, ``unknown`` → ``<error>`` (the checker could not decide: never a pass). A run's
seed, toggles, test name and workload (from ``run.json``) become the suite's properties. Written
with ``junitparser``; the input is the plain result dicts of ``checkers.result``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml, TestCase, TestSuite

MAX_MESSAGE = 300


def anomaly_text(anomaly: Mapping[str, Any]) -> str:
    """One line: ``[checker] message (events a, b)`` plus any key fields (broker, partition...)."""
    ids = ", ".join(str(i) for i in anomaly.get("event_ids") or [])
    keys = {k: v for k, v in anomaly.items() if k not in ("checker", "message", "event_ids", "detail")}
    out = f"[{anomaly.get('checker', '?')}] {anomaly.get('message', '')}"
    if keys:
        out += " " + " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in keys.items())
    return out + (f" (events {ids})" if ids else "")


def _checker_verdicts(result: Mapping[str, Any]) -> dict[str, Any]:
    """{checker: valid}: the composed result's per-checker verdicts, else one per anomaly's checker,
    else the result as a whole (a reference history checked by one model)."""
    checkers = result.get("checkers")
    if isinstance(checkers, Mapping) and checkers:
        return {str(n): (r.get("valid", "unknown") if isinstance(r, Mapping) else r) for n, r in checkers.items()}
    named = {str(a.get("checker")) for a in result.get("anomalies") or [] if a.get("checker")}
    if named:
        return {n: result.get("valid", False) for n in sorted(named)}
    model = (result.get("stats") or {}).get("model")
    return {f"linearizability:{model}" if model else "checker": result.get("valid", "unknown")}


def suite_for(name: str, result: Mapping[str, Any], properties: Mapping[str, Any] | None = None,
              time_s: float | None = None) -> TestSuite:
    """The testsuite of one run: ``name`` (its path), a testcase per checker."""
    suite = TestSuite(name)
    for key, value in (properties or {}).items():
        suite.add_property(str(key), value if isinstance(value, str) else json.dumps(value, default=str))
    anomalies = list(result.get("anomalies") or [])
    verdicts = _checker_verdicts(result)
    for checker, valid in verdicts.items():
        case = TestCase(checker, classname=name, time=0.0)
        mine = [a for a in anomalies if str(a.get("checker")) == checker]
        if not mine and len(verdicts) == 1:
            mine = anomalies
        if valid is False:
            lines = [anomaly_text(a) for a in mine] or ["invalid (no anomaly recorded)"]
            failure = Failure(lines[0][:MAX_MESSAGE], "anomaly")
            failure.text = "\n".join(lines)
            case.result = [failure]
        elif valid is not True:
            error = Error(f"unknown: {checker} could not decide", "unknown")
            lines = [anomaly_text(a) for a in mine]
            if lines:
                error.text = "\n".join(lines)
            case.result = [error]
        suite.add_testcase(case)
    if time_s is not None:
        suite.time = round(float(time_s), 3)
    suite.update_statistics()
    return suite


def run_properties(run_dir: Path | None) -> dict[str, Any]:
    """Seed, toggles, test and workload of a store dir's ``run.json`` (empty without one)."""
    if run_dir is None:
        return {}
    try:
        run = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    if not isinstance(run, dict):
        return {}
    return {k: run[k] for k in ("test", "seed", "toggles", "workload") if k in run}


def junit_xml(suites: Iterable[TestSuite], name: str = "zkfence") -> JUnitXml:
    xml = JUnitXml(name)
    for suite in suites:
        xml.add_testsuite(suite)
    xml.update_statistics()
    return xml


def write_junit(path: Path | str, suites: Iterable[TestSuite], name: str = "zkfence") -> Path:
    """Write the suites as one ``<testsuites>`` document (atomically) and return its path."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    junit_xml(suites, name).write(str(tmp), pretty=True)
    tmp.replace(path)
    return path
