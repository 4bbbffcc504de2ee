"""Episodes (nemesis/episodes.py) as packaged faults: package → schedule is pure, seeded, aimed at the
inventory's brokers, sized from T, within the time limit, every held/started fault undone within
the episode, and plain data a scripted schedule file round-trips."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path

import pytest

from base.inventory import load_inventory
from harness.campaign import CampaignError, parse_campaign
from harness.commands.campaign import plan_specs
from nemesis.episodes import EPISODES, Cluster, duration, needs
from nemesis.packages import PACKAGEABLE, package_schedule
from nemesis.registry import FAULTS
from nemesis.scripted import dumps_schedule, parse_schedule

BROKERS = Cluster(("b1", "b2", "b3"), T=3.0)
UNDONE_BY_STOP = {"hold_controller", "hold_alter_partition", "delay_request", "latency", "zk_rules", "isolate",
                  "cut", "kill", "shutdown", "pause"}


@pytest.mark.parametrize("name", sorted(EPISODES))
def test_an_episode_package_is_seeded_within_the_limit_and_undoes_what_it_starts(name):
    a = package_schedule([name], interval=5.0, time_limit=40.0, seed=3, cluster=BROKERS)
    assert dumps_schedule(a) == dumps_schedule(package_schedule([name], 5.0, 40.0, 3, cluster=BROKERS))
    assert a.steps and max(s.at for s in a.steps) <= 40.0
    assert min(s.at for s in a.steps) >= EPISODES[name].earliest
    assert all(s.op.f in FAULTS for s in a.steps)
    # every broker named is an inventory broker; runtime specs only for controller / ZooKeeper roles
    named = {t for s in a.steps for t in s.op.targets}
    assert named and named <= set(BROKERS.brokers)
    assert {s.op.params["spec"] for s in a.steps if "spec" in s.op.params} <= {"controller", "all-zk", "zk-leader",
                                                                               "zk-followers"}
    # each fault that has a stop phase is stopped after its last start (the episode heals itself)
    for f in {s.op.f for s in a.steps} & UNDONE_BY_STOP:
        phases = [s.op.phase for s in a.sorted_steps() if s.op.f == f]
        assert phases[-1] == "stop", (f, phases)
    # plain data: a scripted schedule file holds it (harness run --schedule replays it)
    path = Path("s.toml")
    assert dumps_schedule(parse_schedule(dumps_schedule(a), path)) == dumps_schedule(a)


def test_episodes_are_sized_from_the_session_timeout():
    short, long = Cluster(BROKERS.brokers, T=3.0), Cluster(BROKERS.brokers, T=18.0)
    for name in EPISODES:
        assert duration(name, long) > duration(name, short)
    # KAFKA-14845's cut must outlast the session (T) and ZooKeeper's expiry check
    steps = EPISODES["lost_connect"].build(random.Random(0), short)
    cut = [t for t, op in steps if op.f == "isolate"]
    assert cut[1] - cut[0] > 2 * short.T


def test_episodes_draw_brokers_at_random_and_space_their_draws():
    s = package_schedule(["held_bounce"], interval=2.0, time_limit=200.0, seed=1, cluster=BROKERS)
    bounced = [st.op.targets[0] for st in s.sorted_steps() if st.op.f == "bounce"]
    assert len(set(bounced)) == 3  # every broker drawn over many episodes
    holds = [st for st in s.sorted_steps() if st.op.f == "hold_controller"]
    assert [h.op.phase for h in holds] == ["start", "stop"] * (len(holds) // 2)  # never two at once


def test_a_first_episode_is_moved_earlier_to_fit_and_one_that_cannot_fit_is_not_started():
    length = duration("empty_rejoin", BROKERS)
    s = package_schedule(["empty_rejoin"], interval=50.0, time_limit=EPISODES["empty_rejoin"].earliest + length,
                         seed=2, cluster=BROKERS)
    assert s.steps and max(st.at for st in s.steps) <= EPISODES["empty_rejoin"].earliest + length
    assert package_schedule(["empty_rejoin"], 5.0, length / 2, seed=2, cluster=BROKERS).steps == []


def test_episodes_need_the_cluster_and_mix_with_single_faults():
    with pytest.raises(ValueError, match="needs the cluster"):
        package_schedule(["stale_control"], seed=1)
    s = package_schedule(["partition", "stale_control"], 5.0, 20.0, seed=1, cluster=BROKERS)
    assert {st.op.f for st in s.steps} >= {"partition", "delay_request", "bounce"}
    assert set(EPISODES) <= set(PACKAGEABLE)


def test_only_lost_connect_needs_the_pipelining_proxy():
    assert needs(["lost_connect", "kill"]) == {"pipeline_zkproxy"}
    assert needs(["held_bounce", "stale_control", "slow_register", "empty_rejoin", "kill"]) == set()


def test_a_campaign_with_lost_connect_puts_every_brokers_pipelining_session_on_a_wire_proxy(tmp_path):
    text = 'name = "e"\n[matrix]\nfaults = ["lost_connect", "stale_control,kill"]\nworkloads = ["queue"]\n'
    p = tmp_path / "e.toml"
    p.write_text(text)
    c = parse_campaign(tomllib.loads(text), p, text)
    inv = load_inventory(None)
    specs = {planned.faults: spec for planned, spec in plan_specs(c, inv)}
    assert specs["lost_connect"].pipeline_zkproxy == tuple(b.broker_id for b in inv.brokers)
    assert specs["stale_control,kill"].pipeline_zkproxy == ()
    assert any(s.op.f == "zk_rules" for s in specs["lost_connect"].schedule.steps)


def test_the_shipped_episode_campaigns_load():
    from harness.campaign import load_campaign

    inv = load_inventory(None)
    for name in ("episodes.toml", "nightly.toml"):
        c = load_campaign(Path(__file__).resolve().parents[2] / "campaigns" / name)
        assert {f for fs in c.faults for f in fs.split(",")} >= set(EPISODES), name
        assert plan_specs(c, inv)


def test_revived_session_follows_the_kafka_6584_story_sized_from_T():
    for T in (3.0, 6.0):
        c = Cluster(BROKERS.brokers, T=T)
        steps = EPISODES["revived_session"].build(random.Random(5), c)
        at = {(op.f, op.phase): t for t, op in steps}
        b = steps[0][1].targets[0]
        assert b in c.brokers and [op.f for _, op in steps] == ["isolate", "pause", "cut", "isolate", "kill", "pause",
                                                                 "cut", "kill"]
        # the followers are paused right after B is cut: the leader's closeSession for B's session cannot commit
        assert steps[1][1].params == {"spec": "zk-followers"} and at[("pause", "start")] < 1.0
        # B reaches the leader only after its session has expired there (T + a tick), followers still cut
        assert at[("isolate", "stop")] - at[("isolate", "start")] > T + 0.2
        assert at[("cut", "start")] < at[("isolate", "stop")]
        assert [op.params["links"] for _, op in steps if op.f == "cut" and op.phase == "start"] == [[f"{b}->zk-followers"]]
        # the leader is killed while the followers are still paused, then they resume and elect
        assert at[("pause", "start")] < at[("kill", "start")] < at[("pause", "stop")] < at[("cut", "stop")]
        assert [op.params for _, op in steps if op.f == "kill" and op.phase == "start"] == [{"spec": "zk-leader"}]
        # the old leader restarts once the revived session (~T) has gone
        assert at[("kill", "stop")] - at[("kill", "start")] >= 2 * T
        # the leader must outlast the whole pause: the sync need covers it
        assert EPISODES["revived_session"].sync_s(c) > at[("kill", "start")] - at[("pause", "start")]
    assert duration("revived_session", BROKERS) <= 20.0 - EPISODES["revived_session"].earliest  # nightly's limit


def test_only_revived_session_needs_a_long_sync_limit():
    from nemesis.episodes import sync_error

    assert [n for n, e in EPISODES.items() if e.sync_s is not None] == ["revived_session"]
    assert sync_error(list(EPISODES), BROKERS, 200, 100) is None  # 20 s
    why = sync_error(["slow_register", "revived_session"], BROKERS, 200, 10)
    assert why and why.startswith("revived_session needs") and "set sync_limit = 61 or more" in why
    assert sync_error(["slow_register", "held_bounce"], BROKERS, 200, 10) is None


def test_harness_run_refuses_revived_session_on_a_short_sync_limit_and_takes_zk_settings():
    from harness.cli import build_parser, main
    from harness.commands.run import spec_from_args

    inv = load_inventory(None)
    args = ["run", "--faults", "revived_session", "--seed", "1"]
    spec = spec_from_args(build_parser().parse_args([*args, "--zk", "sync_limit=100"]), inv)
    assert spec.zk_overrides == {"sync_limit": 100} and spec.cluster_shape() != spec_from_args(
        build_parser().parse_args(["run", "--seed", "1"]), inv).cluster_shape()
    assert main(args) == 254
    assert main([*args, "--zk", "sync_limit=ten"]) == 254
    assert main([*args, "--zk", "init_limit=100"]) == 254  # still short: only sync_limit helps


def test_a_campaign_fault_set_carries_its_zookeeper_settings_into_its_runs(tmp_path):
    text = ('[matrix]\nfaults = [\n  "slow_register",\n  { faults = "revived_session", zookeeper = { sync_limit = 100 } },\n]\n'
            '[zookeeper]\ntick_time_ms = 200\n')
    c = parse_campaign(tomllib.loads(text), tmp_path / "c.toml", text)
    specs = plan_specs(c, load_inventory(None))
    assert [s.zk_overrides for _, s in specs] == [{"tick_time_ms": 200}, {"tick_time_ms": 200, "sync_limit": 100}]
    assert specs[1][0].argv(c)[-4:] == ["--zk", "sync_limit=100", "--zk", "tick_time_ms=200"]
    label = specs[1][0].label
    assert label.startswith("revived_session (zk sync_limit=100,tick_time_ms=200) · defaults")
    from rich.console import Console

    console = Console(record=True, width=200)
    console.print(label, highlight=False)  # as the campaign prints it: nothing taken for markup
    assert console.export_text().strip() == label
    short = text.replace("{ faults = \"revived_session\", zookeeper = { sync_limit = 100 } }", "\"revived_session\"")
    with pytest.raises(CampaignError, match=r"c\.toml: run 001 \(revived_session .*set sync_limit = 61 or more"):
        plan_specs(parse_campaign(tomllib.loads(short), tmp_path / "c.toml", short), load_inventory(None))
