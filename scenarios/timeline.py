"""Render a run's merged history as the JIRA's story: key steps with session ids (hex), czxids and
epochs, relative to the run start, one line each. Frames the wire proxy merely forwarded and
routine chatter are left out; everything shown is cited by its event id."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from history import read_events


def hx(x: Any) -> str:
    if x is None:
        return "-"
    try:
        n = int(x)
    except (TypeError, ValueError):
        return str(x)
    return "-1" if n == -1 else f"{n:#x}"


def _line(e: dict[str, Any]) -> str | None:  # noqa: C901, PLR0911, PLR0912 - one case per event kind
    f, t, v, src = e["f"], e["type"], e.get("value") or {}, e["src"]
    b = v.get("broker_id", e.get("process"))
    if src == "harness":
        if f == "repro_step":
            return f"[bold]step[/]  {v['what']}"
        if f == "run_start":
            return f"[bold]start[/] brokers {v.get('brokers')} registered; toggles {v.get('toggles')}"
        if f == "run_end":
            return f"[bold]end[/]   live brokers {v.get('live_brokers')}"
        if f == "run_error":
            return f"[red]error[/] {v.get('error')}"
        return None
    if src == "nemesis":
        if v.get("stage") != "complete" or v.get("reason") in ("setup", "teardown"):
            return None
        if f == "heal":
            return "[magenta]nemesis[/] heal all"
        return f"[magenta]nemesis[/] {f} {v.get('phase')} {','.join(v.get('targets') or [])}"
    if src == "client":
        if t == "invoke":
            return None
        shown = {k: x for k, x in v.items() if k in ("topic", "partition", "value", "broker", "broker_epoch",
                                                      "offset", "error_code", "error")}
        return f"[white]client[/] {e.get('process')} {f} [bold]{t}[/] {shown}"
    if src == "observer":
        if f != "broker_znode":
            return None
        tag = "final " if v.get("final") else ""
        if v.get("exists"):
            return (f"[cyan]zk[/]    {tag}/brokers/ids/{b} exists: czxid {v.get('czxid')}, "
                    f"owner {hx(v.get('owner'))}")
        return f"[cyan]zk[/]    {tag}/brokers/ids/{b} does not exist"
    if src == "zkproxy":
        if f == "session_established":
            fwd = "reply forwarded" if v.get("forwarded_to_client") else "[bold]ConnectResponse DROPPED[/]"
            return (f"[blue]proxy[/] ZooKeeper created session {hx(v.get('session_id'))} on proxied conn "
                    f"{v.get('conn')} (negotiated {v.get('negotiated_timeout_ms')} ms; {fwd})")
        if f == "frame" and v.get("action") not in (None, "forward"):
            what = v.get("op_name") or v.get("kind")
            extra = f", zxid {v['zxid']}" if v.get("zxid") not in (None, -1) else ""
            extra += f", err {v['err']}" if v.get("err") not in (None, 0) else ""
            return (f"[blue]proxy[/] {v.get('action')} {v.get('dir')} {v.get('kind')} {what} "
                    f"session {hx(v.get('session_id'))}{extra}")
        if f == "blackhole":
            return f"[blue]proxy[/] conn {v.get('conn')} black-holed {v.get('dirs')}"
        return None
    if src == "kafkawire":  # a real broker's ISR change as the Kafka proxy saw it (base.kafkawire)
        if f == "alter_partition":
            isr = [x.get("id") for x in v.get("new_isr_with_epochs") or []]
            return (f"[blue]wire[/]  b{b} AlterPartition {v.get('request_id')} ISR {isr}"
                    f"{' [bold]held[/]' if v.get('held') else ''}, based on fetch {v.get('based_on_fetch')}")
        if f == "alter_partition_handled":
            return (f"[blue]wire[/]  controller b{b} answers AlterPartition {v.get('request_id')}: {v.get('outcome')} "
                    f"error {v.get('error_code')}, ISR {v.get('isr')}, partition epoch {v.get('partition_epoch')}")
        return None
    if not src.startswith("agent:"):
        return None
    a = f"[green]b{b}[/]   "
    if f == "agent_start":  # a real Kafka broker's (parsed from its log) carries no pid
        return f"{a} agent started (pid {v.get('pid')})" if v.get("pid") is not None else f"{a} broker starting"
    if f == "session":
        return f"{a} session {v.get('state')} {hx(v.get('session_id'))}"
    if f == "register":
        if t == "invoke":
            if v.get("pipelined"):
                return (f"{a} registration attempt {v.get('attempt')}: ConnectRequest + multi pipelined to "
                        f"{v.get('addr')} (Netty client emulation)")
            return f"{a} registration attempt {v.get('attempt')} ({v.get('mode')}) on session C={hx(v.get('session_id'))}"
        if t == "ok":
            return (f"{a} [bold green]registered[/]: epoch = czxid {v.get('czxid')}, session C={hx(v.get('session_id'))}, "
                    f"R was {hx(v.get('recorded_session'))}, owner {hx(v.get('owner'))}"
                    f"{' (node existed)' if v.get('path_existed') else ''}")
        if t == "fail":
            return (f"{a} [bold red]registration failed[/] {v.get('error')}: owner O={hx(v.get('owner'))}, "
                    f"current C={hx(v.get('session_id'))}, recorded R={hx(v.get('recorded_session'))}"
                    f"{' — permanent' if v.get('permanent') else ' — will retry'}")
        return f"{a} registration outcome unknown: {v.get('error')} (session {hx(v.get('session_id'))})"
    if f == "pipeline_register":
        learned = v.get("session_learned")
        timed_out = ', timed out ("session 0x0")' if v.get("timed_out") else ""
        return (f"{a} pipelined connect: session {'learned ' + hx(v.get('session_id')) if learned else 'NEVER learned'}"
                f"{timed_out}, multi err {v.get('multi_err')}")
    if f == "register_delete":
        return (f"{a} KAFKA-7165 delete of /brokers/ids/{b} owned by {hx(v.get('owner'))} "
                f"(C={hx(v.get('session_id'))}, R={hx(v.get('recorded_session'))}): {v.get('result')}")
    if f == "deregistered":
        return f"{a} deregistered (epoch {v.get('epoch')}, session {hx(v.get('session_id'))}): {v.get('reason')}"
    if f == "controller_elected":
        return f"{a} elected controller, controller epoch {v.get('controller_epoch')}"
    if f == "broker_change":
        return (f"{a} controller BrokerChange: live {v.get('live')}, new {v.get('new')}, dead {v.get('dead')}, "
                f"bounced {v.get('bounced')}")
    if f == "control_send":
        return (f"{a} controller sends {v.get('kind')} {v.get('request_id')} → b{v.get('target')} "
                f"broker_epoch {v.get('broker_epoch')}{' (full)' if v.get('full') else ''}")
    if f == "control_recv":
        return (f"{a} {v.get('outcome')} {v.get('kind')} {v.get('request_id')} broker_epoch {v.get('broker_epoch')} "
                f"(own epoch {v.get('own_epoch')}), error {v.get('error_code')}")
    if f == "controlled_shutdown_handled":
        return (f"{a} controller handled ControlledShutdown of b{v.get('broker_id')} epoch {v.get('broker_epoch')} "
                f"(cached {v.get('cached_epoch')}): {v.get('outcome')}, error {v.get('error_code')}, "
                f"leader moves {v.get('leader_moves')}, StopReplica {v.get('stop_replicas')}")
    if f == "alter_partition_handled":
        return (f"{a} controller AlterPartition {v.get('request_id')}: {v.get('outcome')} error "
                f"{v.get('error_code')}, ISR {v.get('isr')}, live {v.get('live')}")
    if f == "partition_state":
        return (f"{a} partition {v.get('topic')}-{v.get('partition')} state: leader {v.get('leader')}, "
                f"leader_epoch {v.get('leader_epoch')}, ISR {v.get('isr')}")
    if f == "replica_state" and v.get("role") == "stopped":
        return (f"{a} [bold red]replica {v.get('topic')}-{v.get('partition')} STOPPED[/] by "
                f"{v.get('request_id')}{' (deleted)' if v.get('deleted') else ''}")
    if f == "startup_failed":
        return f"{a} [red]startup failed[/]: {v.get('reason')}"
    return None


def render(history: Path, extra_fs: tuple[str, ...] = ()) -> list[str]:
    events = [{**asdict(e), "id": e.id} for e in read_events(history)]
    start = next((e["t_wall"] for e in events if e["f"] == "run_start"), events[0]["t_wall"] if events else 0.0)
    out = []
    for e in events:
        v = e.get("value") or {}
        routine = e["f"] in ("partition_state", "control_send") or (
            e["f"] == "control_recv" and v.get("kind") != "StopReplica" and v.get("outcome") == "applied")
        if routine and e["f"] not in extra_fs:
            continue
        text = _line(e)
        if text is None:
            continue
        out.append(f"  {e['t_wall'] - start:+7.2f}s {text}  [dim]{e['id']}[/]")
    return out
