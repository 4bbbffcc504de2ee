"""Side by side: the same scenario told with the Python agents and with real Kafka brokers
(`harness repro ID --compare kafka:VERSION`). Pure: it reads two runs' results and histories (as
plain dicts) and returns rows; the command prints them as a table.

The rows are what a reader compares: each checker's verdict, whether the run showed what was
expected, and the key facts of the story from the history, the same for both variants because the
broker's events have the same kinds whoever wrote them (an agent, or a Kafka log parsed by
``base.kafkalog``): each broker's registrations and refusals, the sessions ZooKeeper created
whose reply the wire proxy dropped, ZooKeeper's final word on each ``/brokers/ids/N``, the brokers
live at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scenarios.timeline import hx

Event = dict[str, Any]


@dataclass
class Side:
    """One variant's outcome: its label (``agents``, ``kafka 3.9.1``), checker verdicts, whether it
    matched the expectation, a run error, and its history's events."""

    label: str
    verdicts: dict[str, Any]
    matched: bool
    reproduced: bool
    error: str | None = None
    events: list[Event] = field(default_factory=list)


def _verdict(v: Any) -> str:
    return "valid" if v is True else "INVALID" if v is False else "unknown"


def story_facts(events: Iterable[Event]) -> dict[str, str]:
    """Key facts of a run, by row name, from its history (events as dicts)."""
    evs = list(events)
    facts: dict[str, str] = {}
    orphans = [e["value"].get("session_id") for e in evs
               if e["src"] == "zkproxy" and e["f"] == "session_established" and not e["value"].get("forwarded_to_client")]
    facts["sessions whose reply was dropped"] = ", ".join(hx(s) for s in orphans) or "none"
    brokers = sorted({int(e["src"].split(":", 1)[1]) for e in evs if e["src"].startswith("agent:")})
    for b in brokers:
        regs = []
        for e in evs:
            if e["src"] != f"agent:{b}" or e["f"] != "register" or e["type"] not in ("ok", "fail"):
                continue
            v = e["value"]
            if e["type"] == "ok":
                regs.append(f"ok epoch {v.get('epoch')}")
            else:
                owner = v.get("owner")
                tag = " (a dropped-reply session)" if owner is not None and owner in orphans else ""
                regs.append(f"{v.get('error')} owner {hx(owner)}{tag}")
        facts[f"broker {b} registrations"] = "; ".join(regs) or "none"
    finals = {e["value"].get("broker_id"): e["value"] for e in evs
              if e["src"] == "observer" and e["f"] == "broker_znode" and e["value"].get("final")}
    for b in sorted(finals):
        v = finals[b]
        facts[f"final /brokers/ids/{b}"] = f"owner {hx(v.get('owner'))}" if v.get("exists") else "absent"
    ends = [e for e in evs if e["f"] == "run_end"]
    facts["live brokers at the end"] = str(ends[-1]["value"].get("live_brokers")) if ends else "-"
    return facts


def compare_rows(a: Side, b: Side) -> list[tuple[str, str, str]]:
    """(row, a's value, b's value): verdicts, the outcome, then the story's facts."""
    rows = [(f"checker {name}", _verdict(a.verdicts.get(name, "unknown")), _verdict(b.verdicts.get(name, "unknown")))
            for name in dict.fromkeys([*a.verdicts, *b.verdicts])]
    rows.append(("reproduced", "yes" if a.reproduced else "no", "yes" if b.reproduced else "no"))
    rows.append(("as expected", "yes" if a.matched else "NO", "yes" if b.matched else "NO"))
    if a.error or b.error:
        rows.append(("run error", a.error or "-", b.error or "-"))
    fa, fb = story_facts(a.events), story_facts(b.events)
    rows += [(k, fa.get(k, "-"), fb.get(k, "-")) for k in dict.fromkeys([*fa, *fb])]
    return rows


def same_verdict(a: Side, b: Side) -> bool:
    """Both variants reached the same verdict from every checker both judge by, and share one: a
    story may judge its real-broker run by fewer checkers (``Scenario.kafka_checkers``, said apart
    by ``judged_by_one``); a side whose run judged nothing (an error) never agrees."""
    shared = set(a.verdicts) & set(b.verdicts)
    return bool(shared) and all(a.verdicts[n] == b.verdicts[n] for n in shared)


def judged_by_one(a: Side, b: Side) -> dict[str, list[str]]:
    """Side label → the checkers only that side's test names (the other never ran them), when both
    sides name some: what ``same_verdict`` leaves out."""
    if not a.verdicts or not b.verdicts:
        return {}
    out = {s.label: [n for n in s.verdicts if n not in o.verdicts] for s, o in ((a, b), (b, a))}
    return {k: v for k, v in out.items() if v}
