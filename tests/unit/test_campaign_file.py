"""Campaign files: the plan a matrix makes, one-line errors naming file:line and key, exit 254; the index page."""

from __future__ import annotations

from pathlib import Path

import pytest

from base.inventory import load_inventory
from harness.campaign import DEFAULT_CAMPAIGN, CampaignError, load_campaign
from harness.cli import main
from harness.commands.campaign import plan_specs
from harness.report.campaign import campaign_index

GOOD = """\
name = "ci"
time_limit = 10
seeds = [5, 6]
repeats = 2

[matrix]
faults = ["isolate", "partition,kill"]
toggles = [{}, { reregister_on_expiry = false }]
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_the_matrix_is_faults_x_toggles_x_workloads_x_seeds_x_repeats_whole_matrix_per_seed_first(tmp_path):
    c = load_campaign(write(tmp_path, GOOD))
    plan = c.plan()
    assert len(plan) == 2 * 2 * 1 * 2 * 2 and [p.key for p in plan[:3]] == ["000", "001", "002"]
    assert (plan[0].faults, plan[0].toggles, plan[0].seed, plan[0].repeat) == ("isolate", {}, 5, 0)
    last = plan[-1]
    assert (last.faults, last.toggles, last.seed, last.repeat) == ("partition,kill", {"reregister_on_expiry": False},
                                                                  6, 1)
    # no margin_ms in the file: `harness run`'s own default for what runs (3000 for agents)
    assert last.argv(c) == ["--time-limit", "10.0", "--seed", "6", "--workload", "none",
                            "--test", "ci-015", "--faults", "partition,kill", "--interval", "5.0",
                            "--toggle", "reregister_on_expiry=false"]
    assert "--faults" not in plan[0].argv(c)  # isolate is `harness run`'s default
    # the whole matrix for seed 5 first, faults innermost: a budget cuts seeds, never a fault set
    assert [(p.faults, p.toggles, p.seed, p.repeat) for p in plan[:5]] == [
        ("isolate", {}, 5, 0), ("partition,kill", {}, 5, 0), ("isolate", {"reregister_on_expiry": False}, 5, 0),
        ("partition,kill", {"reregister_on_expiry": False}, 5, 0), ("isolate", {}, 6, 0)]
    assert c.plan_hash() == load_campaign(write(tmp_path, GOOD)).plan_hash()
    assert c.plan_hash() != load_campaign(write(tmp_path, GOOD.replace("[5, 6]", "[5, 7]"))).plan_hash()


def test_every_planned_run_becomes_a_spec_before_anything_starts(tmp_path):
    c = load_campaign(write(tmp_path, GOOD))
    specs = plan_specs(c, load_inventory(None))
    assert [s.name for _, s in specs][:2] == ["ci-000", "ci-001"]
    assert specs[2][1].toggles == {"reregister_on_expiry": False} and (specs[0][1].seed, specs[4][1].seed) == (5, 6)
    short = load_campaign(write(tmp_path, GOOD.replace("time_limit = 10", "time_limit = 2")))
    with pytest.raises(CampaignError, match=r"c\.toml: run 000 \(isolate .*--time-limit"):
        plan_specs(short, load_inventory(None))


def test_the_shipped_nightly_campaign_loads():
    c = load_campaign(DEFAULT_CAMPAIGN)
    assert c.name == "nightly" and len(c.plan()) >= 4 and c.budget
    assert plan_specs(c, load_inventory(None))


@pytest.mark.parametrize(("text", "where"), [
    ("name = \"x\"\ntime_limit = \n", r"c\.toml:2: invalid TOML"),
    ("name = \"x\"\nbogus = 1\n", r"c\.toml:2: bogus: unknown key"),
    ("seeds = [1]\ntime_limit = \"ten\"\n", r"c\.toml:2: time_limit: expected a number of seconds in \(0, 86400\], got str 'ten'"),
    ("seeds = 0\n", r"c\.toml:1: seeds: a count: expected an integer of seeds in \[1, 10000\], got 0"),
    ("seeds = 10000000\n", r"c\.toml:1: seeds: a count: expected an integer of seeds in \[1, 10000\], got 10000000"),
    ("seeds = 100\nrepeats = 101\n", r"c\.toml:1: seeds: the plan is 10100 runs \(101 repeats x 100 seeds"),
    ("time_limit = nan\n", r"c\.toml:1: time_limit: expected a number of seconds in \(0, 86400\], got nan"),
    ("budget = inf\n", r"c\.toml:1: budget: expected a number of seconds in \(0, 2592000\], got inf"),
    ("interval = 1e-9\n", r"c\.toml:1: interval: expected a number of seconds in \[0.1, 86400\], got 1e-09"),
    ("margin_ms = 1" + "0" * 300 + "\n", r"c\.toml:1: margin_ms: expected an integer of ms in \[0, 3600000\], got 10+\.\.\."),
    ("seeds = [1, -1]\n", r"c\.toml:1: seeds: expected a count or a non-empty list of at most 10000 integers"),
    ("[matrix]\nworkloads = [[\"none\"]]\n", r"c\.toml:2: matrix\.workloads\[0\]: no workload \['none'\]"),
    ("\n[matrix]\nfaults = [\"isolate\", \"teleport\"]\n", r"c\.toml:3: matrix\.faults\[1\]: 'teleport': cannot package"),
    ("[matrix]\ntoggles = [{ nope = 1 }]\n", r"c\.toml:2: matrix\.toggles\[0\]: .*nope"),
    ("[matrix]\nworkloads = [\"tpcc\"]\n", r"c\.toml:2: matrix\.workloads\[0\]: no workload 'tpcc'"),
    ("[matrix]\nfaults = []\n", r"c\.toml:2: matrix\.faults: must not be empty"),
    ("[matrix]\ncolour = 1\n", r"c\.toml:2: matrix\.colour: unknown key"),
    ("[matrix]\nfaults = [\"schedule:missing.toml\"]\n", r"c\.toml:2: matrix\.faults\[0\]: .*no such schedule"),
    ("repeats = true\n", r"c\.toml:1: repeats: expected an integer in \[1, 10000\], got bool True"),
    ("seeds = 1\n[zookeeper]\nsync_limit = 0\n", r"c\.toml:3: zookeeper\.sync_limit: expected a positive integer"),
    ("[zookeeper]\njava = \"x\"\n", r"c\.toml:2: zookeeper\.java: unknown ZooKeeper setting"),
    ("zookeeper = 3\n", r"c\.toml:1: zookeeper: expected dict, got int"),
    ("[zookeeper]\nmin_session_timeout_ms = 9000\nmax_session_timeout_ms = 4000\n",
     r"c\.toml:2: zookeeper\.min_session_timeout_ms: 9000 is larger"),
    ("[matrix]\nfaults = [\n \"isolate\",\n { faults = \"slow_register\", zookeeper = { sync_limit = true } },\n]\n",
     r"c\.toml:4: matrix\.faults\[1\]\.zookeeper\.sync_limit: expected a positive integer"),
    ("[matrix]\nfaults = [\n { faults = \"slow_register\", zk = {} },\n]\n",
     r"c\.toml:3: matrix\.faults\[0\]: unknown key 'zk' in a fault set"),
    ("[matrix]\nfaults = [\n { zookeeper = { sync_limit = 9 } },\n]\n", r"c\.toml:2: matrix\.faults\[0\]: expected a string"),
    ("[matrix]\nfaults = [\n { faults = \"x\", zookeeper = 1 },\n]\n",
     r"c\.toml:3: matrix\.faults\[0\]\.zookeeper: expected a table"),
    ("[matrix]\nfaults = [\n \"kill\", { faults = \"kill\", zookeeper = { sync_limit = 9 } },\n]\n",
     r"c\.toml:3: matrix\.faults\[1\]: 'kill' is listed twice"),
])
def test_bad_campaign_files_are_one_line_errors_naming_file_line_and_key(tmp_path, text, where):
    p = write(tmp_path, text)
    with pytest.raises(CampaignError, match=where) as err:
        load_campaign(p)
    assert "\n" not in str(err.value) and str(err.value).startswith(str(p))


def test_the_command_exits_254_with_one_line(tmp_path, capsys):
    p = write(tmp_path, "name = \"x\"\nseeds = [\"a\"]\n")
    assert main(["campaign", str(p), "--store", str(tmp_path / "store")]) == 254
    err = capsys.readouterr().err.strip()
    assert err == (f"harness: {p}:2: seeds: expected a count or a non-empty list of at most 10000 integers in "
                   "[0, 9223372036854775807]")
    assert main(["campaign", str(tmp_path / "none.toml")]) == 254
    assert "cannot read campaign file" in capsys.readouterr().err
    assert not (tmp_path / "store").exists(), "nothing starts on a bad file"


def test_index_page_colours_the_matrix_and_links_every_report():
    run = {"key": "000", "label": "isolate · defaults · none · seed 1", "faults": "isolate", "toggles": {},
           "workload": "none", "seed": 1, "repeat": 0, "run_dir": "runs/c-000/T1", "valid": True, "anomalies": 0,
           "first_anomaly": "", "error": None, "wall_s": 30.0}
    bad = {**run, "key": "001", "toggles": {"reregister_on_expiry": False}, "run_dir": "runs/c-001/T2", "valid": False,
           "anomalies": 1, "first_anomaly": "[registration_liveness] broker 2 <never>", "label": "isolate · x"}
    state = {"name": "c", "file": "c.toml", "finished": False, "runs": {"000": run, "001": bad},
             "plan": [{"key": k, "label": k} for k in ("000", "001", "002")]}
    page = campaign_index(state)
    assert "2/3 runs done (in progress) · 1 valid · 1 invalid · 0 unknown" in page
    assert page.count('href="runs/c-000/T1/report.html"') == 2 and 'href="runs/c-001/T2/report.html"' in page
    assert "reregister_on_expiry=false" in page and "&lt;never&gt;" in page and "<i>not run</i>" in page
    assert 'id="matrix"' in page and "<script" not in page


def test_the_store_index_links_every_campaign(tmp_path):
    import json

    from harness.report.serve import index_page

    cdir = tmp_path / "campaigns" / "ci" / "20260101T000000.000"
    cdir.mkdir(parents=True)
    (cdir / "campaign.json").write_text(json.dumps({"name": "ci", "plan": [{}, {}], "runs": {"000": {"valid": False}}}))
    (cdir / "index.html").write_text("x")
    (tmp_path / "campaigns" / "ci" / "latest").symlink_to(cdir.name)
    page = index_page(tmp_path)
    assert page.count('href="/campaigns/ci/20260101T000000.000/index.html"') == 1
    assert "<td>1/2</td><td>1</td>" in page


def test_real_kafka_releases_are_a_matrix_axis_outside_toggles_and_workloads(tmp_path):
    c = load_campaign(write(tmp_path, 'name = "k"\nseeds = [3]\n[matrix]\nfaults = ["partition", "kill"]\n'
                                      'workloads = ["queue"]\nbrokers = ["kafka:2.8.2", "kafka:3.9.1"]\n'))
    plan = c.plan()
    assert [(p.brokers, p.faults) for p in plan] == [("kafka:2.8.2", "partition"), ("kafka:2.8.2", "kill"),
                                                      ("kafka:3.9.1", "partition"), ("kafka:3.9.1", "kill")]
    argv = plan[2].argv(c)
    assert argv[argv.index("--brokers") + 1] == "kafka:3.9.1" and "--margin-ms" not in argv  # real brokers' default
    assert plan[2].label.startswith("kafka:3.9.1 · partition")
    assert "--zk-socket" not in argv and "--zk-hosts" not in argv  # harness run's defaults
    netty = load_campaign(write(tmp_path, 'zk_socket = "netty"\nzk_hosts = 3\n[matrix]\nfaults = ["lost_connect"]\n'
                                          'brokers = ["kafka:3.9.1", "agents"]\n'))
    kafka_run, agents_run = netty.plan()
    assert kafka_run.argv(netty)[kafka_run.argv(netty).index("--zk-socket") + 1] == "netty"
    assert kafka_run.argv(netty)[kafka_run.argv(netty).index("--zk-hosts") + 1] == "3"
    assert "--zk-socket" not in agents_run.argv(netty)  # the agents' socket is a toggle
    assert netty.plan_hash() != load_campaign(write(tmp_path, '[matrix]\nfaults = ["lost_connect"]\n'
                                                              'brokers = ["kafka:3.9.1", "agents"]\n')).plan_hash()
    agents = load_campaign(write(tmp_path, 'margin_ms = 5000\n[matrix]\nfaults = ["kill"]\n'))
    assert agents.brokers == ("agents",) and "--brokers" not in agents.plan()[0].argv(agents)
    assert agents.plan()[0].argv(agents)[agents.plan()[0].argv(agents).index("--margin-ms") + 1] == "5000"


@pytest.mark.parametrize(("text", "says"), [
    ('[matrix]\nbrokers = ["kafka"]\n', r"c\.toml:2: matrix\.brokers\[0\]: expected 'agents' or 'kafka:VERSION'"),
    ('[matrix]\nbrokers = ["kafka:4.0.0"]\n', r"c\.toml:2: matrix\.brokers\[0\]: Kafka 4\.0\.0: 4\.0 and later have no"),
    ('[matrix]\nbrokers = [3]\n', r"c\.toml:2: matrix\.brokers\[0\]: expected 'agents' or 'kafka:VERSION'.*got 3"),
    ('[matrix]\nbrokers = []\n', r"c\.toml:2: matrix\.brokers: must not be empty"),
    ('[matrix]\nbrokers = ["kafka:3.9.1"]\ntoggles = [{ registration = "3x" }]\n',
     r"c\.toml:3: matrix\.toggles: agent toggles do not apply to real Kafka brokers"),
    ('zk_socket = "epoll"\n[matrix]\nbrokers = ["kafka:3.9.1"]\n', r"c\.toml:1: zk_socket: 'epoll': expected one of nio"),
    ('zk_hosts = 0\n[matrix]\nbrokers = ["kafka:3.9.1"]\n', r"c\.toml:1: zk_hosts: "),
    ('zk_socket = "netty"\n[matrix]\nbrokers = ["agents"]\n', r"c\.toml:1: zk_socket: only with real Kafka brokers"),
], ids=["not-kafka", "kraft", "not-a-string", "empty", "toggles", "socket", "hosts", "socket-on-agents"])
def test_bad_brokers_in_a_campaign_are_one_line_naming_file_line_and_key(tmp_path, text, says):
    with pytest.raises(CampaignError, match=says):
        load_campaign(write(tmp_path, text))
