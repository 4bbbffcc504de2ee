import json
import subprocess
import sys

import pytest

from agent.config import TOGGLE_HELP, AgentConfig, load_config
from harness.cli import build_parser, main


def test_help_lists_every_toggle_one_line_each(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["agent", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name in TOGGLE_HELP:
        lines = [ln for ln in out.splitlines() if ln.strip().startswith(f"{name}=")]
        assert len(lines) == 1, name


def test_agent_and_harness_print_the_same_toggle_lines(capsys):
    """One parser: `python -m agent --help` (the agent's own entry point) lists the same lines."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["agent", "--help"])
    harness_lines = [ln for ln in capsys.readouterr().out.splitlines() if "=" in ln and "(default" in ln]
    out = subprocess.run([sys.executable, "-m", "agent", "--help"], capture_output=True, text=True,
                         check=True).stdout
    agent_lines = [ln for ln in out.splitlines() if "=" in ln and "(default" in ln]
    assert len(harness_lines) == len(TOGGLE_HELP) and harness_lines == agent_lines


def test_help_names_the_jiras():
    text = " ".join(TOGGLE_HELP.values())
    for jira in ("KAFKA-14845", "KAFKA-6584", "KAFKA-7235", "KAFKA-9839", "KAFKA-6082", "KAFKA-14139"):
        assert jira in text


def _cfg(tmp_path, **over):
    d = {"broker_id": 1, "zk_connect": "127.0.0.1:1", "session_timeout_ms": 3000,
         "events_path": str(tmp_path / "e.jsonl"), "data_dir": str(tmp_path), **over}
    p = tmp_path / "a.json"
    p.write_text(json.dumps(d))
    return p


def test_toggle_overrides_config(tmp_path):
    p = _cfg(tmp_path, toggles={"registration": "pre_2_2"})
    cfg = load_config(str(p), ["broker_epoch_check=off", "max_broker_epoch=on"])
    assert cfg.toggles.registration == "pre_2_2"
    assert cfg.toggles.broker_epoch_check == "off" and cfg.toggles.max_broker_epoch is True
    assert AgentConfig.from_dict(cfg.to_dict()).toggles == cfg.toggles


def test_bad_toggle_is_bad_input(tmp_path, capsys):
    p = _cfg(tmp_path)
    assert main(["agent", "--config", str(p), "--toggle", "broker_epoch_check=maybe"]) == 254
    assert "broker_epoch_check" in capsys.readouterr().err
    assert main(["agent", "--config", str(tmp_path / "missing.json")]) == 254


def test_harness_agent_becomes_python_m_agent(tmp_path, monkeypatch):
    """A valid config: the harness process execs the agent's own entry point with the same arguments."""
    p = _cfg(tmp_path)
    calls = []
    monkeypatch.setattr("os.execv", lambda path, argv: calls.append((path, argv)))
    assert main(["agent", "--config", str(p), "--toggle", "max_broker_epoch=on"]) == 0
    assert calls == [(sys.executable, [sys.executable, "-m", "agent", "--config", str(p),
                                       "--toggle", "max_broker_epoch=on"])]


def test_python_m_agent_rejects_bad_input(tmp_path):
    p = _cfg(tmp_path)
    bad = subprocess.run([sys.executable, "-m", "agent", "--config", str(p), "--toggle", "registration=4x"],
                         capture_output=True, text=True)
    assert bad.returncode == 254 and "registration" in bad.stderr
    missing = subprocess.run([sys.executable, "-m", "agent", "--config", str(tmp_path / "none.json")],
                             capture_output=True, text=True)
    assert missing.returncode == 254 and "none.json" in missing.stderr
