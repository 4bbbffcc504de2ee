"""Campaign files: a matrix of runs (brokers × fault sets × toggle sets × workloads × seeds × repeats) in TOML.

```toml
name = "nightly"
time_limit = 20.0            # seconds of faults per run (recovery comes on top)
budget = 900                 # wall-clock seconds: no run starts after it (optional)
seeds = [1, 2]               # or a count: seeds = 3 → 1, 2, 3
repeats = 1

[matrix]
faults = ["isolate", "partition,kill", "schedule:schedules/x.toml",
          { faults = "revived_session", zookeeper = { sync_limit = 100 } }]
toggles = [{}, { reregister_on_expiry = false }]
workloads = ["none"]
brokers = ["agents"]         # or real Kafka releases: ["kafka:2.8.2", "kafka:3.9.1"] (`harness run --brokers`)

[zookeeper]                  # ensemble settings for every run, on top of the inventory's (optional)
tick_time_ms = 200
```

``faults``: ``isolate`` is `harness run`'s default (one broker cut from ZooKeeper for 2×T + 1 s),
a comma list is a seeded random package (`harness run --faults`), ``schedule:FILE`` a scripted
schedule (relative to the campaign file); a table ``{ faults = "...", zookeeper = { ... } }`` is a
fault set whose runs need other ZooKeeper settings (``harness.zkoverrides``: e.g. revived_session's
long ``sync_limit``), on top of the file's ``[zookeeper]`` table. ``brokers``: ``agents`` (the default) or
``kafka:VERSION``, each run's `harness run --brokers` (toggles then must be ``{}``; ``margin_ms``, when
not set, is `harness run`'s default for what runs: 3000 for agents, 30000 for real brokers); the
top-level ``zk_socket`` (``nio``, ``netty``) and ``zk_hosts`` (a count) are the real brokers' `harness run
--zk-socket`/`--zk-hosts` (KAFKA-14845 needs ``netty`` and 3). Runs with other settings than the
one before get a new cluster (a cold start), so such fault sets go last in the list. Validation is strict, like the inventory's: every error is
one line, ``file:line: …`` for bad TOML and ``file:line: key: why`` for a bad value.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent.config import ConfigError, parse_toggle_args
from base.bounds import (
    MAX_BUDGET_S,
    MAX_MS,
    MAX_NODES,
    MAX_PLAN_RUNS,
    MAX_SECONDS,
    MAX_SEED,
    MIN_INTERVAL_S,
    number_error,
    shown,
)
from base.errors import UsageError
from base.tomlfile import read_toml
from harness.spec import ZK_SOCKETS
from harness.zkoverrides import as_args, check_overrides

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CAMPAIGN = REPO_ROOT / "campaigns" / "nightly.toml"
TOP_KEYS = {"name", "inventory", "time_limit", "budget", "seeds", "repeats", "margin_ms", "interval", "zkproxy",
            "zk_socket", "zk_hosts",
            "matrix", "zookeeper"}
MATRIX_KEYS = {"faults", "toggles", "workloads", "brokers"}
AGENTS = "agents"  # matrix.brokers: the Python broker agents (else kafka:VERSION)


class CampaignError(UsageError):
    """A bad campaign file: one line naming the file and line, or the key."""


@dataclass(frozen=True)
class PlannedRun:
    key: str  # "003": the run's place in the plan, stable across restarts of the same plan
    faults: str
    toggles: dict[str, Any]
    workload: str
    seed: int
    repeat: int
    zookeeper: dict[str, Any] = field(default_factory=dict)  # ZooKeeper settings (harness.zkoverrides)
    brokers: str = AGENTS  # or kafka:VERSION

    def argv(self, campaign: Campaign) -> list[str]:
        """The `harness run` flags of this run."""
        out = ["--time-limit", str(campaign.time_limit), "--seed", str(self.seed), "--workload", self.workload,
               "--test", f"{campaign.name}-{self.key}"]
        if campaign.margin_ms is not None:
            out += ["--margin-ms", str(campaign.margin_ms)]
        if self.brokers != AGENTS:
            out += ["--brokers", self.brokers]
            if campaign.zk_socket is not None:
                out += ["--zk-socket", campaign.zk_socket]
            if campaign.zk_hosts is not None:
                out += ["--zk-hosts", str(campaign.zk_hosts)]
        if campaign.inventory:
            out += ["--inventory", campaign.inventory]
        if self.faults.startswith("schedule:"):
            out += ["--schedule", self.faults.removeprefix("schedule:")]
        elif self.faults != "isolate":
            out += ["--faults", self.faults, "--interval", str(campaign.interval)]
        if campaign.zkproxy:
            out.append("--zkproxy")
        out += as_args(self.zookeeper)
        for k, v in self.toggles.items():
            out += ["--toggle", f"{k}={str(v).lower() if isinstance(v, bool) else v}"]
        return out

    @property
    def label(self) -> str:
        toggles = ",".join(f"{k}={v}" for k, v in self.toggles.items()) or "defaults"
        # parentheses, not brackets: the label is printed through rich, which would take [..] for markup
        zk = f" (zk {','.join(f'{k}={v}' for k, v in sorted(self.zookeeper.items()))})" if self.zookeeper else ""
        brokers = "" if self.brokers == AGENTS else f"{self.brokers} · "
        return f"{brokers}{self.faults}{zk} · {toggles} · {self.workload} · seed {self.seed}" + (
            f" · repeat {self.repeat}" if self.repeat else "")


@dataclass(frozen=True)
class Campaign:
    path: str
    name: str
    time_limit: float
    seeds: tuple[int, ...]
    faults: tuple[str, ...]
    toggles: tuple[dict[str, Any], ...]
    workloads: tuple[str, ...]
    repeats: int = 1
    budget: float | None = None
    inventory: str | None = None
    margin_ms: int | None = None  # None: `harness run`'s default for what runs (agents or real brokers)
    interval: float = 5.0
    zkproxy: bool = False
    zookeeper: dict[str, Any] = field(default_factory=dict)  # every run's ZooKeeper settings
    fault_zookeeper: dict[str, dict[str, Any]] = field(default_factory=dict)  # fault set → its own settings
    brokers: tuple[str, ...] = (AGENTS,)
    zk_socket: str | None = None  # the real brokers' ZooKeeper client socket (None: `harness run`'s default)
    zk_hosts: int | None = None  # servers in the real brokers' zookeeper.connect (None: the whole ensemble)

    def zk_settings(self, faults: str) -> dict[str, Any]:
        """The ZooKeeper settings of a fault set's runs: the file's, then the fault set's own."""
        return {**self.zookeeper, **self.fault_zookeeper.get(faults, {})}

    def plan(self) -> tuple[PlannedRun, ...]:
        """Every run, in a fixed order: the whole matrix (brokers × toggles × workloads × faults) for
        the first seed, then for the next, then each repeat — so a budget that runs out cuts seeds and
        repeats, never a whole fault set, toggle set or release."""
        out = []
        combos = itertools.product(range(self.repeats), self.seeds, self.brokers, self.toggles, self.workloads,
                                   self.faults)
        for i, (r, s, b, t, w, f) in enumerate(combos):
            out.append(PlannedRun(f"{i:03d}", f, dict(t), w, s, r, self.zk_settings(f), b))
        return tuple(out)

    def plan_hash(self) -> str:
        """Identifies the plan: a restarted campaign resumes only a directory with the same one."""
        # a plan of agents hashes as before real brokers could be planned: its directories still resume
        runs = [{k: v for k, v in asdict(r).items() if k != "brokers" or v != AGENTS} for r in self.plan()]
        margin = 3000 if self.margin_ms is None else self.margin_ms  # the old default, so old hashes hold
        client = [self.zk_socket, self.zk_hosts] if (self.zk_socket, self.zk_hosts) != (None, None) else []
        data = json.dumps(runs + [self.time_limit, self.inventory, margin, self.interval, self.zkproxy] + client,
                          sort_keys=True)
        return hashlib.sha256(data.encode()).hexdigest()[:16]


