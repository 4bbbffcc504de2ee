"""Invariants 1 and 3, registration epochs and liveness: per-broker sweeps (``checkers.sweep``).

- ``registration_epochs``: per broker, the epochs it successfully registers strictly increase (in
  its agent's own order, ``seq``, which a restarted agent continues), each equals the czxid the
  agent read, and each is confirmed by ZooKeeper itself: the observer's independent reads show a
  znode with that czxid owned by the registering session (KIP-380: the broker epoch is the czxid of
  ``/brokers/ids/N``). A registration the observer never saw is unknown, never valid; so is a history
  with no registration at all.
- ``registration_liveness``, two forms. Timed: after the last fault heals (or the broker's last
  start; a heal with nothing to undo, ``noop``, ends no fault), every broker
  ``run_end.live_brokers`` lists is registered within T + margin (T its session timeout) and stays
  so, and ZooKeeper's final snapshot agrees (the znode exists, owned by that session, with that
  epoch). End of run: a broker whose agent's last word is a CONNECTED session S or a registration,
  and that is up, has its final znode owned by S (KAFKA-14845: an orphan session owns the znode and
  the broker never re-registers). Decided from the agent's own order, the observer's snapshots and
  wall clocks only for the T + margin window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from checkers.checker import Events
from checkers.result import UNKNOWN, Result, anomaly, result
from checkers.sweep import results
from history.kinds import NEMESIS, kinds_of

DEFAULT_MARGIN_MS = 3000
Row = dict[str, Any]


def _hex(x: int | None) -> str:
    return "null" if x is None else f"{x:#x}"


def _agent(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r["src"].startswith("agent:")]


def _observed(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r["src"] == "observer"]


def _ok(r: Row) -> bool:
    return r["f"] == "register" and r["type"] == "ok"


# --- invariant 1 -----------------------------------------------------------------------------------------
@dataclass
class EpochsPartial:
    anomalies: list[dict[str, Any]]
    unconfirmed: int
    registrations: int
    undecided: list[str]


@dataclass(frozen=True)
class RegistrationEpochs:
    lane: ClassVar[str] = "sweep"  # the per-broker sweep, once for both (``checkers.sweep``)
    name: str = "registration_epochs"
    reads: dict[str, tuple[str, ...]] = field(default_factory=lambda: {
        "register": ("broker_id", "czxid", "epoch", "session_id"),
        "broker_znode": ("broker_id", "czxid", "exists", "owner"),
    })
    local: bool = True

    def check(self, events: Events) -> dict[str, Result]:
        return results(self, events)

    def sweep(self, broker: int, rows: list[Row], context: list[Row]) -> EpochsPartial:
        out: list[dict[str, Any]] = []
        undecided: list[str] = []
        unconfirmed = 0
        prev: Row | None = None
        undecided += _unreadable_observations(broker, rows, context)
        seen = [o for o in _observed(rows) if o["v_exists"] and o["v_czxid"] is not None and o["v_owner"] is not None]
        regs = [r for r in _agent(rows) if _ok(r)]
        for ev in regs:
            epoch, session = ev["v_epoch"], ev["v_session_id"]
            if epoch is None or session is None:
                undecided.append(f"broker {broker}: registration {ev['id']} carries no "
                                 f"{'epoch' if epoch is None else 'session_id'}")
                continue
            if ev["v_czxid"] is not None and ev["v_czxid"] != epoch:
                out.append(anomaly(self.name, f"broker {broker} registered epoch {epoch} but the znode czxid "
                                   f"is {ev['v_czxid']}", [ev["id"]], broker=broker))
            if prev is not None and epoch <= prev["v_epoch"]:
                out.append(anomaly(self.name, f"broker {broker} registered epoch {epoch} after epoch "
                                   f"{prev['v_epoch']}: epochs must strictly increase", [prev["id"], ev["id"]],
                                   broker=broker))
            same_czxid = [o for o in seen if o["v_czxid"] == epoch]
            same_owner = [o for o in seen if session is not None and o["v_owner"] == session]
            if any(o["v_owner"] == session for o in same_czxid):
                pass
            elif same_czxid:
                o = same_czxid[0]
                out.append(anomaly(self.name, f"broker {broker} claims epoch {epoch} under session {_hex(session)}, "
                                   f"but ZooKeeper's znode with czxid {epoch} is owned by {_hex(o['v_owner'])}",
                                   [ev["id"], o["id"]], broker=broker))
            elif same_owner:
                o = same_owner[0]
                out.append(anomaly(self.name, f"broker {broker} claims epoch {epoch}, but ZooKeeper reported czxid "
                                   f"{o['v_czxid']} for its znode owned by session {_hex(session)}",
                                   [ev["id"], o["id"]], broker=broker))
            else:
                unconfirmed += 1
            prev = ev
        return EpochsPartial(out, unconfirmed, len(regs), undecided)

    def fold(self, partials: list[EpochsPartial]) -> Result:
        an = [a for p in partials for a in p.anomalies]
        unconfirmed = sum(p.unconfirmed for p in partials)
        registrations = sum(p.registrations for p in partials)
        undecided = sorted({u for p in partials for u in p.undecided})
        if not registrations and not undecided:
            # nothing was registered: an epoch invariant with no epoch is not a verdict
            undecided = ["no successful registration in the history: no epoch to check"]
        valid = False if an else (UNKNOWN if unconfirmed or undecided else True)
        return result(valid, an, brokers=len(partials), unconfirmed_registrations=unconfirmed,
                      registrations=registrations, undecided=undecided)


# --- invariant 3 -----------------------------------------------------------------------------------------
@dataclass
class LivenessPartial:
    broker: int
    anomalies: list[dict[str, Any]]
    undecided: str | None
    session_timeout_ms: int | None
    last_heal: str | None


@dataclass(frozen=True)
class RegistrationLiveness:
    lane: ClassVar[str] = "sweep"
    margin_ms: int = DEFAULT_MARGIN_MS
    name: str = "registration_liveness"
    reads: dict[str, tuple[str, ...]] = field(default_factory=lambda: {
        "agent_start": ("broker_id", "session_timeout_ms"),
        "agent_stop": ("broker_id",),
        "session": ("broker_id", "session_id", "state"),
        "register": ("broker_id", "epoch", "session_id"),
        "register_skipped": ("broker_id",),
        "deregistered": ("broker_id",),
        "broker_znode": ("broker_id", "czxid", "exists", "final", "owner"),
        "run_end": ("live_brokers",),
        # the last heal: the last completed stop of any nemesis op (a fault's own stop or a heal-all
        # that undid something: a ``noop`` heal ends no fault)
        **{k: ("phase", "reason", "stage") for k in kinds_of(NEMESIS)},
        "heal": ("noop", "phase", "reason", "stage"),
    })
    local: bool = True

    def check(self, events: Events) -> dict[str, Result]:
        return results(self, events)

    def sweep(self, broker: int, rows: list[Row], context: list[Row]) -> LivenessPartial:
        agent, observed = _agent(rows), _observed(rows)
        run_ends = [r for r in context if r["f"] == "run_end"]
        run_end = run_ends[-1] if run_ends else None
        heal = _last_heal(context, run_end)
        starts = [r for r in agent if r["f"] == "agent_start"]
        t_ms = starts[0]["v_session_timeout_ms"] if starts else None
        anomalies: list[dict[str, Any]] = []
        # an event it cannot read could be the one that decides: undecided, before anything is judged
        unreadable = _unreadable_observations(broker, rows, context) + _unreadable_life(agent, context)
        why: str | None = None
        if unreadable:
            why = unreadable[0]
        elif run_end is None:
            why = "no run_end event: the history was cut short"
        elif t_ms is None:
            why = f"broker {broker}: session timeout unknown (no agent_start)"
        else:
            anomalies, why = self._timed(broker, agent, observed, heal, run_end, t_ms)
        if not anomalies and not unreadable:
            anomalies = self._at_end(broker, agent, observed, run_end)
        return LivenessPartial(broker, anomalies, why, t_ms, heal["id"] if heal else None)

    def _timed(self, broker: int, agent: list[Row], observed: list[Row], heal: Row | None, run_end: Row,
               t_ms: int) -> tuple[list[dict[str, Any]], str | None]:
        live = run_end["v_live_brokers"]
        if live is None:
            return [], "run_end lists no live brokers"
        if broker not in live:
            return [], None
        starts = [e for e in agent if e["f"] == "agent_start"]
        t0_event = max(([heal] if heal else []) + starts[-1:], key=lambda e: e["t_wall"], default=None)
        if t0_event is None:
            return [], f"broker {broker}: no agent_start and no heal in the history"
        deadline = t0_event["t_wall"] + (t_ms + self.margin_ms) / 1000.0
        if run_end["t_wall"] < deadline:
            return [], (f"broker {broker}: history ends {deadline - run_end['t_wall']:.1f}s before the liveness "
                        f"deadline (T + margin after {t0_event['id']})")
        registered: Row | None = None
        last_change: Row | None = None
        for ev in agent:
            if ev["t_wall"] > deadline:
                break
            if _ok(ev):
                registered, last_change = ev, ev
            elif _lost(ev):
                registered, last_change = None, ev
            elif ev["f"] in ("register", "register_skipped"):
                last_change = ev
        # Shutdown at collection time (after run_end) is not a loss of registration.
        after = [e for e in agent if deadline < e["t_wall"] <= run_end["t_wall"] and _lost(e)]
        cite = [t0_event["id"]] + ([last_change["id"]] if last_change else [])
        window = f"T + margin = {t_ms} + {self.margin_ms} ms"
        if registered is None:
            return [anomaly(self.name, f"broker {broker} is alive but not registered {window} after "
                            f"{'the last heal' if t0_event is heal else 'it started'}", cite, broker=broker)], None
        if after:
            return [anomaly(self.name, f"broker {broker} lost its registration after the last heal with no fault "
                            "active", cite + [after[0]["id"]], broker=broker)], None
        finals = [o for o in observed if o["v_final"]]
        if not finals:
            return [], f"broker {broker}: no final ZooKeeper snapshot to confirm the registration"
        final = finals[-1]
        if not final["v_exists"] or final["v_owner"] != registered["v_session_id"] \
                or final["v_czxid"] != registered["v_epoch"]:
            state = f"owner {_hex(final['v_owner'])}, czxid {final['v_czxid']}" if final["v_exists"] else "no znode"
            return [anomaly(self.name, f"broker {broker} believes it is registered with epoch {registered['v_epoch']} "
                            f"under session {_hex(registered['v_session_id'])}, but ZooKeeper shows {state}",
                            cite + [registered["id"], final["id"]], broker=broker)], None
        return [], None

    def _at_end(self, broker: int, agent: list[Row], observed: list[Row], run_end: Row | None) -> list[dict[str, Any]]:
        """The end-of-run form: the agent's last word against the final snapshot, no clock."""
        life = [r for r in agent if r["f"] in ("session", "agent_stop", "agent_start") or _ok(r)]
        if not life or not (_ok(life[-1]) or (life[-1]["f"] == "session" and life[-1]["v_state"] == "connected")):
            return []
        last = life[-1]
        up = None if run_end is None else run_end["v_live_brokers"]
        finals = [o for o in observed if o["v_final"]]
        if (up is not None and broker not in up) or not finals:
            return []
        s, fin = last["v_session_id"], finals[-1]
        owner_differs = s is not None and fin["v_owner"] is not None and fin["v_owner"] != s
        if fin["v_exists"] and not owner_differs:
            return []
        return [anomaly(self.name, f"broker {broker} is up with CONNECTED session {_hex(s)} at the end, but its final "
                        f"znode exists={fin['v_exists']} owner={_hex(fin['v_owner'])}", [last["id"], fin["id"]],
                        broker=broker)]

    def fold(self, partials: list[LivenessPartial]) -> Result:
        an = [a for p in partials for a in p.anomalies]
        undecided = sorted({p.undecided for p in partials if p.undecided})
        valid = False if an else (UNKNOWN if undecided or not partials else True)
        return result(valid, an, margin_ms=self.margin_ms,
                      session_timeout_ms={p.broker: p.session_timeout_ms for p in partials},
                      last_heal=next((p.last_heal for p in partials if p.last_heal), None), undecided=undecided)


