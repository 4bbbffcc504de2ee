"""`harness run --brokers kafka:3.9.1 --zkproxy`: real Kafka brokers, their ZooKeeper sessions
through Toxiproxy and the ZooKeeper wire proxy, under a scripted schedule (one broker killed and
restarted, another isolated past its session timeout), checked by the registration checkers over
the events parsed from their logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from base.components.kafka import fetch_kafka

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
SCHEDULE = """\
name = "kafka-kill-isolate"

[[step]]
at = 1.0
fault = "kill"
targets = ["b1"]
duration = 3.5

[[step]]
at = 2.0
fault = "isolate"
targets = ["b2"]
duration = 7.0
"""


def harness_run(engine, tmp_path: Path, test: str, *flags: str, exit_code: int = 0) -> Path:  # noqa: ANN001
    """`harness run --brokers kafka:3.9.1 FLAGS` on ``engine``, the session's warm one (its Spark session
    kept; a cluster of this shape kept between this module's runs), or None: an engine of its own,
    its cluster started cold; stored under ``tmp_path``. Asserts the exit code and returns the run's
    directory (``store/<test>/<time>``). The campaign test below runs the CLI from a cold start."""
    from tests.runs import run_test

    fetch_kafka("3.9.1")
    for _attempt in range(2):
        outcome = run_test(tmp_path / "store", "--brokers", "kafka:3.9.1", *flags, engine=engine)
        # Brokers that never started are no run of the story: one more try. On a loaded machine a
        # starting broker's ZooKeeper session once expired before it registered (CI: "Kafka 3.9.1
        # exited with code 1 before it started ... Session expired for /feature").
        if "setup" in outcome.phases or not (outcome.error or "").startswith("EnvironmentFailed"):
            break
    assert outcome.exit_code == exit_code, outcome.results
    assert outcome.run_dir.parent.name == test
    return outcome.run_dir


def harness_run_cli(tmp_path: Path, test: str, *flags: str, exit_code: int | tuple[int, ...] = 0) -> Path:
    """`harness run --brokers kafka:3.9.1 FLAGS` in a process of its own, stored under ``tmp_path``;
    asserts its exit code (one of them, given several) and returns the run's directory."""
    fetch_kafka("3.9.1")
    store = tmp_path / "store"
    p = subprocess.run([sys.executable, "-m", "harness.cli", "run", "--brokers", "kafka:3.9.1", *flags,
                        "--store", str(store)],
                       capture_output=True, text=True, timeout=840, cwd=REPO, env={**os.environ, "COLUMNS": "200"})
    assert p.returncode in ((exit_code,) if isinstance(exit_code, int) else exit_code), \
        p.stdout[-3000:] + p.stderr[-3000:]
    (run_dir,) = [d for d in store.glob(f"{test}/*") if d.is_dir() and not d.is_symlink()]
    return run_dir


def history(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "history.jsonl").read_text().splitlines() if x.strip()]


def test_real_brokers_reregister_after_a_kill_and_an_expiry(warm_engine, tmp_path):  # noqa: ANN001
    schedule = tmp_path / "kafka-kill-isolate.toml"
    schedule.write_text(SCHEDULE)
    run_dir = harness_run(warm_engine, tmp_path, "kafka-kill-isolate-kafka-3.9.1", "--zkproxy", "--schedule",
                          str(schedule), "--time-limit", "10")
    results = json.loads((run_dir / "results.json").read_text())
    # with the ZooKeeper proxy the brokers' sessions' reply zxids feed zxid_session too (checkers.kafka_feeds)
    assert set(results["checkers"]) == {"registration_epochs", "registration_liveness", "zxid_session"}
    assert results["valid"] is True, results
    assert results["checkers"]["registration_epochs"]["stats"]["unconfirmed_registrations"] == 0
    events = history(run_dir)

    def of(broker: int, f: str, type_: str = "event") -> list[dict]:
        return [e for e in events if e["src"] == f"agent:{broker}" and e["f"] == f and e["type"] == type_]

    # b1: killed for longer than its session timeout (3 s) and started again (two starts in its log)
    assert len(of(1, "agent_start")) == 2
    regs1 = of(1, "register", "ok")
    refused = of(1, "register", "fail")
    if refused:
        # a restarted broker that reaches registration before ZooKeeper expired its killed session is
        # refused by Kafka itself (CheckedEphemeral: the node's owner is the dead session) and exits;
        # seen once in CI under load. The refusal must name the first session as the owner.
        assert len(regs1) == 1 and refused[0]["value"]["owner"] == regs1[0]["value"]["session_id"], refused
        assert of(1, "startup_failed"), [e for e in events if e["src"] == "agent:1"]
    else:
        # the usual outcome: registered again with a larger epoch (czxid)
        assert len(regs1) == 2 and regs1[1]["value"]["epoch"] > regs1[0]["value"]["epoch"], \
            [e for e in events if e["src"] == "agent:1"]
    # b2: its session expired while isolated; it registered again under a new session
    assert [e["value"]["state"] for e in of(2, "session") if e["value"]["state"] == "expired"]
    regs2 = of(2, "register", "ok")
    assert len(regs2) == 2 and regs2[1]["value"]["session_id"] != regs2[0]["value"]["session_id"]
    # every broker session went through the ZooKeeper wire proxy: each registration's session is one
    # the proxy saw ZooKeeper create
    on_wire = {e["value"]["session_id"] for e in events if e["src"] == "zkproxy" and e["f"] == "session_established"}
    registered = {e["value"]["session_id"] for b in (1, 2, 3) for e in of(b, "register", "ok")}
    assert len(registered) == (4 if refused else 5) and registered <= on_wire, (registered, on_wire)
    # the first start's log survives the restart, in the run directory
    assert "[KafkaServer id=1] started" in (run_dir / "logs" / "b1-kafka-previous.log").read_text()


