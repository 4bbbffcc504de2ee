"""Pure logic of the cross-run tables on plain rows: heal ↔ registration pairing, invoke ↔
completion pairing, percentiles, flaky grouping."""

from __future__ import annotations

import math

from harness.analysis.pairing import (
    Ev,
    OpLatency,
    Recovery,
    RunVerdict,
    anomaly_rates,
    ended_fault,
    flaky,
    latency_table,
    op_latencies,
    percentile,
    recoveries,
    recovery_table,
    summarize,
)


def nem(seq: int, t: float, f: str, phase: str = "stop", stage: str = "complete", **kw) -> Ev:  # noqa: ANN003
    return Ev("nemesis", seq, "info", f, t, stage=stage, phase=phase, **kw)


def reg(broker: int, seq: int, t: float, type_: str = "ok") -> Ev:
    return Ev(f"agent:{broker}", seq, type_, "register", t)


START = Ev("harness", 1, "event", "run_start", 10.0)


# a run with every kind of heal and registration (tests/integration/test_analyze_command.py runs these
# and HEAL_EDGES through the Spark pairing too)
HEALS = [
    nem(1, 1.0, "heal", reason="setup"), reg(1, 1, 2.0),  # setup heal and first registration: before run_start
    START,
    nem(2, 12.0, "isolate", phase="start"), nem(3, 20.0, "isolate", stage="invoke"),
    nem(4, 20.5, "isolate"),  # the heal: stop complete
    reg(2, 5, 20.0, "invoke"), reg(2, 6, 21.0), reg(3, 7, 21.5),  # first ok after it: 21.0
    nem(5, 30.0, "bounce", phase="start", instant=True), reg(1, 9, 30.25),
    nem(6, 40.0, "kill"),  # killed broker never came back before the final heal
    nem(7, 50.0, "heal", reason="final"), reg(3, 9, 50.1),
    nem(8, 60.0, "heal", reason="teardown"), reg(1, 10, 61.0),
]
# more runs: ties in time, heals without a reason or a phase, no run_start
HEAL_EDGES = [
    [nem(1, 5.0, "pause"), reg(1, 1, 5.0)],
    [reg(1, 1, 4.0), nem(1, 5.0, "pause")],
    [nem(1, 5.0, "pause"), nem(2, 5.0, "kill"), reg(1, 1, 5.0), reg(2, 2, 5.5)],  # the first heal gets none
    [START, nem(2, 11.0, "heal"), reg(1, 1, 11.5), nem(3, 12.0, "kill", phase=None), reg(1, 2, 12.5),
     nem(4, 13.0, "bounce", phase="start"), reg(2, 3, 13.0)],  # no reason: a heal; no phase: none
    # a heal before run_start is none, and its registrations nobody's; a second run_start changes nothing
    [nem(1, 5.0, "pause"), reg(1, 1, 6.0), START, reg(1, 2, 10.5), Ev("harness", 2, "event", "run_start", 11.0),
     nem(2, 12.0, "kill"), reg(1, 3, 12.0)],
    # a heal that undid nothing (noop) ends no fault: the isolate's window runs on past it
    [START, nem(2, 11.0, "isolate"), nem(3, 11.2, "heal", reason="final", noop=True), reg(1, 1, 11.5)],
    # a heal that ended faults still active is their stop: its fault type names them
    [START, nem(2, 11.0, "isolate", phase="start"), nem(3, 11.1, "pause", phase="start"),
     nem(4, 12.0, "heal", reason="final", ended="isolate+pause"), reg(1, 1, 12.5)],
]


def test_heal_pairs_with_first_registration_before_next_heal() -> None:
    evs = HEALS
    got = recoveries(reversed(evs))  # input order does not matter: t_wall does
    assert got == [Recovery("isolate", "nemesis/4", 500.0), Recovery("bounce", "nemesis/5", 250.0),
                   Recovery("kill", "nemesis/6", None), Recovery("heal", "nemesis/7", got[3].ms)]
    assert math.isclose(got[3].ms, 100.0)


