"""Generators of absurd inputs for ``bench/fuzz_inputs.py``: argv for a command's flags, and the
texts of schedules, campaigns, inventories and EDN histories — mostly well-formed files carrying
the values the issue names (nan, inf, 1e-9, integers of hundreds of digits, nesting thousands
deep, unhashable names, bad ``\\u`` escapes), the rest byte-level mutations of good ones."""

from __future__ import annotations

import math
import random
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

NUM_TEXTS = ("nan", "inf", "-inf", "NaN", "1e-9", "1e309", "-1", "0", "0.0", "-0", "1e999", "9" * 50, "9" * 400,
             "1" * 5000, "", " ", "abc", "0x10", "1_000", "\u0661\u0662", "5", "2.5", "10", "86400", "86401", "0.1",
             "0.09", "65535", "65536", "3600000", "2147483648", "1e6", "1000", "1001", "10000", "10001", "3", "2")
STR_TEXTS = (",", ",,", " , ", "partition,kill", "kill", "partition,,kill", "a" * 1000, "x\u202e", "../..", "\u20ac",
             "kafka:3.9.1", "kafka:", "kafka:x" + "9" * 400, "spark://h:" + "9" * 5000, "local[2]", "local[*]",
             "bogus://x", "sync_limit=100", "sync_limit=" + "9" * 400, "tick_time_ms=nan", "reregister_on_expiry=false",
             "x=y", "=", "none", "queue", "register", "stale_control", "isolate", "one-broker", "-", "--", "-x",
             "x" * 5000 + "/y", "/proc/nope/x", "a/b.toml", "KAFKA-14845", "start", "stop", "status", "nio", "netty")


def flag_argv(rng: random.Random, options: list[str], positionals: int) -> list[str]:
    """A few of ``options`` with values from the nasty pools (or random numbers), and positionals."""
    argv = [rng.choice(STR_TEXTS + NUM_TEXTS) for _ in range(min(positionals, rng.randint(0, 2)))]
    for _ in range(rng.randint(1, 4)):
        argv.append(rng.choice(options) if options else "--x")
        r = rng.random()
        if r < 0.4:
            argv.append(rng.choice(NUM_TEXTS))
        elif r < 0.7:
            argv.append(rng.choice(STR_TEXTS))
        elif r < 0.85:
            argv.append(repr(rng.uniform(-10, 100)) if rng.random() < 0.5 else str(rng.randint(-5, 20000)))
    return argv


# -- TOML ---------------------------------------------------------------------------------------
class Raw(str):
    """A TOML value written as is (``nan``, an integer of 400 digits, ``[[[[...]]]]``)."""


def toml_value(v: Any) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() and k.isascii() else toml_value(k)


def toml_doc(data: dict[str, Any]) -> str:
    """A TOML document: scalars, then ``[table]``s (one level of subtables) and ``[[array]]``s."""
    out: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    arrays: list[tuple[str, list[dict[str, Any]]]] = []
    for k, v in data.items():
        if isinstance(v, dict) and not isinstance(v, Raw):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            out.append(f"{_key(k)} = {toml_value(v)}")
    for name, t in tables:
        out.append(f"\n[{_key(name)}]")
        out += [f"{_key(k)} = {toml_value(v)}" for k, v in t.items()]
    for name, items in arrays:
        for t in items:
            out.append(f"\n[[{_key(name)}]]")
            out += [f"{_key(k)} = {toml_value(v)}" for k, v in t.items()]
    return "\n".join(out) + "\n"


def absurd(rng: random.Random) -> Any:
    """A value of the kinds the issue names."""
    return rng.choice([math.nan, math.inf, -math.inf, 1e-9, 1e300, -1, 0, Raw("9" * 400), Raw("1" * 4400),
                       Raw("[" * 3000 + "]" * 3000), ["x"], {"a": 1}, True, "", "x" * 300, 10**18, 2**63, -(2**63),
                       Raw("{a={b={c=1}}}"), Raw("[" * 50 + "1" + "]" * 50), "\u0000", 1.5])


def mutate(rng: random.Random, text: str) -> str:
    """Byte-level damage: a cut, a duplicated or deleted span, a stray structural character."""
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        j = min(len(text), i + rng.randint(0, 20))
        r = rng.random()
        if r < 0.3:
            text = text[:i] + rng.choice(list('[]{}"=\n,.\\u#\'') + ["\\u12", "\\uZZZZ", "\ud800"]) + text[i:]
        elif r < 0.55:
            text = text[:i] + text[j:]
        elif r < 0.8:
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i]
    return text


