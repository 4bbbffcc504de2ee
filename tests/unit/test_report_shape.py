"""The report's pure shaping functions on plain event lists, and the page they render."""

from __future__ import annotations

import json
from pathlib import Path

from harness.report import build_report, render_report, shape, write_report
from harness.report.serve import list_runs

T0 = 0.0  # exact float times in the expectations


def ev(src: str, seq: int, t: float, f: str, typ: str = "event", process=None, **value) -> dict:
    return {"run": "r", "src": src, "seq": seq, "t_wall": T0 + t, "t_mono": 0, "type": typ, "f": f,
            "process": process, "value": value, "id": f"{src}/{seq}"}


def nem(seq: int, t: float, f: str, phase: str, stage: str, targets=(), **value) -> dict:
    return ev("nemesis", seq, t, f, "info", "nemesis", phase=phase, stage=stage, targets=list(targets), **value)


def test_origin_is_run_start_else_first_event():
    assert shape.origin([ev("agent:1", 1, -3, "agent_start"), ev("harness", 1, 0, "run_start")]) == T0
    assert shape.origin([ev("agent:1", 1, -3, "agent_start")]) == T0 - 3
    assert shape.origin([]) == 0.0


def test_bands_pair_start_invoke_with_stop_completion_per_fault_and_targets():
    events = [
        nem(1, 1.0, "isolate", "start", "invoke", ["b2"]), nem(2, 1.2, "isolate", "start", "complete", ["b2"]),
        nem(3, 2.0, "pause", "start", "invoke", ["zk1"]), nem(4, 2.1, "pause", "start", "complete", ["zk1"]),
        nem(5, 5.0, "isolate", "stop", "invoke", ["b2"]), nem(6, 5.5, "isolate", "stop", "complete", ["b2"]),
        nem(7, 6.0, "bounce", "start", "invoke", ["b1"]), nem(8, 6.4, "bounce", "start", "complete", ["b1"]),
        nem(9, 8.0, "heal", "stop", "invoke", reason="final"), nem(10, 8.3, "heal", "stop", "complete", reason="final"),
    ]
    bands, instants = shape.nemesis_bands(events, T0)
    assert [(b.f, b.targets, b.start, b.end, b.start_id, b.end_id) for b in bands] == [
        ("isolate", ("b2",), 1.0, 5.5, "nemesis/1", "nemesis/6"),
        ("pause", ("zk1",), 2.0, 8.3, "nemesis/3", "nemesis/10"),  # never stopped: the final heal ends it
    ]
    assert [(i.f, i.targets, i.t, i.detail) for i in instants] == [("bounce", ("b1",), 6.4, ""),
                                                                    ("heal", (), 8.3, "final")]
    assert bands[0].label == "isolate b2" and instants[1].label == "heal (final)"


def test_a_fault_never_stopped_or_healed_runs_to_the_end_and_errors_are_flagged():
    events = [nem(1, 1.0, "kill", "start", "invoke", ["b1"]), nem(2, 1.1, "kill", "start", "error", ["b1"]),
              ev("harness", 1, 9.0, "run_end")]
    (band,), _ = shape.nemesis_bands(events, T0)
    assert (band.start, band.end, band.end_id, band.error) == (1.0, 9.0, None, True)


def test_an_instant_flag_makes_a_line_and_no_nemesis_events_make_nothing():
    bands, instants = shape.nemesis_bands([nem(1, 1.0, "zap", "start", "complete", ["b1"], instant=True)], T0)
    assert bands == [] and [i.f for i in instants] == ["zap"]
    assert shape.nemesis_bands([ev("agent:1", 1, 0, "agent_start")], T0) == ([], [])