def test_a_noop_heal_is_no_heal_and_ends_no_window() -> None:
    assert recoveries(HEAL_EDGES[-2]) == [Recovery("isolate", "nemesis/2", 500.0)]
    assert recoveries([START, nem(2, 11.0, "heal", reason="final", noop=False), reg(1, 1, 11.5)]) == [
        Recovery("heal", "nemesis/2", 500.0)]


def test_a_heal_that_ended_faults_counts_as_theirs() -> None:
    assert recoveries(HEAL_EDGES[-1]) == [Recovery("isolate+pause", "nemesis/4", 500.0)]
    assert ended_fault(["pause", "isolate", "pause"]) == "isolate+pause"
    assert ended_fault(["kill"]) == "kill"
    for nothing in ([], None, "kill", ["kill", 1], ["kill", None], {"kill": 1}):
        assert ended_fault(nothing) is None


def test_registration_at_the_heal_instant_counts_and_without_run_start_all_heals_count() -> None:
    assert recoveries([nem(1, 5.0, "pause"), reg(1, 1, 5.0)]) == [Recovery("pause", "nemesis/1", 0.0)]
    assert recoveries([reg(1, 1, 4.0), nem(1, 5.0, "pause")]) == [Recovery("pause", "nemesis/1", None)]


def test_recovery_table_percentiles_per_fault() -> None:
    recs = [Recovery("kill", f"nemesis/{i}", float(ms)) for i, ms in enumerate([100, 200, 300, 400])]
    recs += [Recovery("kill", "nemesis/9", None), Recovery("isolate", "nemesis/10", 50.0)]
    isolate, kill = recovery_table(recs)
    assert (kill.fault, kill.heals, kill.paired, kill.unpaired) == ("kill", 5, 4, 1)
    assert (kill.p50_ms, kill.max_ms) == (250.0, 400.0)
    assert math.isclose(kill.p90_ms, 370.0) and math.isclose(kill.p99_ms, 397.0)
    assert (isolate.heals, isolate.p50_ms, isolate.p99_ms) == (1, 50.0, 50.0)


def op(src: str, seq: int, type_: str, f: str, t: float, process: str | None, mono: int | None = None) -> Ev:
    return Ev(src, seq, type_, f, t, t_mono=mono, process=process)


# every way an invoke and a completion pair, or do not (tests/integration/test_analyze_command.py runs
# them through the Spark pairing too)
TORN_OPS = [
    op("client", 1, "invoke", "send", 1.0, "0", 1_000_000), op("client", 2, "invoke", "send", 1.0, "1"),
    op("client", 3, "invoke", "poll", 1.1, "2"),
    op("client", 4, "ok", "send", 1.2, "0", 21_000_000),  # t_mono: 20 ms
    op("client", 5, "info", "send", 1.5, "1"),  # t_wall only: 500 ms
    op("client", 6, "fail", "poll", 1.15, "2"),
    op("client", 9, "invoke", "send", 4.0, "3"),  # a second invoke of the process: this one never completed
    op("client", 10, "invoke", "poll", 4.1, "3"), op("client", 11, "ok", "poll", 4.2, "3"),
    op("client", 7, "invoke", "final_read", 2.0, "final"),  # never completes
    op("queue", 1, "invoke", "send", 1.0, "0"), op("queue", 2, "ok", "send", 1.01, "0"),  # own writer
    op("agent:1", 3, "invoke", "register", 1.0, "1"), op("agent:1", 4, "ok", "register", 1.1, "1"),
    op("client", 8, "ok", "poll", 3.0, "7"),  # completion without invoke: ignored
    op("client", 12, "ok", "poll", 4.3, "3"),  # a second completion: its invoke is already paired, ignored
    op("cron", 1, "invoke", "scan", 5.0, None), op("cron", 2, "ok", "scan", 5.2, None),  # no process: one key
]