def pick(rng: random.Random, good: list[Any], p_absurd: float = 0.25) -> Any:
    return absurd(rng) if rng.random() < p_absurd else rng.choice(good)


# -- schedules ----------------------------------------------------------------------------------
def _params(rng: random.Random, fault: str, nodes: list[str], links: list[str]) -> dict[str, Any]:
    from nemesis.registry import CONTROL_KINDS, FAULTS
    from nemesis.zkproxy_faults import LOST_CONNECT_RULE

    spec = FAULTS.get(fault)
    out: dict[str, Any] = {}
    names = list(spec.params) if spec else ["latency_ms"]
    for k in rng.sample(names, rng.randint(0, len(names))) + (["bogus"] if rng.random() < 0.05 else []):
        good: list[Any] = {
            "links": [[rng.choice(links)], [rng.choice(links), "b1->zk-followers"], ["b9->zk1"], ["nope"], [], [1]],
            "rules": [[dict(LOST_CONNECT_RULE)], [{"action": "forward"}], [{"action": "teleport"}], [{}], [1],
                      [{"action": {"type": "delay", "delay_ms": math.nan}}], [{"match": {"op": ["x"]}, "action": "close"}]],
            "kind": [*CONTROL_KINDS, "agent-zk", "agent-agent", "Teleport"],
            "to": [*nodes, "b9", "one"], "topic": ["queue", "", "a b", "x" * 300],
            "partition": [0, 2, -1], "seed": [0, 7, -3],
        }.get(k, [*spec.choices.get(k, ())] if spec and k in spec.choices else [0, 50, 200.5, -5])
        out[k] = pick(rng, good or ["x"])
    return out


def random_schedule(rng: random.Random, nodes: list[str], links: list[str]) -> str:
    from nemesis.registry import FAULTS

    if rng.random() < 0.002:  # over the step limit
        return '[[step]]\nat = 1\nfault = "kill"\ntargets = "b1"\n' * 10_001
    steps = []
    for _ in range(rng.randint(0, 4)):
        fault = pick(rng, list(FAULTS) + ["nope"], 0.1)
        step: dict[str, Any] = {"at": pick(rng, [0, 1.5, 7, 30]), "fault": fault}
        if rng.random() < 0.3:
            step["phase"] = pick(rng, ["start", "stop", "middle"], 0.1)
        if rng.random() < 0.9:
            step["targets"] = pick(rng, ["one-broker", "minority-zk", "controller", "halves", "all-zk", *nodes,
                                         "zk9", ["b1", "zk2"], [], ["b9"], "one-zookeeper"], 0.15)
        if rng.random() < 0.3:
            step["duration"] = pick(rng, [1, 5.5, 20])
        if rng.random() < 0.2:
            step["seed"] = pick(rng, [0, 3, 2**40])
        if rng.random() < 0.6:
            step["params"] = _params(rng, fault if isinstance(fault, str) else "", nodes, links)
        if rng.random() < 0.03:
            step["colour"] = 1
        steps.append(step)
    doc: dict[str, Any] = {"step": steps} if steps else {}
    if rng.random() < 0.5:
        doc = {"name": pick(rng, ["s", "demo"], 0.1), **doc}
    text = toml_doc(doc)
    return mutate(rng, text) if rng.random() < 0.2 else text


