"""Registration checkers (kafka-semantics.md invariants 1 and 3), run on Spark.

- ``registration-epochs``: per broker, the epochs it successfully registers strictly increase,
  and each equals the czxid ZooKeeper itself reported (the observer's independent reads) for a
  znode owned by the registering session.
- ``registration-liveness``: after the last fault heals, every live broker is registered again
  within T + margin (T = its session timeout, margin stated in the result), and ZooKeeper's final
  state agrees: ``/brokers/ids/N`` exists, owned by that broker's session, with its epoch.

Spark loads the JSONL history, keeps the few event kinds these checks read, extracts their fields
natively and partitions by broker; the per-broker sweep (``check_broker``) is pure Python so it is
tested on plain data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from checkers.result import UNKNOWN, anomaly, compose, result

RELEVANT = ("register", "deregistered", "session", "agent_start", "agent_stop", "broker_znode", "heal",
            "run_end", "register_skipped")
DEFAULT_MARGIN_MS = 3000
# The value fields these checks read: one list for the Spark loader and the pure-Python reader.
LONG_FIELDS = ("epoch", "czxid", "owner", "session_id", "session_timeout_ms")
TEXT_FIELDS = ("exists", "final", "phase", "stage", "state", "live_brokers", "margin_ms", "reason")


@dataclass(frozen=True, slots=True)
class Params:
    session_timeout_ms: int
    margin_ms: int = DEFAULT_MARGIN_MS


def load_relevant(spark: Any, paths: list[str]) -> list[dict[str, Any]]:
    """Read histories with Spark and return only the rows these checks need, fields extracted."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    schema = StructType([
        StructField("id", StringType()), StructField("src", StringType()), StructField("seq", LongType()),
        StructField("t_wall", DoubleType()), StructField("type", StringType()), StructField("f", StringType()),
        StructField("process", StringType()), StructField("value", StringType()),
    ])
    df = spark.read.schema(schema).option("mode", "PERMISSIVE").json(paths)
    v = F.col("value")

    def num(field: str) -> Any:
        return F.get_json_object(v, f"$.{field}").try_cast("long").alias(field)

    def text(field: str) -> Any:
        return F.get_json_object(v, f"$.{field}").alias(field)

    rows = (
        df.where(F.col("f").isin(*RELEVANT))
        .select(
            "id", "src", "seq", "t_wall", "type", "f",
            F.coalesce(num("broker_id"), F.col("process").try_cast("long")).alias("broker"),
            *(num(f) for f in LONG_FIELDS), *(text(f) for f in TEXT_FIELDS),
        )
        .repartition("broker")
        .sortWithinPartitions("broker", "src", "seq")
        .collect()
    )
    return [r.asDict() for r in rows]


def rows_from_history(path: str) -> list[dict[str, Any]]:
    """The rows ``load_relevant`` extracts, read without Spark (for callers that must be fast)."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            d = json.loads(line)
            if d.get("f") not in RELEVANT:
                continue
            v = d.get("value") or {}
            broker = _as_long(v.get("broker_id"))
            row = {"id": d["id"], "src": d["src"], "seq": d["seq"], "t_wall": d["t_wall"], "type": d["type"],
                   "f": d["f"], "broker": _as_long(d.get("process")) if broker is None else broker}
            row.update({k: _as_long(v.get(k)) for k in LONG_FIELDS})
            row.update({k: _as_json_text(v.get(k)) for k in TEXT_FIELDS})
            rows.append(row)
    return rows


def _as_long(x: Any) -> int | None:
    """Spark's ``try_cast('long')`` of a JSON value: None for booleans, nulls and non-numbers."""
    if isinstance(x, bool) or x is None:
        return None
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def _as_json_text(x: Any) -> str | None:
    """What Spark's ``get_json_object`` returns: raw strings, JSON text for everything else."""
    if x is None or isinstance(x, str):
        return x
    return json.dumps(x, separators=(",", ":"))


