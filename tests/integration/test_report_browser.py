"""The run report as a person sees it: one real run (the engine writes report.html), the store served
by `harness serve` on loopback, each page opened in headless Chromium (Debian's chromium and
chromium-driver, driven by selenium), and a campaign's index (a campaign directory made from that
run). Fails on a JavaScript console error or a plot without points; screenshots go to the test's tmp
dir and, for review, /tmp/zkfence-report*.png and /tmp/zkfence-campaign.png. Every process it
starts (harness serve, chromedriver, Chromium and its helpers) must be gone at the end, and so must
the directories Chromium makes in TMPDIR (its singleton socket's survived driver.quit() in /tmp).

One run serves the whole module. A second run directory is that run's copy with synthetic client
operations added (no client workload ships yet), so the latency and throughput plots are exercised
too; its report is not written, so the server renders it on request.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runs import run_test

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
REVIEW = Path("/tmp")

# Every plotly div: its traces and how many points each has; the timeline's shapes (the bands).
PLOTS_JS = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => ({
  id: gd.id,
  traces: (gd.data || []).map(t => Math.max((t.x || []).length, (t.y || []).length)),
  shapes: ((gd.layout || {}).shapes || []).length,
  svg: gd.querySelectorAll('.main-svg').length,
}));
"""


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc: chromedriver's Chromium and its helpers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _reap(pids: set[int], timeout: float = 10.0) -> set[int]:
    """Wait for ``pids`` to end; SIGKILL and return those still alive after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    left = {p for p in pids if _alive(p)}
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def _client_events(run: str, t0: float) -> list[dict]:
    """Two clients sending and polling through the run, then a final read: ok, fail and info."""
    out, seq = [], 0
    for k in range(40):
        for process, f in ((0, "send"), (1, "poll")):
            t = t0 + 0.25 * k + 0.05 * process
            done = "ok" if k % 9 else ("fail" if process == 0 else "info")
            for typ, tt in (("invoke", t), (done, t + 0.004 + 0.002 * (k % 5))):
                seq += 1
                out.append({"run": run, "src": "client", "seq": seq, "t_wall": tt, "t_mono": int(tt * 1e9),
                            "type": typ, "f": f, "process": process, "value": {"topic": "t", "partition": 0}})
    for typ, tt in (("invoke", t0 + 10.5), ("ok", t0 + 10.7)):
        seq += 1
        out.append({"run": run, "src": "client", "seq": seq, "t_wall": tt, "t_mono": int(tt * 1e9), "type": typ,
                    "f": "final_read", "process": 0, "value": {"topic": "t", "partition": 0}})
    return out


def _with_clients(run_dir: Path, dest: Path) -> Path:
    shutil.copytree(run_dir, dest)
    (dest / "report.html").unlink()
    lines = [json.loads(x) for x in (dest / "history.jsonl").read_text().splitlines() if x.strip()]
    start = next(e["t_wall"] for e in lines if e["f"] == "run_start")
    merged = sorted(lines + _client_events(lines[0]["run"], start + 0.5), key=lambda e: e["t_wall"])
    for i, e in enumerate(merged):
        e["index"], e["id"] = i, f"{e['src']}/{e['seq']}"
    (dest / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in merged))
    results = json.loads((dest / "results.json").read_text())  # one anomaly, to show a cited event in context
    results["anomalies"] = [{"checker": "synthetic", "message": "a test anomaly citing the isolation",
                             "event_ids": ["nemesis/3"], "broker": 2}]
    (dest / "results.json").write_text(json.dumps(results))
    return dest


@pytest.fixture(scope="module")
def store(tmp_path_factory, warm_engine) -> Path:
    store = tmp_path_factory.mktemp("store")
    outcome = run_test(store, "--time-limit", "10", "--target", "1", "--seed", "7", engine=warm_engine)
    assert (outcome.run_dir / "report.html").exists(), "the engine writes report.html after results.json"
    clients = _with_clients(outcome.run_dir, store / "report-with-clients" / outcome.run_dir.name)
    _campaign(store / "campaigns" / "ci" / "20260101T000000.000", {"000": outcome.run_dir, "001": clients})
    return store


def _campaign(cdir: Path, runs: dict[str, Path]) -> Path:
    """A campaign directory holding copies of ``runs``, its index and JUnit XML written by the campaign code."""
    from harness.commands.campaign import write_outputs

    state: dict = {"name": "ci", "file": "ci.toml", "plan_hash": "x", "finished": True, "runs": {},
                   "plan": [{"key": k, "label": k} for k in (*runs, "002")]}
    for key, src in runs.items():
        dest = cdir / "runs" / f"ci-{key}" / src.name
        shutil.copytree(src, dest)
        results = json.loads((dest / "results.json").read_text())
        valid = False if results.get("anomalies") else results["valid"]
        state["runs"][key] = {"key": key, "label": f"isolate · defaults · none · seed {key}", "faults": "isolate",
                              "toggles": {} if key == "000" else {"reregister_on_expiry": False}, "workload": "none",
                              "seed": int(key), "repeat": 0, "run_dir": dest.relative_to(cdir).as_posix(),
                              "valid": valid, "anomalies": len(results.get("anomalies") or []),
                              "first_anomaly": "", "error": None, "wall_s": 1.0}
    write_outputs(cdir, state)
    return cdir


@pytest.fixture(scope="module")
def server(store) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "serve", str(store)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        line = proc.stdout.readline()
        assert " at http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        yield line.split(" at ")[1].split()[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        assert proc.returncode == 0, proc.stderr.read()
        try:
            os.killpg(proc.pid, 0)
            pytest.fail(f"harness serve left processes in its group {proc.pid}")
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("headless Chromium is missing: make apt (APT_PACKAGES has chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    shared_tmp = Path(tempfile.gettempdir())
    before = _chromium_dirs(shared_tmp)
    with tempfile.TemporaryDirectory(prefix="zkfence-chromium-") as own_tmp:  # removed after quit, or on failure
        opts.add_argument(f"--user-data-dir={own_tmp}/profile")
        service = Service(CHROMEDRIVER, env={**os.environ, "TMPDIR": own_tmp})
        driver = webdriver.Chrome(service=service, options=opts)
        started = {service.process.pid} | _descendants(service.process.pid)  # chromedriver, Chromium, helpers
        try:
            driver.set_page_load_timeout(60)
            yield driver
        finally:
            started |= _descendants(service.process.pid)
            driver.quit()
            left = _reap(started)
    assert not left, f"chromedriver/Chromium processes outlived driver.quit() (killed): {sorted(left)}"
    strays = _chromium_dirs(shared_tmp) - before
    assert not strays, f"Chromium left directories in {shared_tmp} despite TMPDIR: {sorted(strays)}"


def _chromium_dirs(tmp: Path) -> set[Path]:
    return set(tmp.glob("org.chromium.*")) | set(tmp.glob(".org.chromium.*"))


def _open(driver, url: str) -> list[dict]:
    """Load ``url``; return its console errors."""
    driver.get("about:blank")
    driver.get_log("browser")  # drop anything from before
    driver.get(url)
    deadline = time.monotonic() + 30
    while driver.execute_script("return document.readyState") != "complete" and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # plotly draws after load
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def _screenshot(driver, dest: Path, review: Path) -> None:
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(int(height) + 40, 800), 6000))
    time.sleep(0.5)
    driver.save_screenshot(str(dest))
    shutil.copyfile(dest, review)
    driver.set_window_size(1400, 1000)
    assert dest.stat().st_size > 10_000


def _check_plots(driver, need: set[str]) -> list[dict]:
    plots = driver.execute_script(PLOTS_JS)
    ids = {p["id"] for p in plots}
    assert need <= ids, f"missing plots {need - ids}: {plots}"
    for p in plots:
        assert p["svg"] > 0, f"plot {p['id']} was not drawn"
        assert p["traces"] and any(n > 0 for n in p["traces"]), f"plot {p['id']} is empty: {p}"
    return plots


def test_index_lists_every_run_with_a_link_to_its_report(server, browser):
    assert _open(browser, server) == []
    text = browser.find_element("tag name", "body").text
    assert "isolate-broker" in text and "4 runs" in text  # the run, its copy with clients, the campaign's two
    links = [h for h in (a.get_attribute("href") for a in browser.find_elements("css selector", "a")) if h]
    reports = [h for h in links if h.endswith("/report.html")]
    assert len(reports) == 4 and sum("/report-with-clients/" in h for h in reports) == 1, reports
    assert [h for h in links if h.endswith("/index.html")] == [server + "campaigns/ci/20260101T000000.000/index.html"]


def test_run_report_shows_bands_lanes_and_logs_without_js_errors(server, browser, store, tmp_path):
    url = server + "isolate-broker/latest/report.html"
    assert _open(browser, url) == []
    plots = {p["id"]: p for p in _check_plots(browser, {"timeline", "epochs"})}
    assert plots["timeline"]["shapes"] >= 1, "the isolation must show as a band on the timeline"
    body = browser.find_element("tag name", "body").text
    assert "isolate" in body and "No client operations in this run" in body
    logs = [a.get_attribute("href") for a in browser.find_elements("css selector", "a[href^='logs/']")]
    assert any(h.endswith("zookeeper.log") for h in logs)
    _screenshot(browser, tmp_path / "report.png", REVIEW / "zkfence-report.png")


def test_report_rendered_on_request_shows_client_latency_and_throughput(server, browser, store, tmp_path):
    run = next((store / "report-with-clients").iterdir())
    assert _open(browser, f"{server}report-with-clients/{run.name}/report.html") == []
    plots = {p["id"]: p for p in _check_plots(browser, {"timeline", "epochs", "latency", "throughput"})}
    assert plots["latency"]["shapes"] >= 1, "the latency plot carries the same bands"
    assert not (run / "report.html").exists(), "serve is read-only: the report is rendered in memory"
    cited = browser.find_elements("css selector", "tr.cited")
    assert cited and "nemesis/3" in cited[0].text, "the anomaly's cited event is shown in context"
    _screenshot(browser, tmp_path / "report-clients.png", REVIEW / "zkfence-report-clients.png")


def test_campaign_index_shows_the_matrix_by_verdict_and_links_reports(server, browser, tmp_path):
    assert _open(browser, server + "campaigns/ci/20260101T000000.000/index.html") == []
    body = browser.find_element("tag name", "body").text
    assert "2/3 runs done (finished) · 1 valid · 1 invalid" in body and "not run" in body
    cells = browser.find_elements("css selector", "#matrix a.run .verdict")
    colours = sorted(c.value_of_css_property("background-color") for c in cells)
    assert len(cells) == 2 and colours[0] != colours[1], colours  # green and red
    junit = browser.find_element("link text", "junit.xml").get_attribute("href")
    with urllib.request.urlopen(junit, timeout=10) as r:
        assert b"<testsuite" in r.read()
    _screenshot(browser, tmp_path / "campaign.png", REVIEW / "zkfence-campaign.png")
    report = browser.find_elements("css selector", "#matrix a.run")[0].get_attribute("href")
    assert _open(browser, report) == []
    _check_plots(browser, {"timeline", "epochs"})


def test_server_refuses_paths_outside_the_store_and_writes(server):
    for path in ("../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd"):
        try:
            with urllib.request.urlopen(server + path, timeout=10) as r:
                assert b"root:" not in r.read()
        except urllib.error.HTTPError as e:
            assert e.code in (403, 404)
    req = urllib.request.Request(server + "x.txt", data=b"x", method="PUT")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code in (405, 501)