def test_broker_lanes_follow_agent_sessions_and_observer_znodes_with_epochs():
    events = [
        ev("observer", 1, 0.0, "broker_znode", process=1, broker_id=1, exists=False),
        ev("agent:1", 1, 0.1, "agent_start", process=1, broker_id=1, pid=42),
        ev("agent:1", 2, 0.2, "session", process=1, broker_id=1, state="connected", session_id=255),
        ev("agent:1", 3, 0.3, "register", "ok", 1, broker_id=1, epoch=100),
        ev("observer", 2, 0.35, "broker_znode", process=1, broker_id=1, exists=True, czxid=100),
        ev("agent:1", 4, 2.0, "session", process=1, broker_id=1, state="suspended"),
        ev("agent:1", 5, 4.0, "session", process=1, broker_id=1, state="lost", session_id=255),
        ev("agent:1", 6, 4.1, "deregistered", process=1, broker_id=1, epoch=100),
        ev("observer", 3, 4.2, "broker_znode", process=1, broker_id=1, exists=False),
        ev("agent:1", 7, 5.0, "session", process=1, broker_id=1, state="connected", session_id=256),
        ev("agent:1", 8, 5.1, "register", "ok", 1, broker_id=1, epoch=140),
        ev("observer", 4, 5.2, "broker_znode", process=1, broker_id=1, exists=True, czxid=140),
        ev("observer", 5, 9.0, "broker_znode", process=1, broker_id=1, exists=True, czxid=140, final=True),
        ev("agent:1", 9, 8.0, "agent_stop", process=1, broker_id=1, reason="signal"),
    ]
    lanes = shape.broker_lanes(events, T0)
    assert lanes.lanes == ["b1 session", "b1 znode"]
    session = [(s.state, s.start, s.end, s.text) for s in lanes.segments if s.lane == "b1 session"]
    assert session == [("started", 0.1, 0.2, "pid 42"), ("connected", 0.2, 2.0, "session 0xff"),
                       ("suspended", 2.0, 4.0, ""), ("lost", 4.0, 5.0, "session 0xff"),
                       ("connected", 5.0, 8.0, "session 0x100"), ("down", 8.0, 9.0, "signal")]
    znode = [(s.state, s.start, s.end, s.text) for s in lanes.segments if s.lane == "b1 znode"]
    assert znode == [("absent", 0.0, 0.35, ""), ("registered", 0.35, 4.2, "epoch 100"), ("absent", 4.2, 5.2, ""),
                     ("registered", 5.2, 9.0, "epoch 140")]  # the final snapshot is not a change
    assert [m.label for m in lanes.marks] == ["registered epoch 100", "deregistered", "registered epoch 140"]
    assert lanes.epochs == {1: [(0.3, 100, "agent:1/3"), (5.1, 140, "agent:1/8")]}


def test_client_ops_pair_invokes_and_completions_per_process_and_skip_agent_and_nemesis_ops():
    events = [
        ev("client", 1, 1.0, "send", "invoke", 0), ev("client", 2, 1.1, "poll", "invoke", 1),
        ev("client", 3, 1.5, "send", "ok", 0), ev("client", 4, 1.6, "send", "invoke", 0),
        ev("client", 5, 2.1, "poll", "info", 1), ev("client", 6, 2.2, "send", "fail", 0),
        ev("client", 7, 3.0, "final_read", "invoke", 0),
        ev("agent:1", 1, 1.0, "register", "invoke", 1), ev("agent:1", 2, 1.2, "register", "ok", 1),
        nem(1, 1.0, "isolate", "start", "invoke", ["b1"]),
    ]
    ops = shape.client_ops(events, T0)
    got = [(o.process, o.f, o.type, o.start, o.invoke_id, o.complete_id) for o in ops]
    assert got == [(0, "send", "ok", 1.0, "client/1", "client/3"), (1, "poll", "info", 1.1, "client/2", "client/5"),
                   (0, "send", "fail", 1.6, "client/4", "client/6"), (0, "final_read", "pending", 3.0, "client/7", None)]
    assert round(ops[0].latency_ms, 6) == 500.0 and ops[-1].latency_ms is None
    assert shape.client_ops([ev("agent:1", 1, 1.0, "register", "invoke", 1)], T0) == []


def test_throughput_counts_completions_per_operation_and_outcome_per_bucket():
    ops = [shape.ClientOp(0, "send", "ok", 0.0, t, "c/1", "c/2") for t in (0.1, 0.2, 0.9, 2.5)]
    ops += [shape.ClientOp(1, "poll", "fail", 0.0, 1.5, "c/3", "c/4"),
            shape.ClientOp(1, "poll", "pending", 0.0, None, "c/5", None)]
    assert shape.throughput(ops, 1.0) == {("poll", "fail"): [(1.5, 1.0)], ("send", "ok"): [(0.5, 3.0), (2.5, 1.0)]}
    assert shape.throughput(ops, 2.0)[("send", "ok")] == [(1.0, 1.5), (3.0, 0.5)]
    assert shape.throughput([]) == {}


