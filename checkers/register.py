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
and, when that op is a read, the ops that prove it stale (``stale_witnesses``): a write or cas that
had already completed with a later version before the read began or, when none had (the later
version's write was still pending, or its outcome unknown), a read that had returned a later
version, or a cas expecting the read's version that had failed. A history without register ops has
``register_ops`` 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from checkers.models import VersionedRegister
from checkers.ops import UNKNOWN, Op
from checkers.wgl_workload import Row, Undecided, WorkloadLinearizable

NAME = "register_linearizable"
KINDS = {"reg_read": "read", "reg_write": "write", "reg_cas": "cas"}
READS = {"reg_read": ("key", "mode", "server", "value", "version"),
         "reg_write": ("key", "server", "value", "version"),
         "reg_cas": ("error", "expected", "key", "server", "value", "version")}


def register_op(inv: Row, done: Row | None) -> tuple[str, Any, Any] | Undecided | None:
    f = KINDS[inv["f"]]
    typ = done["type"] if done is not None else "info"
    src = done if done is not None else inv
    if typ == "fail" and not (f == "cas" and src.get("v_error") == "bad version"):
        return None  # certainly did not happen
    if typ == "info" and f == "read":
        return None  # changed nothing
    key, value = inv["v_key"], inv["v_value"]
    if key is None or (f != "read" and value is None):  # a write nobody can place could explain any read
        what = "no key" if key is None else "no value"
        return Undecided(f"a {f} with {what}: left out", fatal=f != "read")
    expected = src.get("v_expected")
    if typ == "fail":  # a cas's BadVersion: it changed nothing
        if expected is None:
            return Undecided("a failed cas without its expected version: left out")
        return f, (f, key, (expected, value)), False
    arg = None if f == "read" else value if f == "write" else (expected, value)
    if typ != "ok":
        return f, (f, key, arg), UNKNOWN
    version = src["v_version"]
    as_write = f == "cas" and expected is None  # it succeeded: it set the value, whatever it expected
    if version is None:
        if f == "read":
            return Undecided("a read without its version: left out")
        return Undecided(f"an acknowledged {f} without its new version: searched as of unknown outcome",
                         op=("write", ("write", key, value), UNKNOWN) if as_write else (f, (f, key, arg), UNKNOWN))
    if as_write:
        return Undecided("an acknowledged cas without its expected version: searched as a write",
                         op=("write", ("write", key, value), version))
    return f, (f, key, arg), (src["v_value"], version) if f == "read" else version


def _done_before(o: Op, key: str, before: float) -> bool:
    return o.input[1] == key and o.ret < before


def _seen(o: Op, key: str, before: float) -> int | None:
    """The version ``o`` showed, if it is an op of ``key`` that completed before ``before``: a write's
    or cas's new version, a read's version."""
    if not _done_before(o, key, before):
        return None
    if o.f == "read":
        return o.output[1] if isinstance(o.output, tuple) else None
    return o.output if isinstance(o.output, int) and not isinstance(o.output, bool) else None


def _latest(ops: list[Op]) -> list[Op]:
    return sorted(ops, key=lambda o: -o.ret)[:1]


def stale_witnesses(ops: list[Op], blocker: Op) -> list[Op]:
    """For a read that cannot be linearized, the ops of its key that prove it read a state older than
    one already left before it was invoked, the latest first:

    * a write or cas that had completed with a later version;
    * else a read that had returned a later version (with plain reads, a server that is ahead
      shows a write before its writer hears it succeeded);
    * else a cas expecting the read's version that had failed (BadVersion: the version was no longer
      that) together with the op that showed it had reached that version before the cas began (none
      needed for version 0, where every register starts)."""
    if blocker.f != "read" or blocker.output is UNKNOWN:
        return []
    _, version = blocker.output
    key = blocker.input[1]
    later = [o for o in ops if (v := _seen(o, key, blocker.call)) is not None and v > version]
    if later:
        return _latest([o for o in later if o.f != "read"] or later)
    failed = [o for o in ops if o.f == "cas" and o.output is False and _done_before(o, key, blocker.call)
              and o.input[2][0] == version]
    for cas in sorted(failed, key=lambda o: -o.ret):
        if version == 0:
            return [cas]
        basis = _latest([o for o in ops if (v := _seen(o, key, cas.call)) is not None and v >= version])
        if basis:
            return [cas, *basis]
    return []


def explain_stale_read(ops: list[Op], blocker: Op, describe: Callable[[Op], str]) -> tuple[str, list[Op]]:
    stale = stale_witnesses(ops, blocker)
    if not stale:
        return "", []
    w, read = stale[0], describe(blocker)
    if w.output is not False:
        version = w.output[1] if w.f == "read" else w.output
        return f"stale read: {read} began after {describe(w)} had completed (version {version})", stale
    _, version = blocker.output
    why = f"the version was no longer {version}"
    if len(stale) > 1:
        why += f", which {describe(stale[1])} had shown before the cas began"
    return f"stale read: {read} began after {describe(w)} had failed ({why})", stale


REGISTER = WorkloadLinearizable(NAME, READS, register_op, VersionedRegister, "register_ops", explain_stale_read)