def test_hold_control_partition_kill_and_the_queue_workload_on_real_brokers(warm_engine, tmp_path):  # noqa: ANN001
    """Two done-whens in one run (a real-broker run is the suite's dearest step, so the two share one).
    Issue 42's second: the Kafka proxy in the inter-broker path (turned on by hold_control), its frames
    mapped onto control_send/control_recv, the control-plane checkers judging real brokers, every other
    checker unknown with its reason, and nothing left running. Issue 43's first: a valid run with at
    least 1,000 client operations through a Kafka client, checked."""
    from checkers.project import CHECKER_NAMES

    run_dir = harness_run(warm_engine, tmp_path, "hold-control", "--faults", "hold_control,partition,kill",
                          "--workload", "queue", "--acks", "all", "--concurrency", "24", "--seed", "3", "--time-limit", "40",
                          "--test", "hold-control")
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True, results
    feeds = results["feeds"]
    assert list(feeds) == list(CHECKER_NAMES)
    fed = [n for n, f in feeds.items() if "fed_from" in f]
    assert set(results["checkers"]) == set(fed) and {"control_request_epochs", "controller_epochs"} <= set(fed)
    assert all(f["valid"] == "unknown" and f["reason"] for n, f in feeds.items() if n not in fed)
    assert json.loads((run_dir / "run.json").read_text())["kafkaproxy"] is True
    events = history(run_dir)
    wire = [e for e in events if e["src"] == "kafkawire"]
    recv = [e["value"] for e in wire if e["f"] == "control_recv"]
    assert {"LeaderAndIsr", "UpdateMetadata"} <= {v["kind"] for v in recv}, wire
    assert all(v["controller_epoch"] >= 1 and v["own_epoch"] is not None for v in recv if v["outcome"] == "applied")
    holds = [e for e in events if e["f"] == "hold_control" and e["value"]["stage"] != "invoke"]
    assert holds and all(e["value"]["stage"] == "complete" for e in holds), holds
    proxy = [e["f"] for e in events if e["src"] == "kafkaproxy"]
    assert proxy.count("rule_added") == sum(1 for e in holds if e["value"]["phase"] == "start")
    assert proxy[-1] == "proxy_stop"  # stopped, its events flushed, before the history was merged
    # the brokers' inter-broker traffic went through it, the clients' did not (their CLIENT listener)
    frames = [e["value"] for e in events if e["f"] == "kafka_frame"]
    assert {"Fetch", "LeaderAndIsr"} <= {v["api"] for v in frames} and "Produce" not in {v["api"] for v in frames}

    # the queue workload: every queue checker judged it valid over >= 1,000 client operations
    queue = [n for n in results["checkers"] if n.startswith("queue_")]
    assert len(queue) == 7 and all(results["checkers"][n]["valid"] is True for n in queue), results["checkers"]
    ops = [e for e in events if e["src"] == "client" and e["type"] != "invoke"]
    assert len(ops) >= 1000, len(ops)
    # the faults ran, and the client saw the brokers through its links: acknowledged sends, reads
    # that returned records, and a final read of every partition up to its high watermark
    started = {e["f"] for e in events if e["src"] == "nemesis" and e["value"].get("stage") == "complete"
               and e["value"].get("phase") == "start"}
    assert started >= {"kill", "partition", "hold_control"}, started
    assert sum(e["f"] == "send" and e["type"] == "ok" for e in ops) >= 300
    assert any(e["f"] == "poll" and e["type"] == "ok" and e["value"]["offsets"] for e in ops)
    finals = [e for e in ops if e["f"] == "final_read" and e["type"] == "ok"]
    assert sorted(e["value"]["partition"] for e in finals) == [0, 1, 2]
    assert all(len(e["value"]["offsets"]) == e["value"]["hw"] for e in finals)


ACKS1_LEADER_LOSS = """\
name = "kafka-acks1-leader-loss"

[[step]]
at = 4.0
fault = "pause"
targets = ["b2", "b3"]
duration = 2.5

[[step]]
at = 5.0
fault = "kill"
targets = ["b1"]
duration = 8.0
"""


