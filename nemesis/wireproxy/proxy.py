"""The shared asyncio wire proxy: listeners, per-connection tasks, rule decisions and delivery.

Role in the data path: one listener per upstream server; per connection a reader and a writer
task per direction. A protocol's proxy (``ZkProxy``, ``KafkaProxy``) subclasses ``WireProxy`` and
supplies the readers (how its frames are split) and the inspection of each frame (what rules and
events see); everything after that is here: ``deliver`` asks the rules (``nemesis.wireproxy.rules``),
logs one frame event (the subclass's ``emit_frame``), and queues the original bytes with
``release_at = max(now + delay, previous release_at)``; the writer drains the queue in order, so a
delayed frame holds back everything behind it and nothing overtakes. A *held* frame (``hold``)
leaves the queue: later frames overtake it, and it is queued again when released (the control
API's ``/release``, or after its ``hold_ms``). A *captured* frame (``capture``) is forwarded as
``forward`` would and a copy kept: the control API's ``/replay`` sends the copies again on a new
upstream connection of the proxy's own (``replay_frames``, the protocol's: it must read the
answers), a late duplicate that bypasses the rules.

Black-hole overlays per direction: frames read after a ``drop_then_blackhole`` are discarded (and
logged), and a close from the far side is not passed through a black-holed direction (a partition
hides FINs too); the other side learns only by timing out.

Total: a task of a connection that dies of anything closes that connection (never the proxy), and
``protocol_error`` closes both sides with one event. Other connections are untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from history import EventWriter
from nemesis.wireproxy.conn import CLOSED, CLOSING, DIRS, NEW, Item, WireConn, set_rst
from nemesis.wireproxy.rules import Decision, Dialect, Rule, RuleSet

HELD_ON_CLOSE = ("deliver", "discard")
BeforeWrite = Callable[[], None]  # runs just before the frame is written to its destination
AfterEmit = Callable[[int, bool], None]  # (frame event seq, forwarded?) once the frame is logged


@dataclass(slots=True)
class ListenerSpec:
    listen_host: str
    listen_port: int
    upstream_host: str
    upstream_port: int

    @property
    def upstream(self) -> str:
        return f"{self.upstream_host}:{self.upstream_port}"

    @classmethod
    def parse(cls, s: str) -> ListenerSpec:
        """``LISTEN_HOST:PORT=UPSTREAM_HOST:PORT`` (port 0 = pick one)."""
        try:
            left, right = s.split("=", 1)
            lh, lp = left.rsplit(":", 1)
            uh, up = right.rsplit(":", 1)
            return cls(lh.strip("[]"), int(lp), uh.strip("[]"), int(up))
        except ValueError:
            raise ValueError(f"--listen {s!r}: expected LISTEN_HOST:PORT=UPSTREAM_HOST:PORT") from None


@dataclass(slots=True, eq=False)  # identity: the proxy's list removes this very hold
class Held:
    """A frame a ``hold`` rule keeps: where it goes when released, and its event."""

    conn: WireConn
    dir: str
    data: bytes
    seq: int
    rule_id: str | None
    before_write: BeforeWrite | None
    timer: asyncio.TimerHandle | None = None


@dataclass(slots=True)
class Captured:
    """A frame a ``capture`` rule forwarded and kept a copy of, for ``/replay``."""

    listener: int  # the listener it came through: a replay goes to the same upstream
    dir: str
    data: bytes
    seq: int  # its kafka_frame/frame event
    rule_id: str | None

    def info(self) -> dict[str, Any]:
        return {"frame_seq": self.seq, "listener": self.listener, "dir": self.dir, "rule_id": self.rule_id,
                "bytes": len(self.data)}


class ReplayError(Exception):
    """A replay the proxy cannot do (its protocol has none, or nothing was captured)."""


MAX_CAPTURED = 1000  # kept copies: a capture rule without a budget must not grow the proxy without bound


class WireProxy:
    """The protocol-neutral proxy. Create, ``await start()``, then ``await stop()``; all methods run on
    its loop. Subclasses set ``DIALECT`` and implement ``emit_frame``, ``new_conn`` and ``readers``
    (and may add ``conn_fields``, ``close_fields``, ``stop_fields``)."""

    DIALECT: Dialect  # the protocol's match keys and actions (the control API parses rules with it)
    MAX_FRAME: int  # the protocol's largest frame, unless ``max_frame`` says otherwise

    def __init__(
        self,
        listeners: list[ListenerSpec],
        events: EventWriter,
        *,
        rules: list[Rule] | None = None,
        seed: int = 0,
        held_on_close: str = "deliver",
        max_frame: int | None = None,
        connect_timeout_s: float = 5.0,
    ) -> None:
        max_frame = self.MAX_FRAME if max_frame is None else max_frame
        if held_on_close not in HELD_ON_CLOSE:
            raise ValueError(f"held_on_close must be one of {HELD_ON_CLOSE}")
        if isinstance(max_frame, bool) or not isinstance(max_frame, int) or not 0 < max_frame < 2**31:
            raise ValueError(f"max_frame must be an integer in [1, 2^31), got {max_frame!r}")
        self.specs = listeners
        self.ev = events
        self.seed = seed
        self.held_on_close = held_on_close
        self.max_frame = max_frame
        self.connect_timeout_s = connect_timeout_s
        self.ruleset = RuleSet(seed, time.monotonic())
        self._initial_rules = rules or []
        self.servers: list[asyncio.base_events.Server] = []
        self.bound: list[tuple[str, int]] = []
        self.conns: dict[int, WireConn] = {}
        self.held: list[Held] = []
        self.captured: list[Captured] = []
        self._next_conn = 0
        self._handlers: set[asyncio.Task[Any]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    # --- protocol hooks -----------------------------------------------------------------------

    def emit_frame(self, ev: dict[str, Any]) -> int:
        """One frame's event (its kind is the protocol's: ``frame``, ``kafka_frame``); returns its seq."""
        raise NotImplementedError

    def new_conn(self, ordinal: int, listener: int, upstream: str, client: str) -> WireConn:
        return WireConn(ordinal, listener, upstream, client, time.time())

    def readers(self, c: WireConn) -> list[Coroutine[Any, Any, None]]:
        raise NotImplementedError

    def conn_fields(self, c: WireConn) -> dict[str, Any]:
        """Fields every connection-level event of this protocol carries (ZooKeeper: the session)."""
        return {}

    def close_fields(self, c: WireConn) -> dict[str, Any]:
        """Extra fields of ``conn_close``."""
        return {}

    def stop_fields(self) -> dict[str, Any]:
        return {}

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> list[tuple[str, int]]:
        self.loop = asyncio.get_running_loop()
        self.ruleset.start = time.monotonic()
        self.ruleset.add(self._initial_rules)
        for i, spec in enumerate(self.specs):
            srv = await asyncio.start_server(
                lambda r, w, i=i: self._spawn(i, r, w), spec.listen_host, spec.listen_port
            )
            self.servers.append(srv)
            host, port = srv.sockets[0].getsockname()[:2]
            self.bound.append((host, port))
        self.emit(
            "proxy_start", seed=self.seed, held_on_close=self.held_on_close, max_frame=self.max_frame,
            listeners=self.listeners_info(), rules=[r.to_dict() for r in self.ruleset.rules],
        )
        return self.bound

    def listeners_info(self) -> list[dict[str, Any]]:
        return [
            {"index": i, "listen": f"{h}:{p}", "host": h, "port": p, "upstream": self.specs[i].upstream}
            for i, (h, p) in enumerate(self.bound)
        ]

    async def stop(self) -> None:
        for srv in self.servers:
            srv.close()
        for h in self.held:
            if h.timer is not None:
                h.timer.cancel()
        for c in list(self.conns.values()):
            self._abort(c, "proxy", "shutdown")
        for t in list(self._handlers):
            t.cancel()
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=2.0)
        for srv in self.servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(srv.wait_closed(), 1.0)
        self.emit("proxy_stop", connections=self._next_conn, **self.stop_fields())

    def emit(self, f: str, **value: Any) -> int:
        return self.ev.emit(f, **value).seq

    # --- control (called on the loop) ---------------------------------------------------------

    def add_rules(self, rules: list[Rule]) -> list[str]:
        ids = self.ruleset.add(rules)
        for r in rules:
            self.emit("rule_added", rule_id=r.id, rule=r.to_dict())
        return ids

    def remove_rule(self, rule_id: str) -> bool:
        ok = self.ruleset.remove(rule_id)
        if ok:
            self.emit("rule_removed", rule_id=rule_id)
        return ok

    def clear_rules(self) -> int:
        n = self.ruleset.clear()
        self.emit("rules_cleared", count=n)
        return n

    def arm(self, name: str) -> None:
        self.ruleset.arm(name, time.monotonic())
        self.emit("rule_armed", name=name, armed=True,
                  rule_ids=[r.id for r in self.ruleset.rules if r.budget.arm == name])

    def disarm(self, name: str) -> bool:
        was = self.ruleset.disarm(name)
        self.emit("rule_armed", name=name, armed=False, was_armed=was)
        return was

    def close_conn(self, ordinal: int, rst: bool = False) -> bool:
        c = self.conns.get(ordinal)
        if c is None:
            return False
        self._abort(c, "proxy", "control", rst=rst)
        return True

    def held_info(self) -> list[dict[str, Any]]:
        return [{"frame_seq": h.seq, "conn": h.conn.ordinal, "dir": h.dir, "rule_id": h.rule_id,
                 "bytes": len(h.data)} for h in self.held]

    def release(self, rule_id: str | None = None) -> int:
        """Release the held frames (all, or those ``rule_id`` held), oldest first: each is queued
        behind whatever its direction already has. Returns how many."""
        out = [h for h in self.held if rule_id is None or h.rule_id == rule_id]
        for h in out:
            self._release(h, "control")
        return len(out)

    def captured_info(self) -> list[dict[str, Any]]:
        return [cap.info() for cap in self.captured]

    async def replay(self, rule_id: str | None = None) -> list[dict[str, Any]]:
        """Send the captured requests (all, or those ``rule_id`` captured) again, oldest first, each
        listener's on one new upstream connection; returns one entry per frame (its answer's event and
        error). The copies are kept: a replay may be repeated."""
        out = [cap for cap in self.captured if cap.dir == "c2s" and (rule_id is None or cap.rule_id == rule_id)]
        if not out:
            raise ReplayError(f"nothing captured{f' by rule {rule_id}' if rule_id else ''} to replay")
        results: list[dict[str, Any]] = []
        for li in sorted({cap.listener for cap in out}):
            results += await self.replay_frames(li, [cap for cap in out if cap.listener == li])
        return results

    async def replay_frames(self, listener: int, frames: list[Captured]) -> list[dict[str, Any]]:
        """The protocol's replay of ``frames`` to ``listener``'s upstream (it knows how answers are framed)."""
        raise ReplayError(f"the {self.DIALECT.name} proxy cannot replay frames")

    def _release(self, h: Held, how: str) -> None:
        if h not in self.held:
            return
        self.held.remove(h)
        if h.timer is not None:
            h.timer.cancel()
        c = h.conn
        if c.state == CLOSED or c.dead[h.dir] or c.ordinal not in self.conns:
            self.emit("frame_discarded", conn=c.ordinal, upstream=c.upstream, dir=h.dir, frame_seq=h.seq,
                      reason="conn_closed")
            return
        loop_now = asyncio.get_running_loop().time()
        release = max(loop_now, c.last_release[h.dir])
        c.last_release[h.dir] = release
        self.emit("hold_released", conn=c.ordinal, upstream=c.upstream, dir=h.dir, frame_seq=h.seq,
                  rule_id=h.rule_id, how=how)
        c.queues[h.dir].put_nowait(Item(release, h.data, seq=h.seq, delayed=True, before_write=h.before_write))

    # --- per connection -----------------------------------------------------------------------

    def _spawn(self, li: int, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        t = asyncio.get_running_loop().create_task(self._handle(li, r, w))
        self._handlers.add(t)
        t.add_done_callback(self._handlers.discard)

    async def _handle(self, li: int, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._next_conn += 1
        spec = self.specs[li]
        peer = client_w.get_extra_info("peername") or ("?", 0)
        c = self.new_conn(self._next_conn, li, spec.upstream, f"{peer[0]}:{peer[1]}")
        c.client_r, c.client_w = client_r, client_w
        self.conns[c.ordinal] = c
        try:
            c.up_r, c.up_w = await asyncio.wait_for(
                asyncio.open_connection(spec.upstream_host, spec.upstream_port), self.connect_timeout_s
            )
        except (TimeoutError, OSError) as e:
            self.emit("conn_open", conn=c.ordinal, upstream=c.upstream, listener=li, client=c.client_addr,
                      error=f"upstream connect failed: {e!r}")
            client_w.close()
            c.state, c.closed_first = CLOSED, "proxy"
            self.emit("conn_close", conn=c.ordinal, upstream=c.upstream, closed_first="proxy",
                      reason="upstream_unreachable", state=NEW)
            self.conns.pop(c.ordinal, None)
            return
        local = c.up_w.get_extra_info("sockname") or ("?", 0)
        self.emit("conn_open", conn=c.ordinal, upstream=c.upstream, listener=li, client=c.client_addr,
                  upstream_local=f"{local[0]}:{local[1]}")
        loop = asyncio.get_running_loop()
        c.tasks = [loop.create_task(r) for r in self.readers(c)]
        c.tasks += [loop.create_task(self._writer(c, "c2s")), loop.create_task(self._writer(c, "s2c"))]
        for t in c.tasks:
            t.add_done_callback(lambda t, c=c: self._task_done(c, t))
        try:
            await asyncio.gather(*c.tasks, return_exceptions=True)
        except asyncio.CancelledError:
            for t in c.tasks:
                t.cancel()
            self._abort(c, "proxy", "shutdown")
            raise
        finally:
            if c.close_handle is not None:
                c.close_handle.cancel()
            for w in (c.client_w, c.up_w):
                if w is not None:
                    w.close()
            c.state = CLOSED
            self.emit("conn_close", conn=c.ordinal, upstream=c.upstream, closed_first=c.closed_first,
                      reason=c.close_reason, frames=dict(c.frames), bytes=dict(c.nbytes),
                      blackhole=[d for d in DIRS if c.blackhole[d]], **self.close_fields(c),
                      **self.conn_fields(c))
            self.conns.pop(c.ordinal, None)
            for h in [h for h in self.held if h.conn is c]:
                self._release(h, "conn_closed")

    def _note_closed(self, c: WireConn, who: str, reason: str) -> None:
        if c.closed_first is None:
            c.closed_first, c.close_reason = who, reason
        if c.state != CLOSED:
            c.state = CLOSING

    def _abort(self, c: WireConn, who: str, reason: str, rst: bool = False) -> None:
        self._note_closed(c, who, reason)
        for w in (c.client_w, c.up_w):
            if w is None:
                continue
            if rst:
                set_rst(w)
                w.transport.abort()
            else:
                w.close()
        # wake the writers so they finish
        for d in DIRS:
            c.queues[d].put_nowait(Item(0.0, kind="stop"))

    def _protocol_error(self, c: WireConn, d: str, error: str) -> None:
        """Bytes the proxy will not forward: log them, close both sides (the conn_close follows). An
        ``error`` starting "internal error:" is a bug in the proxy or codec, not in the bytes."""
        self.emit("protocol_error", conn=c.ordinal, upstream=c.upstream, dir=d, error=error[:500])
        self._abort(c, "proxy", "protocol_error")

    def _task_done(self, c: WireConn, t: asyncio.Task[Any]) -> None:
        """A reader or writer that died of an exception: close its connection rather than leave the
        others waiting on it forever."""
        if not t.cancelled() and t.exception() is not None and c.state != CLOSED:
            e = t.exception()
            self._abort(c, "proxy", f"internal_error: {type(e).__name__}: {e}"[:200])

    def _client_closed(self, c: WireConn, reason: str) -> None:
        """The client closed its side: from now on nothing the server says reaches it."""
        c.client_eof = True
        held_s = c.last_release["c2s"] - asyncio.get_running_loop().time()  # frames still held c2s
        self.emit("client_close", conn=c.ordinal, upstream=c.upstream, reason=reason, state=c.state,
                  held_ms=round(max(held_s, 0.0) * 1000.0, 3), held_on_close=self.held_on_close,
                  **self.conn_fields(c))

    def _reader_eof(self, c: WireConn, d: str, e: BaseException) -> None:
        """A reader's side closed (or reset): note who, and let the writer pass the FIN on."""
        if d == "c2s":
            self._note_closed(c, "client", "eof")
            self._client_closed(c, "reset" if isinstance(e, ConnectionResetError) else "eof")
            if self.held_on_close == "discard":
                c.discard_held["c2s"] = True
        else:
            self._note_closed(c, "server", "eof")
        c.queues[d].put_nowait(Item(0.0, kind="eof"))

    # --- one frame ------------------------------------------------------------------------------

    def deliver(self, c: WireConn, d: str, raw: bytes, info: Any, ev: dict[str, Any],
                before_write: BeforeWrite | None = None, after_emit: AfterEmit | None = None) -> None:
        """One inspected frame: the rules' decision, its event, and its delivery."""
        now = time.monotonic()
        loop_now = asyncio.get_running_loop().time()

        if c.blackhole[d]:
            ev.update(action="blackholed", rule_id=c.blackhole_rule[d])
            seq = self.emit_frame(ev)
            if after_emit:
                after_emit(seq, False)
            return
        decision: Decision = self.ruleset.decide(info, now)
        act = decision.action
        ev["action"] = act.type
        rid = decision.rule.id if decision.rule else None
        if rid is not None:
            ev["rule_id"] = rid
        if decision.draw is not None:
            ev["p_draw"] = round(decision.draw, 6)
        q = c.queues[d]
        if act.type in ("forward", "delay", "duplicate", "capture") or (act.type == "close" and act.when == "after"):
            delay_s = act.delay_ms / 1000.0 if act.type == "delay" else 0.0
            release = max(loop_now + delay_s, c.last_release[d])
            c.last_release[d] = release
            if act.type == "delay":
                ev["delay_ms"] = act.delay_ms
            if act.type == "duplicate":
                ev["copies"] = act.copies
            if release > loop_now:  # its own delay, or queued behind a delayed frame (no overtaking)
                ev["held_ms"] = round((release - loop_now) * 1000.0, 3)
            seq = self.emit_frame(ev)
            if after_emit:
                after_emit(seq, True)
            q.put_nowait(Item(release, raw, seq=seq, delayed=release > loop_now, before_write=before_write))
            if act.type == "capture" and len(self.captured) < MAX_CAPTURED:
                self.captured.append(Captured(c.listener, d, raw, seq, rid))
            if act.type == "duplicate":
                for _ in range(act.copies):
                    q.put_nowait(Item(release, raw, seq=seq, delayed=True, before_write=before_write))
            if act.type == "close":
                q.put_nowait(Item(release, kind="close", rst=act.rst, seq=seq))
            return
        if act.type == "hold":
            ev["hold_ms"] = act.hold_ms
            seq = self.emit_frame(ev)
            h = Held(c, d, raw, seq, rid, before_write)
            self.held.append(h)
            if act.hold_ms is not None:
                h.timer = asyncio.get_running_loop().call_later(act.hold_ms / 1000.0, self._release, h, "hold_ms")
            if after_emit:
                after_emit(seq, True)
            return
        seq = self.emit_frame(ev)
        if act.type == "drop_then_blackhole":
            self._blackhole(c, ("c2s", "s2c") if act.mode == "both" else (act.mode,), rid, seq)
        elif act.type == "drop_then_close":
            self._blackhole(c, ("c2s", "s2c"), rid, seq)
            self.emit("close_scheduled", conn=c.ordinal, upstream=c.upstream, rule_id=rid, after_ms=act.after_ms,
                      rst=act.rst, cause_seq=seq)
            c.close_handle = asyncio.get_running_loop().call_later(
                act.after_ms / 1000.0, self._proxy_close, c, rid, act.rst, seq
            )
        elif act.type == "close":  # when=before: this frame is not forwarded
            self._proxy_close(c, rid, act.rst, seq)
        # "drop": nothing else happens
        if after_emit:
            after_emit(seq, False)

    def _blackhole(self, c: WireConn, dirs: tuple[str, ...], rule_id: str | None, cause_seq: int) -> None:
        for d in dirs:
            c.blackhole[d] = True
            c.blackhole_rule[d] = rule_id
        self.emit("blackhole", conn=c.ordinal, upstream=c.upstream, dirs=list(dirs), rule_id=rule_id,
                  cause_seq=cause_seq, **self.conn_fields(c))

    def _proxy_close(self, c: WireConn, rule_id: str | None, rst: bool, cause_seq: int | None) -> None:
        if c.state == CLOSED:
            return
        self.emit("proxy_close", conn=c.ordinal, upstream=c.upstream, rule_id=rule_id, rst=rst,
                  cause_seq=cause_seq, **self.conn_fields(c))
        self._abort(c, "proxy", f"rule:{rule_id}" if rule_id else "control", rst=rst)

    @staticmethod
    def _pass_fin(c: WireConn, d: str) -> None:
        """Client FIN -> half-close upstream (the server may still answer frames we just delivered,
        e.g. a held ConnectRequest: it reads the EOF only after the session is set up); server FIN ->
        close the client side."""
        if d == "c2s" and c.up_w is not None:
            try:
                if c.up_w.can_write_eof():
                    c.up_w.write_eof()
                    return
            except (OSError, RuntimeError):
                pass
            c.up_w.close()
        elif d == "s2c" and c.client_w is not None:
            c.client_w.close()

    # --- writer -------------------------------------------------------------------------------

    def _on_dead_write(self, c: WireConn, d: str, item: Item) -> None:
        """An item whose destination is gone (a protocol may still record its fate)."""

    async def _writer(self, c: WireConn, d: str) -> None:
        q = c.queues[d]
        loop = asyncio.get_running_loop()
        while True:
            item = await q.get()
            if item.kind == "stop":
                return
            if item.kind == "eof":
                if not c.blackhole[d]:  # a partition hides the FIN as well
                    self._pass_fin(c, d)
                return
            wait = item.release_at - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if item.kind == "close":
                self._proxy_close(c, None, item.rst, item.seq)
                return
            if c.discard_held[d] and item.delayed:
                self.emit("frame_discarded", conn=c.ordinal, upstream=c.upstream, dir=d, frame_seq=item.seq,
                          reason="client_closed")
                continue
            if c.dead[d]:
                self._on_dead_write(c, d, item)
                continue
            dst = c.up_w if d == "c2s" else c.client_w
            assert dst is not None
            if item.before_write is not None:
                item.before_write()
            try:
                dst.write(item.data)
                await dst.drain()
            except (ConnectionError, OSError, RuntimeError):
                c.dead[d] = True
                if d == "s2c":
                    c.client_eof = True  # the client is gone
                continue
            if item.delayed:
                self.emit("frame_released", conn=c.ordinal, upstream=c.upstream, dir=d, frame_seq=item.seq)