def _line_of(text: str, key: str) -> int | None:
    """The first line that sets ``key`` (``key =`` or ``[key]``), for errors on a value."""
    for i, line in enumerate(text.splitlines(), 1):
        if re.match(rf"^\s*(\[\s*{re.escape(key)}\s*\]|{re.escape(key)}\s*=)", line):
            return i
    return None


def load_campaign(path: str | Path | None = None) -> Campaign:
    p = Path(path) if path else DEFAULT_CAMPAIGN
    data, text = read_toml(p, "campaign file", CampaignError)
    return parse_campaign(data, p, text)


def parse_campaign(data: dict[str, Any], p: Path, text: str = "") -> Campaign:
    def err(key: str, msg: str, line: int | None = None) -> CampaignError:
        line = line or _line_of(text, key.split(".")[-1].split("[")[0])
        return CampaignError(f"{p}:{line}: {key}: {msg}" if line else f"{p}: {key}: {msg}")

    def get(table: dict[str, Any], key: str, typ: type | tuple[type, ...], default: Any, where: str = "") -> Any:
        if key not in table:
            return default
        v = table[key]
        if (isinstance(v, bool) and typ is not bool and bool not in (typ if isinstance(typ, tuple) else (typ,))) \
                or not isinstance(v, typ):
            names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
            raise err(f"{where}{key}", f"expected {names}, got {type(v).__name__} {shown(v)}")
        return v

    for k in data:
        if k not in TOP_KEYS:
            raise err(k, f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    name = get(data, "name", str, p.stem)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise err("name", f"{shown(name)}: letters, digits, '.', '_' and '-' only")
    def number(key: str, default: Any, lo: float, hi: float, integer: bool = False, lo_open: bool = False,
               unit: str = "seconds") -> Any:
        v = data.get(key, default)
        if v is not None and (why := number_error(v, lo, hi, integer=integer, lo_open=lo_open, unit=unit)):
            raise err(key, why)
        return v

    time_limit = float(number("time_limit", 20.0, 0, MAX_SECONDS, lo_open=True))
    budget = number("budget", None, 0, MAX_BUDGET_S, lo_open=True)
    repeats = number("repeats", 1, 1, MAX_PLAN_RUNS, integer=True, unit="")
    margin_ms = number("margin_ms", None, 0, MAX_MS, integer=True, unit="ms")
    interval = float(number("interval", 5.0, MIN_INTERVAL_S, MAX_SECONDS))
    zkproxy = get(data, "zkproxy", bool, False)
    inventory = get(data, "inventory", str, None)
    if inventory is not None:
        inv = Path(inventory)
        inventory = str(inv if inv.is_absolute() or _exists(inv) else p.parent / inv)
    raw_seeds = get(data, "seeds", (int, list), [1])
    if isinstance(raw_seeds, int):
        if (why := number_error(raw_seeds, 1, MAX_PLAN_RUNS, integer=True, unit="seeds")) is not None:
            raise err("seeds", f"a count: {why}")
        seeds = tuple(range(1, raw_seeds + 1))
    else:
        if not raw_seeds or len(raw_seeds) > MAX_PLAN_RUNS or any(
                number_error(s, 0, MAX_SEED, integer=True) for s in raw_seeds):
            raise err("seeds", f"expected a count or a non-empty list of at most {MAX_PLAN_RUNS} integers in "
                               f"[0, {MAX_SEED}]")
        seeds = tuple(raw_seeds)

    matrix = get(data, "matrix", dict, {})
    for k in matrix:
        if k not in MATRIX_KEYS:
            raise err(f"matrix.{k}", f"unknown key (known: {', '.join(sorted(MATRIX_KEYS))})")
    zookeeper = _zookeeper(get(data, "zookeeper", dict, {}), "zookeeper", err)
    raw_faults = get(matrix, "faults", list, ["isolate"], "matrix.")
    fault_zookeeper = _fault_zookeeper(raw_faults, text, err)
    faults = tuple(_faults([v.get("faults") if isinstance(v, dict) else v for v in raw_faults], p, err))
    fault_zookeeper = {faults[i]: zk for i, zk in fault_zookeeper.items()}
    toggles = tuple(_toggles(get(matrix, "toggles", list, [{}], "matrix."), err))
    workloads = tuple(_workloads(get(matrix, "workloads", list, ["none"], "matrix."), err))
    brokers = tuple(_brokers(get(matrix, "brokers", list, [AGENTS], "matrix."), err))
    for key, values in (("matrix.faults", faults), ("matrix.toggles", toggles), ("matrix.workloads", workloads),
                        ("matrix.brokers", brokers)):
        if not values:
            raise err(key, "must not be empty")
    if any(b != AGENTS for b in brokers) and any(toggles):
        raise err("matrix.toggles", "agent toggles do not apply to real Kafka brokers (matrix.brokers): only {}")
    runs = repeats * len(seeds) * len(brokers) * len(toggles) * len(workloads) * len(faults)
    if runs > MAX_PLAN_RUNS:  # counted, never built: planning stays quick whatever the file says
        raise err("seeds" if "seeds" in data else "matrix", f"the plan is {runs} runs ({repeats} repeats x {len(seeds)} "
                  f"seeds x {len(brokers)} brokers x {len(toggles)} toggle sets x {len(workloads)} workloads x "
                  f"{len(faults)} fault sets), over the limit of {MAX_PLAN_RUNS}")
    zk_socket = get(data, "zk_socket", str, None)
    if zk_socket is not None and zk_socket not in ZK_SOCKETS:
        raise err("zk_socket", f"{shown(zk_socket)}: expected one of {', '.join(ZK_SOCKETS)}")
    zk_hosts = number("zk_hosts", None, 1, MAX_NODES, integer=True, unit="servers")
    for key, value in (("zk_socket", zk_socket), ("zk_hosts", zk_hosts)):
        if value is not None and all(b == AGENTS for b in brokers):
            raise err(key, "only with real Kafka brokers in matrix.brokers (the agents' socket is a toggle)")
    return Campaign(str(p), name, time_limit, seeds, faults, toggles, workloads, repeats, budget, inventory,
                    margin_ms, interval, zkproxy, zookeeper, fault_zookeeper, brokers, zk_socket, zk_hosts)


def _zookeeper(table: dict[str, Any], where: str, err: Any, line: int | None = None) -> dict[str, Any]:
    if (bad := check_overrides(table)) is not None:
        raise err(f"{where}.{bad[0]}", bad[1], line)
    return dict(table)


def _fault_zookeeper(values: list[Any], text: str, err: Any) -> dict[int, dict[str, Any]]:
    """The ``{ faults = "...", zookeeper = { ... } }`` entries of ``matrix.faults``: index → settings."""
    out: dict[int, dict[str, Any]] = {}
    seen: dict[str, dict[str, Any]] = {}
    for i, v in enumerate(values):
        if not isinstance(v, dict):
            if isinstance(v, str) and seen.setdefault(v.strip(), {}) != {}:
                raise err(f"matrix.faults[{i}]", f"{shown(v.strip())} is listed twice with different zookeeper settings")
            continue
        key = f"matrix.faults[{i}]"
        line = _line_with(text, f'"{v.get("faults")}"') if isinstance(v.get("faults"), str) else None
        if unknown := sorted(set(v) - {"faults", "zookeeper"}):
            raise err(key, f"unknown key {shown(unknown[0])} in a fault set (known: faults, zookeeper)", line)
        zk = v.get("zookeeper", {})
        if not isinstance(zk, dict):
            raise err(f"{key}.zookeeper", f"expected a table of ZooKeeper settings, got {shown(zk)}", line)
        zk = _zookeeper(zk, f"{key}.zookeeper", err, line)
        name = str(v.get("faults", "")).strip()
        if name in seen and seen[name] != zk:  # runs are told apart by their fault set
            raise err(key, f"{shown(name)} is listed twice with different zookeeper settings", line)
        seen[name] = zk
        out[i] = zk
    return out


def _exists(p: Path, file: bool = False) -> bool:
    """``p.exists()`` (``is_file()``), False for a path no file can have (too long, a NUL in it)."""
    try:
        return p.is_file() if file else p.exists()
    except (OSError, ValueError):
        return False


def _line_with(text: str, needle: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return None


def _faults(values: list[Any], p: Path, err: Any) -> list[str]:
    from nemesis.packages import PACKAGEABLE

    out = []
    for i, v in enumerate(values):
        key = f"matrix.faults[{i}]"
        if not isinstance(v, str) or not v.strip():
            raise err(key, f"expected a string, got {shown(v)}")
        v = v.strip()
        if v.startswith("schedule:"):
            f = Path(v.removeprefix("schedule:"))
            f = f if f.is_absolute() else p.parent / f
            if not _exists(f, file=True):
                raise err(key, f"{shown(v)}: no such schedule file {f}")
            out.append(f"schedule:{f}")
            continue
        if v == "isolate":
            out.append(v)
            continue
        names = [x.strip() for x in v.split(",") if x.strip()]
        unknown = [x for x in names if x not in PACKAGEABLE]
        if unknown or not names:
            raise err(key, f"{shown(v)}: cannot package {', '.join(unknown) or 'nothing'} (a comma list of "
                           f"{', '.join(PACKAGEABLE)}; or 'isolate' alone, harness run's default; "
                           "or 'schedule:FILE')")
        out.append(",".join(names))
    return out


def _toggles(values: list[Any], err: Any) -> list[dict[str, Any]]:
    out = []
    for i, v in enumerate(values):
        key = f"matrix.toggles[{i}]"
        if not isinstance(v, dict):
            raise err(key, f"expected a table of NAME = VALUE, got {shown(v)}")
        items = [f"{k}={str(x).lower() if isinstance(x, bool) else x}" for k, x in v.items()]
        try:
            parse_toggle_args(items, where=key)
        except ConfigError as e:
            raise err(key, str(e).removeprefix(f"{key} ").removeprefix(f"{key}: ")) from None
        out.append(dict(v))
    return out


def _workloads(values: list[Any], err: Any) -> list[str]:
    from workloads import WORKLOADS

    for i, v in enumerate(values):
        if not isinstance(v, str) or v not in WORKLOADS:
            raise err(f"matrix.workloads[{i}]", f"no workload {shown(v)} (known: {', '.join(WORKLOADS)})")
    return list(values)


def _brokers(values: list[Any], err: Any) -> list[str]:
    """``agents`` or ``kafka:VERSION`` (a version with ZooKeeper mode; its jars are fetched when the
    plan's runs are built, before the first starts)."""
    from base.components.kafka import parse_version, release_of

    out = []
    for i, v in enumerate(values):
        key = f"matrix.brokers[{i}]"
        if v == AGENTS:
            out.append(v)
            continue
        version = release_of(v) if isinstance(v, str) else None
        if version is None:
            raise err(key, f"expected {AGENTS!r} or 'kafka:VERSION' (e.g. kafka:3.9.1), got {shown(v)}")
        try:
            parse_version(version)
        except UsageError as e:
            raise err(key, str(e)) from None
        out.append(v)
    return out