def test_acks_1_loses_acknowledged_writes_when_the_leader_dies_before_its_followers_fetch(tmp_path):
    """Issue 43's expected loss: with acks=1 a leader acknowledges before any follower has the
    record. Its followers paused (still in the ISR: 2.5 s is far below replica.lag.time.max.ms), b1 —
    the leader of one of the three partitions — acknowledges sends, then is killed; a follower becomes
    leader without them and later sends take their offsets. The checkers must name each lost write."""
    schedule = tmp_path / "acks1.toml"
    schedule.write_text(ACKS1_LEADER_LOSS)
    # exit 1, invalid: the run found what it lost
    # in a `harness run` process of its own, as it always passed: run in the test worker's process
    # (warm engine or cold) it lost nothing in two full-suite CI runs (848 sends ok, none failed),
    # though it passed there alone; the story needs b1's acknowledgements inside a 1 s window, which a
    # run on a loaded machine can miss (valid, nothing lost: once in nine full-suite runs), so more
    # runs are its retries, as `harness repro --runs` gives a race more than one chance. Under a full
    # suite's load both of two runs missed once (CI at ebbcc7d): pausing b2 and b3 took 2.2-2.8 s there,
    # so the kill came right after the pause took hold and b1 acknowledged nothing in between
    for attempt in range(3):
        run_dir = harness_run_cli(tmp_path / f"attempt{attempt}", "acks1", "--workload", "queue", "--acks", "1",
                                  "--schedule", str(schedule), "--time-limit", "16", "--test", "acks1",
                                  exit_code=(0, 1))
        results = json.loads((run_dir / "results.json").read_text())
        if results["valid"] is not True:
            break
    assert results["valid"] is False, "three acks=1 runs lost nothing"
    events = history(run_dir)
    finals = {e["value"]["partition"]: e["value"] for e in events if e["f"] == "final_read" and e["type"] == "ok"}
    assert sorted(finals) == [0, 1, 2]
    lost = {e["id"]: e["value"] for e in events if e["src"] == "client" and e["f"] == "send" and e["type"] == "ok"
            and e["value"]["value"] not in finals[e["value"]["partition"]]["values"]}
    assert lost, "no acknowledged acks=1 send was lost"
    assert {v["acks"] for v in lost.values()} == {"1"}
    # each lost send is named: its acknowledged offset now holds another value (the anomaly lists the
    # values at the offset), and no read returned it
    inconsistent = [a for a in results["anomalies"] if a["checker"] == "queue_inconsistent_offsets"]
    for v in lost.values():
        assert any(a["offset"] == v["offset"] and a["partition"] == v["partition"]
                   and v["value"] in a["message"].split(": ", 1)[1].split(", ") for a in inconsistent), (v, inconsistent)
    unseen = results["checkers"]["queue_unseen"]["stats"]
    assert unseen["unseen_total"] == len(lost)
    assert {i for a in unseen["unseen"] for i in a["event_ids"]} <= set(lost)
    # acks=all durability is not what was lost: no acks=all send was acknowledged
    assert results["checkers"]["queue_lost_write"]["valid"] is True


KAFKA_CAMPAIGN = """\
name = "kci"
time_limit = 8
seeds = [1, 2]

[matrix]
brokers = ["kafka:3.9.1"]
faults = ["kill"]
workloads = ["queue"]
"""


def test_a_kafka_campaign_runs_twice_on_one_warm_cluster_and_leaves_nothing_running(tmp_path):
    """The second run's brokers start on the warm cluster's nodes: with the first run's log dirs
    still there (meta.properties naming the old cluster id), Kafka refused to start and every run
    after the first ended unknown; and the old log would have been read as the new run's."""
    from harness.cli import main

    fetch_kafka("3.9.1")
    path = tmp_path / "kci.toml"
    path.write_text(KAFKA_CAMPAIGN)
    store = tmp_path / "store"
    assert main(["campaign", str(path), "--store", str(store)]) == 0
    cdir = (store / "campaigns" / "kci" / "latest").resolve()
    state = json.loads((cdir / "campaign.json").read_text())
    assert state["finished"] and [r["valid"] for r in state["runs"].values()] == [True, True], state["runs"]
    assert all(r["brokers"] == "kafka:3.9.1" and r["label"].startswith("kafka:3.9.1 · kill") for r in state["runs"].values())
    assert (cdir / "index.html").is_file() and "kafka:3.9.1" in (cdir / "index.html").read_text()
    junit = (cdir / "junit.xml").read_text()
    assert "kci-001 · kafka:3.9.1 · kill · defaults · queue · seed 2" in junit
    ended = 0.0  # the run before's last event
    for r in state["runs"].values():
        run_dir = cdir / r["run_dir"]
        events = history(run_dir)
        # this run's brokers started in this run: no start read from the run before's logs
        starts = [e for e in events if e["f"] == "agent_start"]
        assert len({e["src"] for e in starts}) == 3 and min(e["t_wall"] for e in starts) > ended, starts
        assert sum(e["f"] == "send" and e["type"] == "ok" for e in events) > 0
        ended = max(e["t_wall"] for e in events)
        scratch = json.loads((run_dir / "run.json").read_text())["scratch"]
        leftover = subprocess.run(["pgrep", "-f", scratch], capture_output=True, text=True).stdout.split()
        assert not leftover, f"processes of {scratch} still running: {leftover}"