def test_cited_ids_and_contexts_show_neighbours_of_each_cited_event():
    events = [ev("agent:1", i, float(i), "x") for i in range(1, 11)]
    anomaly = {"checker": "c", "message": "m", "event_ids": ["agent:1/5", "agent:1/1"],
               "detail": {"later": "agent:1/10", "not_an_id": "b2->zk1"}}
    assert shape.cited_ids(anomaly) == ["agent:1/5", "agent:1/1", "agent:1/10"]
    ctx = {c.cited: c for c in shape.event_contexts({**anomaly, "event_ids": [*anomaly["event_ids"], "agent:9/9"]},
                                                       events, around=2)}
    assert {k: [e["id"] for e in c.events] for k, c in ctx.items()} == {
        "agent:1/5": ["agent:1/3", "agent:1/4", "agent:1/5", "agent:1/6", "agent:1/7"],
        "agent:1/1": ["agent:1/1", "agent:1/2", "agent:1/3"], "agent:1/10": ["agent:1/8", "agent:1/9", "agent:1/10"],
        "agent:9/9": []}
    assert not ctx["agent:9/9"].found and ctx["agent:1/5"].found


def _run_dir(tmp_path: Path, events: list[dict], results: dict | None) -> Path:
    run = tmp_path / "store" / "t" / "20260101T000000.000"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"test": "t", "seed": 1, "toggles": {}, "workload": "none"}))
    (run / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    if results is not None:
        (run / "results.json").write_text(json.dumps(results))
    (run / "logs").mkdir()
    (run / "logs" / "zk1-zookeeper.log").write_text("log\n")
    return run


def test_the_page_is_offline_and_has_the_sections(tmp_path):
    events = [ev("harness", 1, 0.0, "run_start"), nem(1, 1.0, "isolate", "start", "invoke", ["b2"]),
              nem(2, 3.0, "isolate", "stop", "complete", ["b2"]),
              ev("agent:2", 1, 0.5, "register", "ok", 2, broker_id=2, epoch=7)]
    results = {"valid": False, "anomalies": [{"checker": "c", "message": "bad <thing>", "event_ids": ["nemesis/1"]}],
               "checkers": {"c": {"valid": False}}}
    run = _run_dir(tmp_path, events, results)
    path, problem = write_report(run)
    assert problem is None
    page = path.read_text()
    assert "<script src=" not in page and "Plotly.newPlot" in page  # plotly.js is inline: works offline
    assert len(page) > 1_000_000
    assert 'id="timeline"' in page and 'id="epochs"' in page and 'id="latency"' not in page
    assert "No client operations in this run" in page and "bad &lt;thing&gt;" in page
    assert 'class="cited"' in page and 'href="logs/zk1-zookeeper.log"' in page and "INVALID" in page


def test_a_run_without_results_or_history_still_renders_and_is_listed(tmp_path):
    run = _run_dir(tmp_path, [], None)
    assert "nothing to plot" in build_report(run)
    (runs,) = list_runs(tmp_path / "store")
    assert (runs.rel, runs.test, runs.verdict, runs.has_report) == ("t/20260101T000000.000", "t", None, False)


def test_a_damaged_history_is_reported_up_to_the_bad_line(tmp_path):
    run = _run_dir(tmp_path, [ev("harness", 1, 0.0, "run_start"), ev("agent:2", 1, 0.5, "register", "ok", 2,
                                                                      broker_id=2, epoch=7)], {"valid": True})
    with (run / "history.jsonl").open("ab") as f:
        f.write(b'{"src": "agent:2", "seq": 2\xff}\n' + json.dumps(ev("agent:2", 3, 0.9, "register")).encode() + b"\n")
    page = render_report(run)
    assert page.problem is not None and page.problem.startswith(f"{run / 'history.jsonl'}:3: not a valid event: 'utf-8'")
    assert "2 events over" in page.html and "this report shows the 2 events before it" in page.html
    (run / "history.jsonl").unlink()
    (run / "history.jsonl").mkdir()
    assert write_report(run)[1] == f"{run / 'history.jsonl'}: cannot read (Is a directory)"