def _unreadable_observations(broker: int, rows: list[Row], context: list[Row]) -> list[str]:
    """Observer events that lack what a registration check reads: whether the znode exists and, when
    it does, its czxid and owner; or which broker they are about (such an event is in every broker's
    context). Missing is not absent: a checker that read them as "no znode" would invent anomalies."""
    out = [f"observer event {o['id']} names no broker" for o in context if o["f"] == "broker_znode"]
    for o in _observed(rows):
        if o["v_exists"] is None or (o["v_exists"] and (o["v_czxid"] is None or o["v_owner"] is None)):
            out.append(f"broker {broker}: observer event {o['id']} lacks exists, czxid or owner")
    return out


def _unreadable_life(agent: list[Row], context: list[Row]) -> list[str]:
    """Events the liveness windows read whose deciding fields are missing: a registration without its
    epoch or session, a session change without its state, a nemesis op without its phase or stage."""
    out = [f"registration {r['id']} carries no epoch or session_id" for r in agent
           if _ok(r) and (r["v_epoch"] is None or r["v_session_id"] is None)]
    out += [f"session event {r['id']} carries no state" for r in agent if r["f"] == "session" and r["v_state"] is None]
    out += [f"nemesis event {r['id']} carries no phase or stage" for r in context
            if r["src"] == "nemesis" and (r.get("v_phase") is None or r.get("v_stage") is None)]
    return out


def _lost(ev: Row) -> bool:
    return ev["f"] == "deregistered" or (ev["f"] == "session" and ev["v_state"] in ("lost", "expired"))


def _last_heal(context: list[Row], run_end: Row | None) -> Row | None:
    """The last completed stop of a nemesis op before the run ended; the heal at nemesis setup
    precedes every fault and does not count, nor does a heal that had nothing to undo (``noop``)."""
    end_t = run_end["t_wall"] if run_end else float("inf")
    stops = sorted((r for r in context if r["src"] == "nemesis" and r["v_phase"] == "stop"
                    and r["v_stage"] == "complete" and r["v_reason"] != "setup" and not r.get("v_noop")
                    and r["t_wall"] <= end_t),
                   key=lambda r: r["t_wall"])
    return stops[-1] if stops else None
