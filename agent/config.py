"""The agent's configuration contract: the config file schema, the bug toggles, and the command line
that names them (``--config FILE [--toggle NAME=VALUE ...]``).

Public to the control node: the harness writes ``AgentConfig`` files and validates toggles with it,
and ``harness agent`` builds its parser with ``add_arguments``, the same function the agent's own
entry point (``python -m agent``) uses. Defaults mirror Kafka 3.7 in ZooKeeper mode ("today's
behaviour"); each other value brings back a historic bug. ``toggle_epilog`` prints every toggle on
one line with its values, its default and the JIRA it brings back.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

TOGGLE_CHOICES: dict[str, tuple[Any, ...]] = {
    "registration": ("3x", "pre_2_2", "retry14845"),
    "pipeline_on_connect": (False, True),
    "broker_epoch_check": ("on", "off", "strict"),
    "controller_fencing": ("on", "off"),
    "isr_epoch_check": ("off", "kip903"),
    "max_broker_epoch": (False, True),
    "preferred_controller": (False, True),
    "reregister_on_expiry": (True, False),
}

TOGGLE_HELP: dict[str, str] = {
    "registration": "3x: Kafka 3.x CheckedEphemeral (fails when owner not in {current, recorded}: KAFKA-14845); "
    "pre_2_2: fail on any foreign owner (KAFKA-6584); retry14845: apache/kafka PR #13558 (closed unmerged): 5 attempts in all, 4 backoffs of (T+1s)/5",
    "pipeline_on_connect": "true: write the registration multi right behind the ConnectRequest like the Java Netty "
    "client, through the project's wire codec; a lost ConnectResponse leaves an orphan owner (KAFKA-14845)",
    "broker_epoch_check": "on: KIP-380 fencing, reject broker_epoch < own with STALE_BROKER_EPOCH 77; "
    "off: ignore epochs and miss bounces (KAFKA-7235); strict: 2.2-2.5.0, also error on > (pre KAFKA-9839)",
    "controller_fencing": "on: every controller ZK write is multi[check /controller_epoch version, op]; "
    "off: unfenced writes (KAFKA-6082)",
    "isr_epoch_check": "off: ZK controller checks only liveness for ISR additions (KAFKA-14139); "
    "kip903: reject stale NewIsrWithEpochs entries with INELIGIBLE_REPLICA 107",
    "max_broker_epoch": "true: one shared control payload fenced by the cluster-wide max broker epoch "
    "(cached UpdateMetadata, LinkedIn KAFKA-7186)",
    "preferred_controller": "true: KIP-39 (KAFKA-1778, never shipped) /admin/next_controller pinning: the named broker "
    "creates the ready_to_serve ephemeral, the controller resigns, others stay out of elections",
    "reregister_on_expiry": "false: never re-register after the session is lost (a deliberately broken agent "
    "that the registration_liveness checker must catch)",
}


class ConfigError(ValueError):
    """Bad agent configuration: names the key."""


@dataclass(slots=True)
class Toggles:
    registration: str = "3x"
    pipeline_on_connect: bool = False
    broker_epoch_check: str = "on"
    controller_fencing: str = "on"
    isr_epoch_check: str = "off"
    max_broker_epoch: bool = False
    preferred_controller: bool = False
    reregister_on_expiry: bool = True

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "toggles") -> Toggles:
        known = {f.name for f in fields(cls)}
        for key, value in d.items():
            if key not in known:
                raise ConfigError(f"{where}.{key}: unknown toggle (known: {', '.join(sorted(known))})")
            choices = TOGGLE_CHOICES[key]
            value = parse_toggle_value(key, value)
            if value not in choices:
                raise ConfigError(f"{where}.{key}: {value!r} is not one of {', '.join(map(str, choices))}")
            d = {**d, key: value}
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_toggle_value(key: str, value: Any) -> Any:
    """Accept CLI strings ("on", "true", "off", "false") for boolean toggles."""
    if isinstance(TOGGLE_CHOICES[key][0], bool) and isinstance(value, str):
        lowered = value.lower()
        if lowered in ("true", "on", "1", "yes"):
            return True
        if lowered in ("false", "off", "0", "no"):
            return False
    return value


def parse_toggle_args(items: list[str], where: str = "--toggle") -> dict[str, Any]:
    """``["registration=pre_2_2", "max_broker_epoch=on"]`` → validated dict."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{where} {item!r}: expected NAME=VALUE")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    Toggles.from_dict(out, where=where)
    return {k: parse_toggle_value(k, v) for k, v in out.items()}


@dataclass(slots=True)
class AgentConfig:
    broker_id: int
    zk_connect: str
    session_timeout_ms: int
    events_path: str
    data_dir: str
    run: str = ""
    host: str = "127.0.0.1"
    listen_host: str = "127.0.0.1"
    port: int = 0
    # broker id → "host:port" the agent dials for the control plane (through Toxiproxy)
    peers: dict[int, str] = field(default_factory=dict)
    # ZooKeeper servers behind the agent's proxies, for the pipelining session (host:port list)
    zk_pipeline_connect: str = ""
    toggles: Toggles = field(default_factory=Toggles)
    extra: dict[str, Any] = field(default_factory=dict)
    # Per-run secret every control-plane request must carry (agent.net); "" = no check, for agents
    # a test starts by hand. Never written to events or logs.
    control_token: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AgentConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"unknown agent config key(s): {', '.join(sorted(unknown))}")
        for req in ("broker_id", "zk_connect", "session_timeout_ms", "events_path", "data_dir"):
            if req not in d:
                raise ConfigError(f"agent config: missing {req}")
        d = dict(d)
        d["toggles"] = Toggles.from_dict(d.get("toggles") or {})
        d["peers"] = {int(k): v for k, v in (d.get("peers") or {}).items()}
        return cls(**d)

    @classmethod
    def load(cls, path: str | Path) -> AgentConfig:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}:{e.lineno}: {e.msg}") from e

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["peers"] = {str(k): v for k, v in self.peers.items()}
        return d


def load_config(path: str | Path, toggle_args: list[str] | None = None) -> AgentConfig:
    """The config file with ``--toggle`` overrides applied. Raises ConfigError for a bad file,
    an unreadable one or a bad toggle."""
    try:
        cfg = AgentConfig.load(path)
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror or e}") from e
    if toggle_args:
        cfg.toggles = Toggles.from_dict({**cfg.toggles.to_dict(), **parse_toggle_args(toggle_args)})
    return cfg


# -- the command line --------------------------------------------------------------------------


def toggle_epilog() -> str:
    defaults = Toggles().to_dict()
    lines = ["toggles (--toggle NAME=VALUE; defaults = Kafka 3.7 ZK mode):"]
    for name, help_text in TOGGLE_HELP.items():
        values = "|".join(str(v).lower() for v in TOGGLE_CHOICES[name])
        lines.append(f"  {name}={values} (default {str(defaults[name]).lower()}): {help_text}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The agent's command line on ``parser``: ``--config``, ``--toggle`` and the toggle list as the
    epilog (printed verbatim, one toggle per line)."""
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="agent config JSON (written by the harness)")
    parser.add_argument("--toggle", action="append", default=[], metavar="NAME=VALUE",
                        help="override one toggle of the config file (repeatable)")
    parser.epilog = toggle_epilog()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser
