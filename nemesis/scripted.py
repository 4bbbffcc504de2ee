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
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from base.bounds import MAX_INT32, MAX_SCHEDULE_STEPS, MAX_SECONDS, MAX_SEED, number_error, shown
from base.errors import UsageError
from base.tomlfile import toml_failure
from nemesis.base import FaultOp
from nemesis.kafkaproxy.rules import parse_rules as parse_kafka_rules
from nemesis.registry import COMMON_PARAMS, FAULTS, grudge_faults
from nemesis.schedule import Schedule, Step
from nemesis.targets import WHOLE_GRUDGES, is_node_name, link_error, spec_error
from nemesis.zkproxy.rules import RuleError, parse_rules

STEP_KEYS = ("at", "fault", "phase", "targets", "duration", "seed", "params")
TOP_KEYS = ("name", "step")
MAX_PARAM = MAX_INT32  # a numeric fault parameter (ms, KB/s, a partition): what the agents and Toxiproxy hold
TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")  # a Kafka topic name


class ScheduleError(UsageError):
    pass


@dataclass(frozen=True)
class Topology:
    """What a schedule may name on one inventory: its nodes and the links a cluster of them has
    (``nemesis.targets.link_names``). Given to ``parse_schedule``, every node and link a step names
    is judged against it, before a cluster starts."""

    brokers: tuple[str, ...]
    zookeepers: tuple[str, ...]

    @classmethod
    def of(cls, inv: Any) -> Topology:
        return cls(tuple(n.name for n in inv.brokers), tuple(n.name for n in inv.zookeepers))


def _toml_error(path: Path, text: str, e: Exception) -> ScheduleError:
    if not isinstance(e, tomllib.TOMLDecodeError):  # nested too deep, an integer past Python's digit limit
        line, why = toml_failure(text, e)
        return ScheduleError(f"{path}:{line}: invalid TOML: {why}")
    msg = str(e)
    m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
    if m:
        return ScheduleError(f"{path}:{m.group(1)}:{m.group(2)}: invalid TOML: {msg[:m.start()].strip()}")
    m = re.search(r"\(at end of document\)", msg)
    n = len(text.splitlines())
    return ScheduleError(f"{path}:{n if m else 1}: invalid TOML: {re.sub(r' ?[(].*[)]$', '', msg)}")


def _step_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), 1) if re.match(r"^\s*\[\[\s*step\s*\]\]", line)]


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def parse_schedule(text: str, path: Path, name: str | None = None, topology: Topology | None = None) -> Schedule:
    """The schedule ``text`` (the file ``path``) holds; ``ScheduleError`` (one line, file:line: step
    N: key) for anything a run could not do, judged here rather than after the cluster is up.
    ``topology``: also judge node and link names against that inventory."""
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as e:
        raise _toml_error(path, text, e) from None
    lines = _step_lines(text)

    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise ScheduleError(f"{path}: unknown top-level key {shown(unknown[0])} (known: name, [[step]])")
    steps_raw = data.get("step", [])
    if not isinstance(steps_raw, list) or not all(isinstance(s, dict) for s in steps_raw):
        raise ScheduleError(f"{path}: 'step' must be an array of tables ([[step]])")
    if len(steps_raw) > MAX_SCHEDULE_STEPS:
        raise ScheduleError(f"{path}: {len(steps_raw)} steps, over the limit of {MAX_SCHEDULE_STEPS}")
    if "name" in data and not (isinstance(data["name"], str) and data["name"]):
        raise ScheduleError(f"{path}: name: must be a non-empty string")

    steps: list[Step] = []
    for i, raw in enumerate(steps_raw, 1):
        where = f"{path}:{lines[i - 1]}" if i - 1 < len(lines) else str(path)
        try:
            steps += _step(raw, topology)
        except _Bad as e:
            raise ScheduleError(f"{where}: step {i}: {e.key}: {e.why}") from None
    return Schedule(name=data.get("name") or name or path.stem, steps=steps)


class _Bad(Exception):
    def __init__(self, key: str, why: str) -> None:
        super().__init__(key, why)
        self.key, self.why = key, why