def _bool(x: Any) -> bool:
    return x in (True, "true", "True", 1)


def check_epochs(broker: int, agent_events: list[dict], observed: list[dict]) -> tuple[list[dict], int]:
    """Strictly increasing epochs, each confirmed by the observer. Returns (anomalies, unconfirmed)."""
    out: list[dict] = []
    unconfirmed = 0
    prev: dict | None = None
    seen = [o for o in observed if _bool(o["exists"])]
    for ev in agent_events:
        if ev["f"] != "register" or ev["type"] != "ok":
            continue
        epoch, session = ev["epoch"], ev["session_id"]
        if prev is not None and epoch <= prev["epoch"]:
            out.append(anomaly("registration-epochs", f"broker {broker} registered epoch {epoch} after "
                               f"epoch {prev['epoch']}: epochs must strictly increase",
                               [prev["id"], ev["id"]], broker=broker))
        same_czxid = [o for o in seen if o["czxid"] == epoch]
        same_owner = [o for o in seen if o["owner"] == session]
        if any(o["owner"] == session for o in same_czxid):
            pass
        elif same_czxid:
            o = same_czxid[0]
            out.append(anomaly("registration-epochs", f"broker {broker} claims epoch {epoch} under session "
                               f"{session:#x}, but ZooKeeper's znode with czxid {epoch} is owned by {o['owner']:#x}",
                               [ev["id"], o["id"]], broker=broker))
        elif same_owner:
            o = same_owner[0]
            out.append(anomaly("registration-epochs", f"broker {broker} claims epoch {epoch}, but ZooKeeper "
                               f"reported czxid {o['czxid']} for its znode owned by session {session:#x}",
                               [ev["id"], o["id"]], broker=broker))
        else:
            unconfirmed += 1
        prev = ev
    return out, unconfirmed


def check_liveness(broker: int, agent_events: list[dict], observed: list[dict], heal: dict | None,
                   run_end: dict, p: Params) -> tuple[list[dict], str | None]:
    """Returns (anomalies, undecided-reason)."""
    live = {int(b) for b in _json_list(run_end.get("live_brokers"))}
    if broker not in live:
        return [], None
    starts = [e for e in agent_events if e["f"] == "agent_start"]
    t0_event = max([e for e in ([heal] if heal else []) + starts[-1:]], key=lambda e: e["t_wall"], default=None)
    if t0_event is None:
        return [], f"broker {broker}: no agent_start and no heal in the history"
    deadline = t0_event["t_wall"] + (p.session_timeout_ms + p.margin_ms) / 1000.0
    if run_end["t_wall"] < deadline:
        return [], (f"broker {broker}: history ends {deadline - run_end['t_wall']:.1f}s before the liveness "
                    f"deadline (T + margin after {t0_event['id']})")
    registered: dict | None = None
    last_change: dict | None = None
    for ev in agent_events:
        if ev["t_wall"] > deadline:
            break
        if ev["f"] == "register" and ev["type"] == "ok":
            registered, last_change = ev, ev
        elif ev["f"] == "deregistered" or (ev["f"] == "session" and ev["state"] in ("lost", "expired")):
            registered, last_change = None, ev
        elif ev["f"] in ("register", "register_skipped"):
            last_change = ev
    # Shutdown at collection time (after run_end) is not a loss of registration.
    after = [e for e in agent_events if deadline < e["t_wall"] <= run_end["t_wall"] and
             (e["f"] == "deregistered" or (e["f"] == "session" and e["state"] in ("lost", "expired")))]
    cite = [t0_event["id"]] + ([last_change["id"]] if last_change else [])
    window = f"T + margin = {p.session_timeout_ms} + {p.margin_ms} ms"
    if registered is None:
        return [anomaly("registration-liveness", f"broker {broker} is alive but not registered {window} after "
                        f"{'the last heal' if t0_event is heal else 'it started'}", cite, broker=broker)], None
    if after:
        return [anomaly("registration-liveness", f"broker {broker} lost its registration after the last heal "
                        "with no fault active", cite + [after[0]["id"]], broker=broker)], None
    finals = [o for o in observed if _bool(o["final"])]
    if not finals:
        return [], f"broker {broker}: no final ZooKeeper snapshot to confirm the registration"
    final = finals[-1]
    if not _bool(final["exists"]) or final["owner"] != registered["session_id"] or final["czxid"] != registered["epoch"]:
        state = (f"owner {final['owner']:#x}, czxid {final['czxid']}" if _bool(final["exists"]) else "no znode")
        return [anomaly("registration-liveness", f"broker {broker} believes it is registered with epoch "
                        f"{registered['epoch']} under session {registered['session_id']:#x}, but ZooKeeper shows "
                        f"{state}", cite + [registered["id"], final["id"]], broker=broker)], None
    return [], None


