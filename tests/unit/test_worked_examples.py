"""docs/architecture.md's worked examples are real code: each code block is an excerpt of its file
(the component's of the real Kafka broker, the others of a module under docs/examples/), and each
example runs: registered with its one registry line, then driven through what a real one goes
through (the schedule parser, the packages, the nemesis runner and the report for the fault; the
command line and the generator for the workload; the check on a breaking and a holding history for
the checker; both variants' tests and the story against a recording context for the scenario).
Pure: no process, no socket, no Spark."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
EXAMPLES = ROOT / "docs" / "examples"


def kafka_broker_file() -> Path:
    """The module that defines the real Kafka broker component, wherever the package layout puts it."""
    return next(p for p in sorted(ROOT.glob("*/**/kafka.py")) if "class KafkaBroker(" in p.read_text())


FILES = {
    "Adding a component": kafka_broker_file,
    "Adding a fault": lambda: EXAMPLES / "gc_pause.py",
    "Adding a workload": lambda: EXAMPLES / "appends.py",
    "Adding a checker": lambda: EXAMPLES / "checker.py",
    "Adding a scenario": lambda: EXAMPLES / "scenario.py",
}


def sections() -> dict[str, list[str]]:
    """Worked-example section title → its python code blocks."""
    text = DOC.read_text().split("## Worked examples", 1)[1].split("\n## ", 1)[0]
    out = {}
    for part in text.split("\n### ")[1:]:
        title, _, body = part.partition("\n")
        out[title.strip()] = re.findall(r"```python\n(.*?)```", body, re.S)
    return out


def first_missing(block: str, source: str) -> str | None:
    """The first line of ``block`` not found, in order, among ``source``'s lines (``...`` elides)."""
    lines = [line.rstrip() for line in source.splitlines()]
    at = 0
    for line in block.splitlines():
        if not line.strip() or line.strip() == "...":
            continue
        try:
            at = lines.index(line.rstrip(), at) + 1
        except ValueError:
            return line
    return None


def test_every_worked_example_has_its_file() -> None:
    assert set(sections()) == set(FILES), "a worked example in docs/architecture.md without a file here, or gone"
    assert all(sections().values()), "a worked example without a code block"


@pytest.mark.parametrize("title", list(FILES))
def test_every_block_is_an_excerpt_of_its_file(title: str) -> None:
    path = FILES[title]()
    for block in sections()[title]:
        missing = first_missing(block, path.read_text())
        assert missing is None, f"docs/architecture.md, {title}: {missing.strip()!r} is not in {path.relative_to(ROOT)}"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # a dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


# -- the fault -------------------------------------------------------------------------------------
class FakeComponent:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause(self) -> bool:
        self.calls.append("pause")
        return True

    def resume(self) -> bool:
        self.calls.append("resume")
        return True


class FakeCluster:
    def __init__(self) -> None:
        from base.inventory import load_inventory

        self.inv = load_inventory()
        self.comps = {n.name: FakeComponent() for n in self.inv.nodes}

    def components(self) -> dict[str, FakeComponent]:
        return self.comps


STEP = '[[step]]\nat = 1.0\nfault = "gc_pause"\ntargets = "one"\n'


