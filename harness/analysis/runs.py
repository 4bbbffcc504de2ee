"""Find stored run directories and turn each into plain rows: one per (run, checker).

Pure: reads files, no Spark. A directory that is not a finished run (no or corrupt ``run.json`` /
``results.json``, missing ``history.jsonl``) raises ``BadRun`` with a one-line reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis.pairing import Ev, ended_fault

ANALYSIS_DIR = "analysis"
CAMPAIGNS_DIR = "campaigns"  # harness campaign's root under the store
_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})T")


class BadRun(Exception):
    """A run directory that cannot be ingested (corrupt or half-written)."""


@dataclass(frozen=True)
class CheckRow:
    run_dir: str
    run_id: str
    test: str
    date: str
    seed: int | None
    workload: str
    inventory: str
    zk_version: str
    toggles: str
    faults: str
    run_valid: str
    events: int
    checker: str
    valid: str
    anomalies: int


def candidate_dirs(store: Path) -> Iterator[Path]:
    """``store/<test>/<stamp>/`` directories, each once (``latest`` links skipped), sorted; and the
    runs of every campaign, ``store/campaigns/<name>/<stamp>/runs/<test>/<stamp>/``."""
    if not store.is_dir():
        return
    for test_dir in sorted(p for p in store.iterdir() if p.is_dir() and not p.is_symlink()):
        if test_dir.name in (ANALYSIS_DIR, "latest") or test_dir.name.startswith((".", "_")):
            continue
        if test_dir.name == CAMPAIGNS_DIR:
            for campaign in _dirs(test_dir):
                for stamp in _dirs(campaign):
                    yield from candidate_dirs(stamp / "runs")
            continue
        yield from _dirs(test_dir)


def _dirs(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if p.is_dir() and not p.is_symlink())


def verdict(v: Any) -> str:
    return "valid" if v is True else "invalid" if v is False else "unknown"


def toggle_set(toggles: Any) -> str:
    if not isinstance(toggles, dict) or not toggles:
        return "default"
    return ",".join(f"{k}={_flat(v)}" for k, v in sorted(toggles.items()))


def fault_types(run: dict[str, Any]) -> str:
    kinds: set[str] = set()
    schedule = run.get("schedule")
    if isinstance(schedule, dict):
        kinds |= {str(s["f"]) for s in schedule.get("steps") or [] if isinstance(s, dict) and s.get("f")}
    faults = run.get("faults")
    if isinstance(faults, list):
        kinds |= {str(f) for f in faults}
    elif isinstance(faults, str) and faults:
        kinds |= set(faults.split(","))
    return "+".join(sorted(kinds)) or "none"


def run_date(run_dir: Path) -> str:
    m = _STAMP.match(run_dir.name)
    if not m:
        raise BadRun(f"{run_dir}: directory name is not a run timestamp")
    return "-".join(m.groups())


def _flat(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BadRun(f"{path.parent}: no {path.name} (half-written run?)") from None
    except (OSError, ValueError) as e:
        raise BadRun(f"{path.parent}: {path.name} is corrupt ({str(e).splitlines()[0][:80]})") from None
    if not isinstance(data, dict):
        raise BadRun(f"{path.parent}: {path.name} is not a JSON object")
    return data


def count_events(history: Path) -> int:
    try:
        with history.open("rb") as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        raise BadRun(f"{history.parent}: no {history.name} (half-written run?)") from None
    except OSError as e:
        raise BadRun(f"{history.parent}: cannot read {history.name} ({e.strerror or e})") from None


def rows_for_run(run_dir: Path) -> list[CheckRow]:
    """One row per checker of a finished run (one ``-`` row when results name no checker)."""
    run = _load(run_dir / "run.json")
    results = _load(run_dir / "results.json")
    date = run_date(run_dir)
    events = count_events(run_dir / "history.jsonl")
    inv = run.get("inventory") if isinstance(run.get("inventory"), dict) else {}
    zk = inv.get("zookeeper") if isinstance(inv.get("zookeeper"), dict) else {}
    common = dict(
        run_dir=str(run_dir.resolve()), run_id=str(run.get("run_id") or run_dir.name),
        test=str(run.get("test") or run_dir.parent.name), date=date,
        seed=run.get("seed") if isinstance(run.get("seed"), int) else None,
        workload=str(run.get("workload") or "none"), inventory=str(inv.get("name") or "?"),
        zk_version=str(zk.get("version") or run.get("zk_version") or "?"),
        toggles=toggle_set(run.get("toggles")), faults=fault_types(run),
        run_valid=verdict(results.get("valid")), events=events,
    )
    checkers = results.get("checkers")
    if not isinstance(checkers, dict) or not checkers:
        return [CheckRow(**common, checker="-", valid=verdict(results.get("valid")),
                         anomalies=len(results.get("anomalies") or []))]
    per = _anomalies_per_checker(results)
    return [CheckRow(**common, checker=name, valid=verdict(r.get("valid") if isinstance(r, dict) else None),
                     anomalies=per.get(name, 0)) for name, r in sorted(checkers.items())]


def _anomalies_per_checker(results: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for a in results.get("anomalies") or []:
        if isinstance(a, dict) and a.get("checker"):
            out[str(a["checker"])] = out.get(str(a["checker"]), 0) + 1
    return out


def pairing_events(run_dir: Path) -> list[Ev]:
    """The history events of a run as ``pairing.Ev`` (the plain-Python reading of what
    ``tables.pairing_events`` selects on Spark; lines that are not JSON objects are skipped)."""
    out = []
    with (run_dir / "history.jsonl").open(encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if not isinstance(e, dict):
                continue
            v = e.get("value") if isinstance(e.get("value"), dict) else {}
            try:
                seq, t_wall = int(e["seq"]), float(e["t_wall"])
            except (KeyError, TypeError, ValueError):
                continue  # not an event (docs/events.md: seq and t_wall are required)
            mono = e.get("t_mono") if isinstance(e.get("t_mono"), int) else None
            out.append(Ev(str(e.get("src")), seq, str(e.get("type")), str(e.get("f")), t_wall, mono,
                          None if e.get("process") is None else str(e["process"]),
                          v.get("stage"), v.get("phase"), v.get("instant") is True or None, v.get("reason"),
                          v.get("noop") is True or None, ended_fault(v.get("ended"))))
    return out
