"""The broker agent as a component: its code bundle, its config file, its process on a broker node.

The control node talks to an agent only through its config file (``agent.config``), its wire
protocol (``agent.client``) and the events it writes; the bundle shipped to the node is
``AGENT_PACKAGES`` and nothing else.
"""

from __future__ import annotations

import json
import shlex
import tarfile
from collections.abc import Callable
from pathlib import Path

from agent.config import AgentConfig
from base.components.process import RemoteProcess
from base.inventory import NodeSpec
from base.remote import Remote
from base.wait import wait_until
from history import Event, read_events

REPO_ROOT = Path(__file__).resolve().parents[2]
AGENT_PACKAGES = ("agent", "zkwire", "history")  # the whole bundle a broker node gets


def build_agent_bundle(path: Path) -> Path:
    """Tar the agent's packages (no caches) into ``path``: exactly what is shipped."""
    with tarfile.open(path, "w:gz") as tar:
        for pkg in AGENT_PACKAGES:
            tar.add(REPO_ROOT / pkg, arcname=pkg, filter=lambda ti: None if "__pycache__" in ti.name else ti)
    return path


class AgentProcess(RemoteProcess):
    """One broker agent on its node (a Component)."""

    role = "agent"

    def __init__(self, node: NodeSpec, remote: Remote, workdir: str, python: str, peek_dir: Path,
                 on_start: Callable[[AgentProcess], None] = lambda agent: None, deps_dir: str = "") -> None:
        """``deps_dir``: the agents' Python dependencies unpacked by `harness setup` (if any)."""
        assert node.broker_id is not None
        super().__init__(node.name, remote, workdir, f"{workdir}/agent.pid", f"{workdir}/agent.log")
        self.node = node
        self.broker_id = node.broker_id
        self.python = python
        self.deps_dir = deps_dir
        self.peek_dir = peek_dir
        self.on_start = on_start  # records the pid file for `harness teardown` before the process exists
        self.config: AgentConfig | None = None

    @property
    def config_path(self) -> str:
        return f"{self.workdir}/agent.json"

    @property
    def events_path(self) -> str:
        return f"{self.workdir}/events.jsonl"

    @property
    def data_dir(self) -> str:
        return f"{self.workdir}/data"

    def install(self, bundle: Path) -> None:
        """Ship the bundle and unpack it as the node's code directory."""
        wd = shlex.quote(self.workdir)
        self.remote.put(bundle, f"{self.workdir}/agent-code.tar.gz")
        self.remote.run(f"rm -rf {wd}/code && mkdir -p {wd}/code && tar -xzf {wd}/agent-code.tar.gz -C {wd}/code",
                        check=True)

    def write_config(self, cfg: AgentConfig) -> None:
        self.config = cfg
        text = json.dumps(cfg.to_dict(), indent=1)
        self.remote.run(f"mkdir -p {shlex.quote(self.data_dir)} && printf %s {shlex.quote(text)} > "
                        f"{shlex.quote(self.config_path)}", check=True)

    def command(self) -> tuple[str, dict[str, str] | None]:
        return (f"{shlex.quote(self.python)} -m agent --config {shlex.quote(self.config_path)}",
                {"PYTHONPATH": ":".join(filter(None, (f"{self.workdir}/code", self.deps_dir))),
                 "PYTHONUNBUFFERED": "1"})

    def start(self) -> None:
        self.on_start(self)
        super().start()

    def wipe(self) -> None:
        """Empty the agent's data directory (its replica logs): a broker with a new, empty disk."""
        self.remote.run(f"rm -rf {shlex.quote(self.data_dir)} && mkdir -p {shlex.quote(self.data_dir)}", check=True)

    def collect_events(self, dest: Path) -> Path | None:
        return self.download(self.events_path, dest / f"agent-{self.broker_id}.jsonl")

    def events(self) -> list[Event]:
        """Download and parse this agent's events so far."""
        local = self.collect_events(self.peek_dir)
        return list(read_events(local)) if local is not None else []

    def wait_for(self, pred: Callable[[Event], bool], timeout: float, poll: float = 0.2) -> Event | None:
        return wait_until(lambda: next((ev for ev in self.events() if pred(ev)), None), timeout, poll)