def test_ops_pair_per_source_and_process() -> None:
    evs = TORN_OPS
    got = sorted(op_latencies(evs), key=lambda o: (o.op, o.outcome, o.ms or 0))
    rounded = [(o.op, o.outcome, None if o.ms is None else round(o.ms, 3)) for o in got]
    assert rounded == [("final_read", "open", None), ("poll", "fail", 50.0), ("poll", "ok", 100.0),
                       ("scan", "ok", 200.0), ("send", "info", 500.0), ("send", "ok", 10.0), ("send", "ok", 20.0),
                       ("send", "open", None)]


def test_latency_table_skips_runs_without_workload() -> None:
    ops = [("queue", OpLatency("send", "ok", 10.0)), ("queue", OpLatency("send", "info", 30.0)),
           ("queue", OpLatency("send", "open", None)), ("none", OpLatency("send", "ok", 999.0))]
    (row,) = latency_table(ops)
    assert (row.workload, row.op, row.ops, row.ok, row.info, row.open) == ("queue", "send", 3, 1, 1, 1)
    assert (row.p50_ms, row.max_ms) == (20.0, 30.0)


def test_percentile_matches_linear_interpolation() -> None:
    assert percentile([1.0], 0.99) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == 3.0
    assert math.isclose(percentile([0.0, 10.0], 0.9), 9.0)
    assert math.isnan(percentile([], 0.5))
    s = summarize([None, None])
    assert (s.count, s.untimed, s.p50, s.max) == (0, 2, None, None)


def verdict(run_id: str, valid: str, toggles: str = "default", zk: str = "3.8.0") -> RunVerdict:
    return RunVerdict(run_id, "isolate-broker", toggles, "isolate", "none", zk, valid)


def test_flaky_groups_everything_but_the_seed() -> None:
    runs = [verdict("r1", "valid"), verdict("r2", "invalid"), verdict("r3", "valid"),
            verdict("r4", "valid", zk="3.9.2"), verdict("r5", "unknown", zk="3.9.2"),
            verdict("r6", "valid", toggles="registration=pre_2_2"), verdict("r7", "valid", toggles="registration=pre_2_2")]
    a, b = flaky(runs)
    assert (a.zk_version, a.runs, a.valid, a.invalid, a.unknown, a.run_ids) == ("3.8.0", 3, 2, 1, 0, "r1 r2 r3")
    assert (b.zk_version, b.runs, b.valid, b.unknown, b.run_ids) == ("3.9.2", 2, 1, 1, "r4 r5")
    assert flaky([verdict("x", "invalid"), verdict("y", "invalid")]) == []


def test_anomaly_rates_count_each_run_once() -> None:
    rows = [("d1", "liveness", "default", "isolate", "invalid"), ("d1", "liveness", "default", "isolate", "invalid"),
            ("d2", "liveness", "default", "isolate", "valid"), ("d3", "epochs", "default", "isolate", "unknown")]
    liveness, epochs = anomaly_rates(rows)
    assert (liveness.runs, liveness.invalid, liveness.rate) == (2, 1, 0.5)
    assert (epochs.runs, epochs.unknown, epochs.rate) == (1, 1, 0.0)


def test_zk_version_from_settings_or_the_jar(tmp_path) -> None:  # noqa: ANN001
    import zipfile

    from base.components.zookeeper import ZkSettings
    from harness.zkversion import zk_version

    jar = tmp_path / "zookeeper-3.8.4.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties", "groupId=x\nversion=3.8.4\n")
    other = tmp_path / "slf4j.jar"
    other.write_bytes(b"")
    assert zk_version(ZkSettings(classpath=f"{other}:{jar}")) == "3.8.4"
    assert zk_version(ZkSettings(classpath=f"{tmp_path}/zookeeper.jar")) is None  # not readable here
    assert zk_version(ZkSettings(source="maven", version="3.9.2", classpath="")) == "3.9.2"