# -- campaigns ----------------------------------------------------------------------------------
def random_campaign(rng: random.Random) -> str:
    keys: dict[str, list[Any]] = {
        "name": ["ci", "night-1", "a b"], "time_limit": [10, 20.5], "budget": [60, 900],
        "seeds": [1, 3, [1, 2], [], 10_000_000, [True], Raw("9" * 400)], "repeats": [1, 2, 5000],
        "margin_ms": [0, 3000], "interval": [1, 5, 0.5], "zkproxy": [True, False], "inventory": ["none.toml"],
        "zk_socket": ["netty", "nio", "epoll", 1], "zk_hosts": [1, 3, 0, 99, 2.5],
    }
    doc: dict[str, Any] = {k: pick(rng, v) for k, v in keys.items() if rng.random() < 0.5}
    if rng.random() < 0.7:
        matrix: dict[str, Any] = {}
        if rng.random() < 0.8:
            matrix["faults"] = pick(rng, [["isolate"], ["partition,kill"], [","], ["schedule:nope.toml"],
                                          ["isolate", {"faults": "kill", "zookeeper": {"sync_limit": 100}}],
                                          [{"faults": "kill", "zookeeper": {"sync_limit": math.nan}}],
                                          [["kill"]], ["stale_control,lost_connect"], []])
        if rng.random() < 0.5:
            matrix["toggles"] = pick(rng, [[{}], [{"reregister_on_expiry": False}], [{"nope": 1}], [1]])
        if rng.random() < 0.5:
            matrix["workloads"] = pick(rng, [["none"], ["queue", "register"], [["none"]], ["tpcc"]])
        if rng.random() < 0.3:
            matrix["brokers"] = pick(rng, [["agents"], ["kafka:3.9.1"], ["kafka:2.8.2", "agents"], ["kafka:4.0.0"],
                                           ["kafka"], ["kafka:1.1.1"], [3], []])
        if rng.random() < 0.05:
            matrix["colour"] = 1
        doc["matrix"] = matrix
    if rng.random() < 0.2:
        doc["zookeeper"] = {rng.choice(["sync_limit", "tick_time_ms", "java"]): pick(rng, [10, 200])}
    text = toml_doc(doc)
    return mutate(rng, text) if rng.random() < 0.2 else text


# -- inventories --------------------------------------------------------------------------------
_LOCAL = tomllib.loads((REPO / "inventory" / "local.toml").read_text())


def random_inventory(rng: random.Random) -> str:
    doc: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else [dict(n) for n in v] if isinstance(v, list) else v)
                           for k, v in _LOCAL.items()}
    doc["agents"] = {k: v for k, v in doc["agents"].items() if k != "toggles"}  # one level of tables
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if r < 0.5:
            table = rng.choice(["zookeeper", "agents", "ssh", "toxiproxy"])
            key = rng.choice([*doc.get(table, {}), "heap_mb", "port", "nope"])
            doc.setdefault(table, {})[key] = absurd(rng)
        elif r < 0.8:
            node = rng.choice(doc["nodes"])
            node[rng.choice(["name", "address", "roles", "broker_id", "ssh_port", "colour"])] = absurd(rng)
        elif r < 0.9:
            doc["nodes"] = doc["nodes"] * rng.choice([1, 20])
        else:
            doc[rng.choice(["name", "workdir_base", "bogus"])] = absurd(rng)
    text = toml_doc(doc)
    return mutate(rng, text) if rng.random() < 0.2 else text


# -- EDN ----------------------------------------------------------------------------------------
def _edn_atom(rng: random.Random) -> str:
    return rng.choice(["nil", "true", "false", ":ok", ":read", "foo/bar", "1", "-2", "3N", "1.5", "2e3", "1M",
                       '"s"', '"a\\nb"', '"\\u00e9"', '"\\uD83D\\uDE00"', "\\a", "\\newline", "\\u00e9",
                       '"[{#"', "#inst \"2020-01-01\"", "#_ 1 2"])


def _edn_form(rng: random.Random, depth: int) -> str:
    if depth > 4 or rng.random() < 0.4:
        return _edn_atom(rng)
    kind = rng.choice(["[]", "()", "{}", "#{}"])
    items = [_edn_form(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind == "{}":
        items = [f"{_edn_atom_key(rng, i)} {x}" for i, x in enumerate(items)]
    if kind == "#{}":
        items = [f":k{i}" for i in range(len(items))]
    return kind[:-1] + " ".join(items) + kind[-1]


def _edn_atom_key(rng: random.Random, i: int) -> str:
    return rng.choice([f":k{i}", f'"k{i}"', f"{i}"])


def edn_text(rng: random.Random) -> tuple[str, bool | None]:
    """(text, whether it is valid EDN: None when nobody can say, e.g. after random damage)."""
    forms = " ".join(_edn_form(rng, 0) for _ in range(rng.randint(1, 4)))
    r = rng.random()
    if r < 0.45:
        return forms, True
    if r < 0.55:
        return forms + rng.choice(['"\\uzz"', '"\\u12"', '"x\\u"']), False
    if r < 0.62:
        return rng.choice(["[", "(", "{", "#{"]) * rng.choice([1, 3, 5000]) + forms, False
    if r < 0.67:
        return forms + "{:a}", False
    if r < 0.72:
        return "[" + "1" * rng.choice([400, 5000]) + "]", None
    if r < 0.75:
        return "#_ " * 3000 + "1", None
    if r < 0.78:
        return '"\\uD800"', None
    return mutate(rng, forms), None
