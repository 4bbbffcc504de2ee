"""JUnit XML for CI servers: one ``<testcase>`` per checked run, all in one ``<testsuite>``.

A run's verdict maps onto JUnit's: ``valid`` → passed; ``invalid`` → ``<failure>`` whose message is
the anomaly summary naming the checkers that fired (``3 anomalies from registration_liveness ×2,
bounce_handling ×1``) and whose text lists every anomaly with the event ids that prove it;
``unknown`` → ``<error>`` naming the checkers that could not decide (never a pass). The testcase's
name is the run's configuration (test, faults, toggles, workload, seed, repeat) and its properties
(xunit2 ``<properties>`` inside the testcase) carry the same as data, plus the run directory.
Written with ``junitparser``; the input is the plain result dicts of ``checkers.result``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml
from junitparser.xunit2 import TestCase, TestSuite

MAX_MESSAGE = 300
NAME_KEYS = ("test", "brokers", "faults", "toggles", "workload", "seed", "repeat")


def anomaly_text(anomaly: Mapping[str, Any]) -> str:
    """One line: ``[checker] message (events a, b)`` plus any key fields (broker, partition...)."""
    ids = ", ".join(str(i) for i in anomaly.get("event_ids") or [])
    keys = {k: v for k, v in anomaly.items() if k not in ("checker", "message", "event_ids", "detail")}
    out = f"[{anomaly.get('checker', '?')}] {anomaly.get('message', '')}"
    if keys:
        out += " " + " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in keys.items())
    return out + (f" (events {ids})" if ids else "")


def checker_verdicts(result: Mapping[str, Any]) -> dict[str, Any]:
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


def anomaly_summary(result: Mapping[str, Any]) -> str:
    """``2 anomalies from registration_liveness ×1, bounce_handling ×1``: which checkers fired, how often."""
    anomalies = list(result.get("anomalies") or [])
    counts = Counter(str(a.get("checker", "?")) for a in anomalies)
    for name, valid in checker_verdicts(result).items():
        if valid is False and name not in counts:
            counts[name] = 0  # invalid without an anomaly recorded: still named
    fired = ", ".join(f"{n} ×{c}" if c else n for n, c in counts.items())
    n = len(anomalies)
    return f"{n} anomal{'y' if n == 1 else 'ies'} from {fired or 'no checker named'}"


def case_name(properties: Mapping[str, Any], fallback: str) -> str:
    """The run's configuration as one line: ``nightly-003 · partition · registration=pre_2_2 · none · seed 1``."""
    parts = []
    for key in NAME_KEYS:
        if key not in properties or properties[key] in (None, ""):
            continue
        v = properties[key]
        if key == "toggles":
            v = ",".join(f"{k}={json.dumps(x) if not isinstance(x, str) else x}" for k, x in v.items()) or "defaults"
        elif key in ("seed", "repeat"):
            if key == "repeat" and not v:
                continue
            v = f"{key} {v}"
        parts.append(str(v))
    return " · ".join(parts) or fallback


def case_for(name: str, result: Mapping[str, Any], properties: Mapping[str, Any] | None = None,
             time_s: float | None = None, classname: str = "zkfence") -> TestCase:
    """The testcase of one run: passed, ``<failure>`` (invalid) or ``<error>`` (unknown)."""
    case = TestCase(name, classname=classname, time=round(float(time_s), 3) if time_s is not None else 0.0)
    for key, value in (properties or {}).items():
        case.add_property(str(key), value if isinstance(value, str) else json.dumps(value, default=str))
    valid = result.get("valid", "unknown")
    lines = [anomaly_text(a) for a in result.get("anomalies") or []]
    if valid is False:
        failure = Failure(anomaly_summary(result)[:MAX_MESSAGE], "anomaly")
        failure.text = "\n".join(lines or ["invalid (no anomaly recorded)"])
        case.result = [failure]
    elif valid is not True:
        undecided = [n for n, v in checker_verdicts(result).items() if v not in (True, False)]
        why = f"unknown: {', '.join(undecided)} could not decide" if undecided else "unknown: no verdict"
        error = Error(why[:MAX_MESSAGE], "unknown")
        extra = [f"run error: {result['error']}"] if result.get("error") else []
        if extra or lines:
            error.text = "\n".join(extra + lines)
        case.result = [error]
    return case


def run_properties(run_dir: Path | None) -> dict[str, Any]:
    """Test, faults, toggles, workload and seed of a store dir's ``run.json``, and the dir itself
    (empty without a run.json). ``faults``: the schedule's fault names in order of first use."""
    if run_dir is None:
        return {}
    try:
        run = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    if not isinstance(run, dict):
        return {}
    out = {k: run[k] for k in ("test", "seed", "toggles", "workload") if k in run}
    steps = (run.get("schedule") or {}).get("steps") or []
    faults = list(dict.fromkeys(str(s.get("f")) for s in steps if isinstance(s, dict) and s.get("f") != "heal"))
    if faults:
        out["faults"] = ",".join(faults)
    out["run_dir"] = str(run_dir)
    return out


def junit_xml(cases: Iterable[TestCase], name: str = "zkfence", time_s: float | None = None) -> JUnitXml:
    suite = TestSuite(name)
    seen: Counter[str] = Counter()
    for case in cases:
        seen[case.name] += 1
        if seen[case.name] > 1:  # two checked paths of one configuration: CI servers merge equal names
            case.name = f"{case.name} · #{seen[case.name]}"
        suite.add_testcase(case)
    suite.time = round(float(time_s if time_s is not None else sum(c.time or 0.0 for c in suite)), 3)
    suite.update_statistics()
    xml = JUnitXml(name)
    xml.add_testsuite(suite)
    xml.update_statistics()
    return xml


def write_junit(path: Path | str, cases: Iterable[TestCase], name: str = "zkfence") -> Path:
    """Write the testcases as one ``<testsuites>`` document (atomically) and return its path."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    junit_xml(cases, name).write(str(tmp), pretty=True)
    tmp.replace(path)
    return path
