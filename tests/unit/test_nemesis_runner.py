"""NemesisRunner and the process nemesis against fake components: events before and after every
op, failures recorded and survived, targets held to the inventory, specs resolved, heals at setup
and teardown, active faults tracked (a partial heal included), and the process nemesis acting only
through the Component protocol. Pure: no process, no socket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from base.components import ProcState, Unsupported, parse_stat
from base.inventory import load_inventory
from history import EventWriter, read_events
from nemesis.base import FaultOp, NemesisRunner, TargetError
from nemesis.process import ProcessNemesis
from nemesis.targets import Pools


class FakeComponent:
    def __init__(self, name: str, wipeable: bool = True) -> None:
        self.name = name
        self.role = "fake"
        self.wipeable = wipeable
        self.proc = ProcState.RUNNING
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")
        self.proc = ProcState.RUNNING

    def stop(self, grace: float = 5.0) -> bool:
        self.calls.append("stop")
        self.proc = ProcState.STOPPED
        return True

    def kill(self) -> bool:
        self.calls.append("kill")
        self.proc = ProcState.STOPPED
        return True

    def pause(self) -> bool:
        self.calls.append("pause")
        self.proc = ProcState.PAUSED
        return True

    def resume(self) -> bool:
        if self.proc is ProcState.PAUSED:
            self.proc = ProcState.RUNNING
            self.calls.append("resume")
            return True
        return False

    def wipe(self) -> None:
        if not self.wipeable:
            raise Unsupported(f"{self.name} keeps no data")
        self.calls.append("wipe")

    def state(self) -> ProcState:
        return self.proc

    def logs(self, dest: Path) -> list[Path]:
        return []


class FakeCluster:
    def __init__(self) -> None:
        self.inv = load_inventory()
        self.comps = {n.name: FakeComponent(n.name, wipeable=n.name.startswith("b")) for n in self.inv.nodes}

    def components(self) -> dict[str, FakeComponent]:
        return self.comps


class Recorder:
    """A nemesis that records what it is asked and fails on demand."""

    fs = frozenset({"isolate", "cut", "boom"})

    def __init__(self) -> None:
        self.invoked: list[FaultOp] = []
        self.heals = 0

    def setup(self, cluster: Any) -> None:
        pass

    def invoke(self, op: FaultOp) -> dict[str, Any]:
        if op.f == "boom":
            raise RuntimeError("the fault command failed")
        self.invoked.append(op)
        return {"did": op.f}

    def heal(self) -> dict[str, Any]:
        self.heals += 1
        return {}

    def teardown(self) -> None:
        pass


def runner(tmp_path: Path, *nemeses: Any, pools: Pools | None = None) -> tuple[NemesisRunner, FakeCluster, Path]:
    cluster = FakeCluster()
    path = tmp_path / "nemesis.jsonl"
    return NemesisRunner(cluster, EventWriter(path, "nemesis"), list(nemeses), pools=pools), cluster, path


def stages(path: Path) -> list[tuple[str, str, str]]:
    return [(e.f, e.value.get("phase"), e.value.get("stage")) for e in read_events(path)]


def test_every_op_is_an_event_before_and_after_and_its_completion_carries_the_detail(tmp_path: Path) -> None:
    rec = Recorder()
    r, _, path = runner(tmp_path, rec)
    r.setup()
    done = r.invoke(FaultOp("isolate", "start", ["b1"]))
    assert done and done.detail == {"did": "isolate"}
    assert stages(path) == [("heal", "stop", "invoke"), ("heal", "stop", "complete"),
                            ("isolate", "start", "invoke"), ("isolate", "start", "complete")]
    assert rec.heals == 1


def test_a_failing_fault_is_recorded_as_info_and_the_run_goes_on(tmp_path: Path) -> None:
    r, _, path = runner(tmp_path, Recorder())
    done = r.invoke(FaultOp("boom", "start", ["zk1"]))
    assert not done and "the fault command failed" in done.detail["error"]
    assert r.invoke(FaultOp("isolate", "start", ["b2"]))
    evs = list(read_events(path))
    assert [(e.f, e.value["stage"], e.type) for e in evs][:2] == [("boom", "invoke", "info"), ("boom", "error", "info")]
    assert r.active == [FaultOp("isolate", "start", ["b2"])]


def test_targets_outside_the_inventory_and_unknown_faults_are_refused(tmp_path: Path) -> None:
    r, _, _ = runner(tmp_path, Recorder())
    with pytest.raises(TargetError, match="not in the inventory"):
        r.invoke(FaultOp("isolate", "start", ["10.0.0.7"]))
    with pytest.raises(TargetError, match="no nemesis handles"):
        r.invoke(FaultOp("teleport", "start", ["b1"]))


def test_a_spec_is_resolved_from_the_pools_and_an_unresolvable_one_recorded(tmp_path: Path) -> None:
    rec = Recorder()
    pools = Pools(["zk1", "zk2", "zk3"], ["b1", "b2", "b3"], leader=lambda: "zk2", controller=lambda: None)
    r, _, path = runner(tmp_path, rec, pools=pools)
    assert r.invoke(FaultOp("isolate", "start", [], {"spec": "zk-leader"}))
    assert rec.invoked[-1].targets == ["zk2"]
    done = r.invoke(FaultOp("isolate", "start", [], {"spec": "controller"}))
    assert not done and "controller" in done.detail["error"]
    assert stages(path)[-1] == ("isolate", "start", "error")


def test_a_partial_heal_keeps_the_cut_active_when_the_isolation_stops(tmp_path: Path) -> None:
    r, _, _ = runner(tmp_path, Recorder())
    r.invoke(FaultOp("isolate", "start", ["b2"]))
    r.invoke(FaultOp("cut", "start", ["b2"], {"links": ["b2->zk1", "b2->zk3"]}))
    r.invoke(FaultOp("isolate", "stop", ["b2"]))
    assert [(a.f, a.targets) for a in r.active] == [("cut", ["b2"])]
    r.teardown()
    assert r.active == []


def test_teardown_heals_and_never_raises(tmp_path: Path) -> None:
    class Broken(Recorder):
        def heal(self) -> dict[str, Any]:
            raise RuntimeError("toxiproxy is gone")

        def teardown(self) -> None:
            raise RuntimeError("and so is this")

    r, _, path = runner(tmp_path, Broken(), )
    r.teardown()
    heal = [e for e in read_events(path) if e.f == "heal" and e.value["stage"] == "complete"]
    assert heal and "error_Broken" in heal[0].value


def process(tmp_path: Path) -> tuple[NemesisRunner, FakeCluster]:
    r, cluster, _ = runner(tmp_path, ProcessNemesis())
    r.setup()
    return r, cluster


def test_the_process_nemesis_kills_pauses_and_restarts_through_the_protocol(tmp_path: Path) -> None:
    r, c = process(tmp_path)
    assert r.invoke(FaultOp("kill", "start", ["zk1"]))
    assert r.invoke(FaultOp("pause", "start", ["b2"]))
    assert c.comps["zk1"].state() is ProcState.STOPPED and c.comps["b2"].state() is ProcState.PAUSED
    assert r.invoke(FaultOp("pause", "stop", []))  # no targets: wherever it is active
    assert r.invoke(FaultOp("kill", "stop", ["zk1"]))
    assert c.comps["zk1"].calls == ["kill", "start"] and c.comps["b2"].calls == ["pause", "resume"]


def test_instant_faults_bring_the_component_back_at_once(tmp_path: Path) -> None:
    r, c = process(tmp_path)
    assert r.invoke(FaultOp("bounce", "start", ["b1"])).detail["instant"] is True
    assert r.invoke(FaultOp("fast_bounce", "start", ["zk3"]))
    assert r.invoke(FaultOp("wipe", "start", ["b3"]))
    assert c.comps["b1"].calls == ["stop", "start"]
    assert c.comps["zk3"].calls == ["kill", "start"]
    assert c.comps["b3"].calls == ["kill", "wipe", "start"]
    assert r.active == []


def test_wiping_what_keeps_no_data_fails_and_heal_restarts_it(tmp_path: Path) -> None:
    r, c = process(tmp_path)
    done = r.invoke(FaultOp("wipe", "start", ["zk1"]))  # the fake ZooKeeper keeps no data
    assert not done and "Unsupported" in done.detail["error"]
    assert c.comps["zk1"].state() is ProcState.STOPPED
    r.heal("final")
    assert c.comps["zk1"].state() is ProcState.RUNNING


def test_heal_restarts_what_it_took_down_unless_retired_from_the_cluster(tmp_path: Path) -> None:
    r, c = process(tmp_path)
    r.invoke(FaultOp("kill", "start", ["b1", "zk2"]))
    r.invoke(FaultOp("pause", "start", ["b3"]))
    retired = c.comps.pop("b1")  # the run engine retired the agents after the run
    r.teardown()
    assert retired.state() is ProcState.STOPPED and retired.calls == ["kill"]
    assert c.comps["zk2"].calls == ["kill", "start"] and c.comps["b3"].state() is ProcState.RUNNING


def test_an_unknown_component_is_refused_before_anything_is_done(tmp_path: Path) -> None:
    r, c = process(tmp_path)
    del c.comps["b2"]
    assert not r.invoke(FaultOp("kill", "start", ["b1", "b2"]))
    assert c.comps["b1"].calls == []


@pytest.mark.parametrize("stat,state", [("", ProcState.STOPPED), ("Z", ProcState.STOPPED), ("Ssl", ProcState.RUNNING),
                                        ("R+", ProcState.RUNNING), ("T", ProcState.PAUSED), ("tl", ProcState.PAUSED),
                                        ("  Sl\n", ProcState.RUNNING), ("X", ProcState.STOPPED)])
def test_one_definition_of_a_process_state(stat: str, state: ProcState) -> None:
    assert parse_stat(stat) is state


def heal_values(path: Path) -> list[dict[str, Any]]:
    return [e.value for e in read_events(path) if e.f == "heal" and e.value["stage"] == "complete"]


def test_a_heal_with_nothing_to_undo_is_a_noop_and_ends_no_fault(tmp_path: Path) -> None:
    """The engine's recovery wait and registration_liveness's window count from the last fault that
    ended: a heal that undid nothing is recorded ``noop`` (a precautionary SIGCONT is not undoing)."""
    r, _ = process(tmp_path)  # its setup heal had nothing to undo
    path = tmp_path / "nemesis.jsonl"
    assert r.fault_ended_at is None
    r.invoke(FaultOp("pause", "start", ["b1"]))
    assert r.heal("final") is True  # a fault was active
    ended = r.fault_ended_at
    assert ended is not None
    assert r.heal("final") is False and r.fault_ended_at == ended  # nothing left: sigcont alone
    r.invoke(FaultOp("bounce", "start", ["b2"]))  # instant: nothing active, but it came after the stop
    assert r.fault_ended_at >= ended
    assert r.heal("final") is True
    r.invoke(FaultOp("kill", "start", ["b3"]))
    r.invoke(FaultOp("kill", "stop", ["b3"]))
    assert r.heal("final") is False
    assert [v.get("noop", False) for v in heal_values(path)] == [True, False, True, False, True]
    assert all("sigcont" in v for v in heal_values(path))


def test_a_heal_names_the_faults_it_ended(tmp_path: Path) -> None:
    """A heal with faults still active ends them: it says which (``ended``), so that the cross-run
    tables time their recovery as those faults', not as a fault type of its own."""
    r, _ = process(tmp_path)
    path = tmp_path / "nemesis.jsonl"
    r.invoke(FaultOp("pause", "start", ["b1"]))
    r.invoke(FaultOp("kill", "start", ["b2"]))
    r.invoke(FaultOp("pause", "start", ["b3"]))
    r.heal("final")
    r.invoke(FaultOp("kill", "start", ["b3"]))
    r.invoke(FaultOp("kill", "stop", ["b3"]))
    r.invoke(FaultOp("bounce", "start", ["b2"]))  # instant: never active
    r.heal("final")
    assert [v.get("ended") for v in heal_values(path)] == [None, ["kill", "pause"], None]


def test_a_heal_that_removes_something_or_fails_is_no_noop(tmp_path: Path) -> None:
    from nemesis.base import undid_something

    assert not undid_something({"toxics_removed": 0, "sigcont": ["zk1"], "restarted": [], "hooks_released": []})
    assert undid_something({"toxics_removed": 2})
    assert undid_something({"restarted": ["b1"]})
    assert undid_something({"error_LinkNemesis": "RuntimeError('toxiproxy down')"})
    assert undid_something({"zkproxy_rules_cleared": 1})
