"""Local (pure-Python) checkers over a recorded history, for what the Spark fencing invariants cannot
see. Each returns a ``checkers.result`` result; anomalies cite event ids.

``bounce-observed`` (kafka-semantics.md invariant 7, from the brokers' side): every re-registration
of broker N with a new epoch E (a ``register ok`` after N's first one in the run — a bounce the
controller must handle, KIP-380) must be followed by the controller sending N a LeaderAndIsr and a
full UpdateMetadata carrying broker_epoch E. ``checkers.fencing.bounce_handling`` keys on the
controller's own ``broker_change.bounced`` list, so it cannot fire when a pre-KIP-380 controller
(``broker_epoch_check=off``) never classifies the bounce at all — the very bug of KAFKA-7235 (a).
Epochs tie sends to registrations (no clocks); the only clock use is the liveness window: a
registration later than ``grace_s`` before the end of the run, or superseded by N's next
registration or deregistration, owes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from checkers.result import anomaly, result
from workloads.repro.framework import load_history

GRACE_S = 3.0


def bounce_observed(events: list[dict[str, Any]], grace_s: float = GRACE_S) -> dict[str, Any]:
    end = next((e["t_wall"] for e in reversed(events) if e["f"] == "run_end"), None)
    if end is None:
        return result("unknown", [], reason="no run_end: history cut short")
    sends: dict[tuple[int, int, str], list[dict[str, Any]]] = {}
    for e in events:
        if e["f"] == "control_send":
            v = e["value"]
            kind = v.get("kind")
            if kind == "UpdateMetadata" and not v.get("full"):
                continue
            sends.setdefault((int(v["target"]), int(v.get("broker_epoch", -1)), kind), []).append(e)
    anomalies = []
    checked = 0
    by_broker: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e["src"].startswith("agent:") and (
                (e["f"] == "register" and e["type"] == "ok") or e["f"] in ("deregistered", "agent_stop")):
            by_broker.setdefault(int(e["src"].split(":")[1]), []).append(e)
    for b, evs in by_broker.items():
        regs = [i for i, e in enumerate(evs) if e["f"] == "register"]
        for i in regs[1:]:
            reg = evs[i]
            later = evs[i + 1:]
            if later or reg["t_wall"] > end - grace_s:
                continue  # superseded, or too close to the end to owe anything
            checked += 1
            epoch = int(reg["value"]["epoch"])
            missing = [k for k in ("LeaderAndIsr", "UpdateMetadata") if not sends.get((b, epoch, k))]
            if missing:
                anomalies.append(anomaly(
                    "bounce-observed",
                    f"broker {b} re-registered with epoch {epoch} (session {reg['value'].get('session_id', 0):#x}) "
                    f"but no controller sent it {' or '.join('full UpdateMetadata' if m == 'UpdateMetadata' else m for m in missing)} "
                    f"with that epoch: its replicas stay offline (KIP-380 bounce missed)",
                    [reg["id"]], broker=b))
    return result(None, anomalies, reregistrations_checked=checked, grace_s=grace_s)


def isr_eligibility(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Invariant 9: every committed ISR expansion adding replica r rests on a fetch by r's incarnation
    that is current at commit (fetch ``replica_epoch`` == the controller's live epoch for r)."""
    by_id = {e["id"]: e for e in events}
    fetches: dict[str, list[dict[str, Any]]] = {}
    alters: dict[str, dict[str, Any]] = {}
    states: dict[tuple[str, int], list[tuple[int, list[int]]]] = {}
    anomalies = []
    checked = 0
    for e in events:  # merged-history order
        f, v = e["f"], e.get("value") or {}
        if f == "fetch":
            fetches.setdefault(str(v.get("request_id")), []).append(e)
        elif f == "alter_partition":
            alters[str(v.get("request_id"))] = e
        elif f == "partition_state":
            states.setdefault((v.get("topic"), int(v.get("partition", -1))), []).append(
                (int(v.get("zk_version") or 0), [int(x) for x in v.get("isr") or []]))
        elif f == "alter_partition_handled" and (v.get("error_code") == 0 or v.get("outcome") == "accepted"):
            req = alters.get(str(v.get("request_id")))
            if req is None:
                continue
            tp = (v.get("topic"), int(v.get("partition", -1)))
            committed = int(v.get("partition_epoch") or 0)
            older = [st for st in states.get(tp, []) if st[0] < committed]
            before = max(older)[1] if older else []
            live = {int(k): int(x) for k, x in (v.get("live") or {}).items()}
            for r_s, basis in (req["value"].get("based_on_fetch") or {}).items():
                r = int(r_s)
                if r in before or r not in [int(x) for x in v.get("isr") or []]:
                    continue
                checked += 1
                fetch = by_id.get(str(basis)) or (fetches.get(str(basis)) or [None])[-1]
                fepoch = (fetch or {}).get("value", {}).get("replica_epoch")
                if r not in live or fepoch is None or int(fepoch) != live[r]:
                    anomalies.append(anomaly(
                        "isr-eligibility",
                        f"{tp[0]}-{tp[1]}: ISR expansion {v.get('request_id')} added replica {r} on a fetch by its "
                        f"incarnation with epoch {fepoch}, but its live epoch at commit was {live.get(r)} "
                        "(a replica that lost its disk entered the ISR)",
                        [x for x in (req["id"], (fetch or {}).get("id"), e["id"]) if x], topic=tp[0],
                        partition=tp[1], replica=r))
    return result(None, anomalies, expansions_checked=checked)


LOCAL_CHECKERS: dict[str, Callable[[list[dict[str, Any]]], dict[str, Any]]] = {
    "bounce-observed": bounce_observed,
    "isr-eligibility": isr_eligibility,
}


def run_local(names: list[str], history: Path) -> dict[str, dict[str, Any]]:
    events = load_history(history)
    return {n: LOCAL_CHECKERS[n](events) for n in names}