def _json_list(x: Any) -> list:
    if x is None:
        return []
    return x if isinstance(x, list) else json.loads(x)


def check_rows(rows: Iterable[dict[str, Any]], margin_ms: int = DEFAULT_MARGIN_MS) -> dict[str, Any]:
    """Both checks over extracted rows (from ``load_relevant`` or built by hand in tests)."""
    rows = list(rows)
    run_ends = [r for r in rows if r["f"] == "run_end"]
    end_t = run_ends[-1]["t_wall"] if run_ends else float("inf")
    # The last heal: the last completed stop of any nemesis op (a fault's own stop or a heal-all),
    # before the run ended; the heal at nemesis setup precedes every fault and does not count.
    stops = sorted((r for r in rows if r["src"] == "nemesis" and r["phase"] == "stop" and r["stage"] == "complete"
                    and r["reason"] != "setup" and r["t_wall"] <= end_t), key=lambda r: r["t_wall"])
    last_heal = stops[-1] if stops else None
    brokers = sorted({r["broker"] for r in rows if r["src"].startswith("agent:") and r["broker"] is not None})
    epoch_anoms: list[dict] = []
    live_anoms: list[dict] = []
    unconfirmed = 0
    undecided: list[str] = []
    timeouts = {}
    for b in brokers:
        agent = sorted((r for r in rows if r["src"] == f"agent:{b}"), key=lambda r: r["seq"])
        observed = sorted((r for r in rows if r["src"] == "observer" and r["broker"] == b), key=lambda r: r["seq"])
        a, u = check_epochs(b, agent, observed)
        epoch_anoms += a
        unconfirmed += u
        t_ms = next((r["session_timeout_ms"] for r in agent if r["f"] == "agent_start"), None)
        timeouts[b] = t_ms
        if not run_ends:
            undecided.append("no run_end event: the history was cut short")
            continue
        if t_ms is None:
            undecided.append(f"broker {b}: session timeout unknown (no agent_start)")
            continue
        la, why = check_liveness(b, agent, observed, last_heal, run_ends[-1], Params(t_ms, margin_ms))
        live_anoms += la
        if why:
            undecided.append(why)
    epochs = result(
        False if epoch_anoms else (UNKNOWN if unconfirmed else True), epoch_anoms,
        brokers=len(brokers), unconfirmed_registrations=unconfirmed,
        registrations=sum(1 for r in rows if r["f"] == "register" and r["type"] == "ok"),
    )
    liveness = result(
        False if live_anoms else (UNKNOWN if undecided or not brokers else True), live_anoms,
        margin_ms=margin_ms, session_timeout_ms=timeouts, last_heal=last_heal["id"] if last_heal else None,
        undecided=sorted(set(undecided)),
    )
    return compose({"registration-epochs": epochs, "registration-liveness": liveness})


def check(spark: Any, history_paths: list[str], margin_ms: int = DEFAULT_MARGIN_MS) -> dict[str, Any]:
    return check_rows(load_relevant(spark, history_paths), margin_ms)
