"""Scripted schedules: a TOML file of timed fault steps, replayed by ``harness run --schedule FILE``.

    name = "isolate-b2"           # optional (default: the file's stem)

    [[step]]
    at = 2.0                      # seconds after the run phase starts
    fault = "partition"           # see `FAULTS` in nemesis/registry.py
    phase = "start"               # start (default) | stop
    targets = "minority-zk"       # a spec (nemesis/targets.py) or a list of node names
    duration = 7.0                # optional: also adds the matching stop at at + duration
    seed = 0                      # optional: seeds the spec's random choice
    params = { grudge = "isolate", direction = "both" }   # optional, per fault

A ``stop`` step with no targets undoes that fault everywhere. Errors are one line: ``file:line:col``
for bad TOML, ``file:line: step N: key: why`` for a bad value.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any

from base.errors import UsageError
from nemesis.base import FaultOp
from nemesis.registry import COMMON_PARAMS, FAULTS, grudge_faults
from nemesis.schedule import Schedule, Step
from nemesis.targets import WHOLE_GRUDGES, spec_error

STEP_KEYS = ("at", "fault", "phase", "targets", "duration", "seed", "params")
TOP_KEYS = ("name", "step")


class ScheduleError(UsageError):
    pass


def _toml_error(path: Path, e: tomllib.TOMLDecodeError) -> ScheduleError:
    msg = str(e)
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    if m:
        return ScheduleError(f"{path}:{m.group(1)}:{m.group(2)}: invalid TOML: {msg[:m.start()].strip()}")
    m = re.search(r"\(at end of document\)", msg)
    n = len(path.read_text().splitlines()) if path.exists() else 0
    return ScheduleError(f"{path}:{n if m else 1}: invalid TOML: {re.sub(r' ?[(].*[)]$', '', msg)}")


def _step_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), 1) if re.match(r"^\s*\[\[\s*step\s*\]\]", line)]


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def parse_schedule(text: str, path: Path, name: str | None = None) -> Schedule:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _toml_error(path, e) from None
    lines = _step_lines(text)

    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise ScheduleError(f"{path}: unknown top-level key {unknown[0]!r} (known: name, [[step]])")
    steps_raw = data.get("step", [])
    if not isinstance(steps_raw, list) or not all(isinstance(s, dict) for s in steps_raw):
        raise ScheduleError(f"{path}: 'step' must be an array of tables ([[step]])")
    if "name" in data and not (isinstance(data["name"], str) and data["name"]):
        raise ScheduleError(f"{path}: name: must be a non-empty string")

    steps: list[Step] = []
    for i, raw in enumerate(steps_raw, 1):
        where = f"{path}:{lines[i - 1]}" if i - 1 < len(lines) else str(path)

        def bad(key: str, why: str, i: int = i, where: str = where) -> ScheduleError:
            return ScheduleError(f"{where}: step {i}: {key}: {why}")

        for k in raw:
            if k not in STEP_KEYS:
                raise bad(k, f"unknown key (known: {', '.join(STEP_KEYS)})")
        if "at" not in raw:
            raise bad("at", "missing (seconds after the run starts)")
        at = raw["at"]
        if not _is_num(at) or at < 0:
            raise bad("at", f"must be a number of seconds >= 0, got {at!r}")
        if "fault" not in raw:
            raise bad("fault", f"missing (one of {', '.join(FAULTS)})")
        fault = raw["fault"]
        if fault not in FAULTS:
            raise bad("fault", f"unknown fault {fault!r} (known: {', '.join(FAULTS)})")
        spec = FAULTS[fault]
        phase = raw.get("phase", "start")
        if phase not in ("start", "stop"):
            raise bad("phase", f"must be 'start' or 'stop', got {phase!r}")
        if spec.instant and phase == "stop":
            raise bad("phase", f"{fault} is instant: it has no stop phase")
        targets = raw.get("targets")
        if targets is None and phase == "start":
            raise bad("targets", "missing (a spec like 'one-broker' or a list of node names)")
        if targets is not None:
            err = spec_error(targets)
            if err:
                raise bad("targets", err)
            if isinstance(targets, str) and targets in WHOLE_GRUDGES and not spec.grudge:
                raise bad("targets", f"{targets!r} is a partition spec: only for "
                                     f"{' and '.join(f for f in FAULTS if f in grudge_faults())}")
        duration = raw.get("duration")
        if duration is not None:
            if not _is_num(duration) or duration <= 0:
                raise bad("duration", f"must be a number of seconds > 0, got {duration!r}")
            if phase != "start" or spec.instant:
                raise bad("duration", "only for the start of a fault with a stop phase")
        params = raw.get("params", {})
        if not isinstance(params, dict):
            raise bad("params", "must be a table, e.g. params = { latency_ms = 200 }")
        allowed = {**spec.params, **COMMON_PARAMS}
        for k, v in params.items():
            if k not in allowed:
                raise bad(f"params.{k}", f"not a parameter of {fault} (known: {', '.join(allowed) or 'none'})")
            want = allowed[k]
            if isinstance(v, bool) or not isinstance(v, want):
                raise bad(f"params.{k}", f"wrong type {type(v).__name__}")
            if k in spec.choices and v not in spec.choices[k]:
                raise bad(f"params.{k}", f"must be one of {', '.join(spec.choices[k])}, got {v!r}")
            if _is_num(v) and v < 0:
                raise bad(f"params.{k}", f"must be >= 0, got {v!r}")
        seed = raw.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise bad("seed", f"must be an integer, got {seed!r}")

        op_params = dict(params)
        if seed is not None:
            op_params["seed"] = seed
        explicit: list[str] = []
        if isinstance(targets, list):
            explicit = list(targets)
        elif isinstance(targets, str):
            op_params["spec"] = targets
        steps.append(Step(float(at), FaultOp(fault, phase, explicit, op_params)))
        if duration is not None:
            stop_params = {k: v for k, v in op_params.items() if k == "spec"}
            steps.append(Step(float(at) + float(duration), FaultOp(fault, "stop", list(explicit), stop_params)))
    return Schedule(name=data.get("name") or name or path.stem, steps=steps)


def load_schedule(path: str | Path) -> Schedule:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ScheduleError(f"{p}: cannot read schedule: {e.strerror or e}") from None
    return parse_schedule(text, p)


# -- writing ---------------------------------------------------------------------------------
def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(round(v, 3))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} to TOML")


def dumps_schedule(schedule: Schedule, comment: str = "") -> str:
    out = [f"# {line}" for line in comment.splitlines()]
    out.append(f"name = {_toml_value(schedule.name)}")
    for s in schedule.sorted_steps():
        op = s.op
        out += ["", "[[step]]", f"at = {_toml_value(float(s.at))}", f"fault = {_toml_value(op.f)}",
                f"phase = {_toml_value(op.phase)}"]
        params = dict(op.params)
        spec = params.pop("spec", None)
        seed = params.pop("seed", None)
        if op.targets:
            out.append(f"targets = {_toml_value(list(op.targets))}")
        elif spec is not None:
            out.append(f"targets = {_toml_value(spec)}")
        if seed is not None:
            out.append(f"seed = {_toml_value(seed)}")
        if params:
            out.append(f"params = {_toml_value(params)}")
    return "\n".join(out) + "\n"


def dump_schedule(schedule: Schedule, path: str | Path, comment: str = "") -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(dumps_schedule(schedule, comment))
    return p
