"""The register workload's checker (``workloads.register``): linearizability of ZooKeeper registers,
the P-compositional WGL search on Spark, one task part per key (``checkers.wgl_workload``).

Reads the client ops ``reg_read``, ``reg_write``, ``reg_cas`` (docs/events.md) and turns each
invoke + completion into a WGL op:

* ok: the op with its output (a read's (value, version), a write's or cas's new version);
* fail: a cas's BadVersion is kept (output False: it says the version was not ``expected``);
  every other fail certainly did not happen and is dropped;
* info (or no completion): a write or cas is open until the end (it may or may not have taken
  effect); a read is dropped (it changed nothing).

An illegal key's anomaly cites the op the search could not linearize (invoke and completion ids)
and, when that op is a read, the op that proves it stale: the write or cas that had already
completed with a later version before the read began or, when none had (the later version's write
was still pending, or its outcome unknown), a read that had returned a later version before it
began. A history without register ops has ``register_ops`` 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from checkers.models import VersionedRegister
from checkers.ops import UNKNOWN, Op
from checkers.wgl_workload import Row, WorkloadLinearizable

NAME = "register_linearizable"
KINDS = {"reg_read": "read", "reg_write": "write", "reg_cas": "cas"}
READS = {"reg_read": ("key", "mode", "server", "value", "version"),
         "reg_write": ("key", "server", "value", "version"),
         "reg_cas": ("error", "expected", "key", "server", "value", "version")}


def register_op(inv: Row, done: Row | None) -> tuple[str, Any, Any] | None:
    f = KINDS[inv["f"]]
    typ = done["type"] if done is not None else "info"
    src = done if done is not None else inv
    if typ == "fail" and not (f == "cas" and src.get("v_error") == "bad version"):
        return None  # certainly did not happen
    if typ == "info" and f == "read":
        return None  # changed nothing
    value = inv["v_value"]
    arg = None if f == "read" else value if f == "write" else (src.get("v_expected"), value)
    if typ == "ok":
        out: Any = (src["v_value"], src["v_version"]) if f == "read" else src["v_version"]
    else:
        out = False if typ == "fail" else UNKNOWN
    return f, (f, inv["v_key"], arg), out


def stale_witnesses(ops: list[Op], blocker: Op) -> list[Op]:
    """For a read that cannot be linearized: the latest op of its key that completed before the read
    was invoked with a later version than the read returned (it read a state older than that op
    saw). A write or cas is preferred; a read is the witness only when no write or cas is: with
    plain reads, a server that is ahead can show a write before its client hears it succeeded."""
    if blocker.f != "read" or blocker.output is UNKNOWN:
        return []
    _, version = blocker.output
    key = blocker.input[1]

    def seen(o: Op) -> int | None:
        if o.input[1] != key or o.ret >= blocker.call:
            return None
        if o.f == "read":
            return o.output[1] if isinstance(o.output, tuple) else None
        return o.output if isinstance(o.output, int) and not isinstance(o.output, bool) else None

    later = [o for o in ops if (v := seen(o)) is not None and v > version]
    writes = [o for o in later if o.f != "read"]
    return sorted(writes or later, key=lambda o: -o.ret)[:1]


def explain_stale_read(ops: list[Op], blocker: Op, describe: Callable[[Op], str]) -> tuple[str, list[Op]]:
    stale = stale_witnesses(ops, blocker)
    if not stale:
        return "", []
    w = stale[0]
    version = w.output[1] if w.f == "read" else w.output
    return f"stale read: {describe(blocker)} began after {describe(w)} had completed (version {version})", stale


REGISTER = WorkloadLinearizable(NAME, READS, register_op, VersionedRegister, "register_ops", explain_stale_read)