def test_the_fault_example(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from harness.report.shape import nemesis_bands
    from history import EventWriter
    from nemesis.base import NemesisRunner
    from nemesis.packages import package_schedule
    from nemesis.registry import FAULTS
    from nemesis.scripted import ScheduleError, parse_schedule
    from nemesis.targets import Pools

    ex = load("gc_pause")
    monkeypatch.setitem(FAULTS, ex.ROW.name, ex.ROW)  # the registry line
    schedule = parse_schedule(STEP + "params = { pause_ms = 10 }\n", tmp_path / "s.toml")
    with pytest.raises(ScheduleError, match="gc_pause is instant"):
        parse_schedule(STEP + 'phase = "stop"\n', tmp_path / "s.toml")
    with pytest.raises(ScheduleError, match="params.pause_ms: wrong type str"):
        parse_schedule(STEP + 'params = { pause_ms = "long" }\n', tmp_path / "s.toml")
    packaged = package_schedule(["gc_pause"], interval=1.0, time_limit=10.0, seed=3)
    assert packaged.steps and {(s.op.phase, s.op.params["spec"] in ex.ROW.package) for s in packaged.steps} == {
        ("start", True)}

    cluster = FakeCluster()
    pools = Pools([n.name for n in cluster.inv.zookeepers], [n.name for n in cluster.inv.brokers])
    path = tmp_path / "nemesis.jsonl"
    runner = NemesisRunner(cluster, EventWriter(path, "nemesis"), [ex.GcPauseNemesis()], pools=pools)
    runner.setup()
    done = runner.invoke(schedule.steps[0].op)
    assert done, done.detail
    (target,) = done.op.targets
    assert target in pools.brokers, "an unsuffixed spec draws from the row's role"
    assert cluster.comps[target].calls == ["pause", "resume"] and runner.active == []

    events = [json.loads(line) for line in path.read_text().splitlines()]
    bands, instants = nemesis_bands(events, events[0]["t_wall"])
    assert bands == [] and [i.f for i in instants] == ["heal", "gc_pause"], "an instant fault is a line"


# -- the workload ----------------------------------------------------------------------------------
def test_the_workload_example(monkeypatch: pytest.MonkeyPatch) -> None:
    import workloads
    from checkers.project import CHECKER_NAMES
    from harness.cli import build_parser
    from harness.commands.run import workload_from_args
    from history.kinds import CLIENT, KINDS

    ex = load("appends")
    monkeypatch.setitem(workloads.DEFINITIONS, "appends", ex.DEFINITION)  # the registry line
    monkeypatch.setitem(workloads.WORKLOADS, "appends", ex.DEFINITION.make())
    args = build_parser().parse_args(["run", "--workload", "appends", "--topic", "t1", "--concurrency", "2"])
    w = workload_from_args(args)
    assert w.name == "appends" and w.concurrency == 2

    assert [(op.f, op.value["topic"]) for op in w.setup] == [("create_topic", "t1")], "the topic is created first"
    ops = [w.generator.next_op(p, 0.0) for p in (0, 1, 0)]  # type: ignore[union-attr]
    assert [(op.f, op.value["topic"], op.value["value"]) for op in ops if op] == [
        ("send", "t1", "p0-0"), ("send", "t1", "p1-0"), ("send", "t1", "p0-1")]
    for op in (*w.setup, *ops, *w.final):
        assert op is not None and CLIENT in KINDS[op.f].sources, f"{op}: not a client kind of the event contract"
    assert set(w.checkers) <= set(CHECKER_NAMES)

    throttled = ex.DEFINITION.make(2, 1.0, {"topic": "t"})  # 1 op/s over 2 processes: process 1 waits 1 s
    assert throttled.generator.next_op(1, 0.0).f == "sleep"  # type: ignore[union-attr]


# -- the checker -----------------------------------------------------------------------------------
def test_the_checker_example(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from checkers import project
    from checkers.testing import EventLog

    ex = load("checker")
    registry = project.make_checkers

    def with_example(margin_ms: int = project.DEFAULT_MARGIN_MS) -> tuple[Any, ...]:
        return (*registry(margin_ms), ex.LEADER_IN_ISR)  # the registry line

    monkeypatch.setattr(project, "make_checkers", with_example)
    monkeypatch.setattr(project, "CHECKER_NAMES", tuple(c.name for c in with_example()))
    paths = {}
    for bad in (False, True):
        log = EventLog(run=f"leader-{bad}")
        log.emit("agent:1", "partition_state", process=1, broker_id=1, topic="t", partition=0, leader=2,
                 leader_epoch=1, isr=[1, 3] if bad else [1, 2], controller_epoch=1, zk_version=1, zxid=5)
        paths[bad] = str(log.write(tmp_path / f"{bad}.jsonl"))
    res = project.check_histories(list(paths.values()), names=["leader_in_isr"], local=True)
    good, broken = res[paths[False]]["checkers"]["leader_in_isr"], res[paths[True]]["checkers"]["leader_in_isr"]
    assert good["valid"] is True and broken["valid"] is False
    (anomaly,) = res[paths[True]]["anomalies"]
    assert anomaly["checker"] == "leader_in_isr" and anomaly["message"] == "t-0 leader 2 not in ISR [1, 3]"
    assert anomaly["event_ids"] == ["agent:1/1"] and res[paths[False]]["anomalies"] == []


# -- the scenario ----------------------------------------------------------------------------------
class RecordingContext:
    """What a scenario's story may touch: the run context's verbs, recorded."""

    T = 3.0

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.epoch = 100

    def node(self, broker_id: int) -> str:
        return f"b{broker_id}"

    def nemesis(self, f: str, phase: str = "start", targets: list[str] | None = None, **params: Any) -> Any:
        self.calls.append(("nemesis", f, phase, targets or [], params))

    def wait_agent_event(self, broker_id: int, pred: Any, timeout: float, what: str) -> Any:
        class Event:
            f, type, value = "register", "ok", {"epoch": self.epoch}

        self.epoch += 1
        assert pred(Event)
        return Event

    def step(self, what: str, **fields: Any) -> None:
        self.calls.append(("step", what))

    def sleep(self, seconds: float) -> None:
        self.calls.append(("sleep", seconds))


def test_the_scenario_example() -> None:
    from checkers.project import CHECKER_NAMES
    from harness.spec import ANOMALY, VALID
    from scenarios import module_scenarios
    from scenarios.fixes import FIX_STATUS

    (sc,) = module_scenarios(load("scenario"))  # what scenarios() collects from a module
    bug, fixed = sc.spec(False), sc.spec(True)
    assert (bug.expect.outcome, fixed.expect.outcome) == (ANOMALY, VALID)
    assert bug.toggles == {"broker_epoch_check": "off"} and fixed.toggles == {"broker_epoch_check": "on"}
    assert sc.available() is None and set(sc.checkers) <= set(CHECKER_NAMES) and sc.jira in FIX_STATUS
    ctx = RecordingContext()
    sc.play(ctx)  # type: ignore[arg-type]
    assert [c[1:3] for c in ctx.calls if c[0] == "nemesis"] == [
        ("hold_controller", "start"), ("bounce", "start"), ("hold_controller", "stop")]
    assert ("nemesis", "bounce", "start", ["b2"], {}) in ctx.calls