def _step(raw: dict[str, Any], topology: Topology | None) -> list[Step]:
    """One ``[[step]]`` table as its steps (two with a duration); ``_Bad(key, why)`` otherwise."""
    for k in raw:
        if k not in STEP_KEYS:
            raise _Bad(k, f"unknown key (known: {', '.join(STEP_KEYS)})")
    if "at" not in raw:
        raise _Bad("at", "missing (seconds after the run starts)")
    if (why := number_error(raw["at"], 0, MAX_SECONDS, unit="seconds after the run starts")) is not None:
        raise _Bad("at", why)
    at = float(raw["at"])
    if "fault" not in raw:
        raise _Bad("fault", f"missing (one of {', '.join(FAULTS)})")
    fault = raw["fault"]
    if not isinstance(fault, str) or fault not in FAULTS:
        raise _Bad("fault", f"unknown fault {shown(fault)} (known: {', '.join(FAULTS)})")
    spec = FAULTS[fault]
    phase = raw.get("phase", "start")
    if phase not in ("start", "stop"):
        raise _Bad("phase", f"must be 'start' or 'stop', got {shown(phase)}")
    if spec.instant and phase == "stop":
        raise _Bad("phase", f"{fault} is instant: it has no stop phase")
    targets = raw.get("targets")
    if targets is None and phase == "start":
        raise _Bad("targets", "missing (a spec like 'one-broker' or a list of node names)")
    if targets is not None:
        _check_targets(targets, fault, topology)
    duration = raw.get("duration")
    if duration is not None:
        if (why := number_error(duration, 0, MAX_SECONDS, lo_open=True, unit="seconds")) is not None:
            raise _Bad("duration", why)
        if phase != "start" or spec.instant:
            raise _Bad("duration", "only for the start of a fault with a stop phase")
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise _Bad("params", "must be a table, e.g. params = { latency_ms = 200 }")
    for k, v in params.items():
        _check_param(fault, k, v, topology)
    if phase == "start":
        for k in REQUIRED.get(fault, ()):
            if k not in params:
                raise _Bad(f"params.{k}", f"required for the start of {fault}")
    seed = raw.get("seed")
    if seed is not None and (why := number_error(seed, 0, MAX_SEED, integer=True)) is not None:
        raise _Bad("seed", why)

    op_params = dict(params)
    if seed is not None:
        op_params["seed"] = seed
    explicit: list[str] = []
    if isinstance(targets, list):
        explicit = list(targets)
    elif isinstance(targets, str):
        op_params["spec"] = targets
    out = [Step(at, FaultOp(fault, phase, explicit, op_params))]
    if duration is not None:
        stop_params = {k: v for k, v in op_params.items() if k == "spec"}
        out.append(Step(at + float(duration), FaultOp(fault, "stop", list(explicit), stop_params)))
    return out


# params a fault's start cannot do without (its nemesis would fail mid-run)
REQUIRED: dict[str, tuple[str, ...]] = {"delay_request": ("kind", "to"), "zk_rules": ("rules",), "kafka_rules": ("rules",), "cut": ("links",)}


def _check_targets(targets: Any, fault: str, topology: Topology | None) -> None:
    if (err := spec_error(targets)) is not None:
        raise _Bad("targets", err)
    if isinstance(targets, str) and targets in WHOLE_GRUDGES and not FAULTS[fault].grudge:
        raise _Bad("targets", f"{targets!r} is a partition spec: only for "
                              f"{' and '.join(f for f in FAULTS if f in grudge_faults())}")
    if topology is None:
        return
    names = targets if isinstance(targets, list) else [targets] if is_node_name(targets) else []
    nodes = (*topology.zookeepers, *topology.brokers)
    if outside := [n for n in names if n not in nodes]:
        raise _Bad("targets", f"{shown(outside)} not in the inventory (nodes: {', '.join(nodes)})")


def _check_param(fault: str, k: Any, v: Any, topology: Topology | None) -> None:
    spec = FAULTS[fault]
    allowed = {**spec.params, **COMMON_PARAMS}
    key = f"params.{k}"
    if k not in allowed:
        raise _Bad(key, f"not a parameter of {fault} (known: {', '.join(allowed) or 'none'})")
    want = allowed[k]
    if isinstance(v, bool) or not isinstance(v, want):
        raise _Bad(key, f"wrong type {type(v).__name__}")
    if k in spec.choices and v not in spec.choices[k]:
        raise _Bad(key, f"must be one of {', '.join(spec.choices[k])}, got {shown(v)}")
    if isinstance(v, int | float):
        top = MAX_SEED if k == "seed" else MAX_PARAM
        if (why := number_error(v, 0, top, integer=isinstance(v, int) and want is int)) is not None:
            raise _Bad(key, why)
    if fault == "cut" and k == "links":
        if not v:
            raise _Bad(key, "must name at least one link, e.g. links = [\"b1->zk2\"]")
        for link in v:
            if (why := link_error(link, *(astuple(topology) if topology else (None, None)))) is not None:
                raise _Bad(key, why)
    elif fault == "zk_rules" and k == "rules":
        try:
            parse_rules(v, source=key)
        except RuleError as e:
            raise _Bad(key, str(e).removeprefix(f"{key}: ")) from None
    elif fault == "kafka_rules" and k == "rules":
        try:
            parse_kafka_rules(v, source=key)
        except RuleError as e:
            raise _Bad(key, str(e).removeprefix(f"{key}: ")) from None
    elif fault == "delay_request" and k == "to":
        if spec_error(v) is not None or not is_node_name(v):
            raise _Bad(key, f"expected a broker's node name, got {shown(v)}")
        if topology is not None and v not in topology.brokers:
            raise _Bad(key, f"{shown(v)} is not a broker of the inventory (brokers: {', '.join(topology.brokers)})")
    elif fault == "delay_request" and k == "topic" and not TOPIC.fullmatch(v):
        raise _Bad(key, f"expected a Kafka topic name (letters, digits, '.', '_', '-'), got {shown(v)}")


def load_schedule(path: str | Path, topology: Topology | None = None) -> Schedule:
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path, or not UTF-8
        raise ScheduleError(f"{p}: cannot read schedule: {getattr(e, 'strerror', None) or e}") from None
    return parse_schedule(text, p, topology=topology)


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
