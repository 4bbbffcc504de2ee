"""Sequential specifications, Porcupine style: ``init()``, ``step(state, input, output) -> (ok, state)``,
``partition(ops) -> [(key, ops)]``. States are hashable (the WGL cache compares them).

An ``output`` of UNKNOWN means the op's outcome is unknown: the step must accept it whenever the
op could have taken effect (the search may also leave an open op out entirely).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from checkers.ops import UNKNOWN, Op


class Model:
    name = "model"

    def init(self) -> Any:
        raise NotImplementedError

    def step(self, state: Any, inp: Any, out: Any) -> tuple[bool, Any]:
        raise NotImplementedError

    def partition(self, ops: Sequence[Op]) -> list[tuple[Any, list[Op]]]:
        return [(None, list(ops))]

    def __repr__(self) -> str:
        return self.name


class Register(Model):
    """inputs ("read", None) / ("write", v); a read's output is the value, None = "any" if nil_reads_any."""

    name = "register"

    def __init__(self, initial: Any = None, nil_reads_any: bool = True) -> None:
        self.initial = initial
        self.nil_reads_any = nil_reads_any

    def init(self) -> Any:
        return self.initial

    def step(self, state: Any, inp: Any, out: Any) -> tuple[bool, Any]:
        f, arg = inp
        if f == "read":
            return (out is UNKNOWN or out == state or (out is None and self.nil_reads_any)), state
        if f == "write":
            return True, arg
        return False, state


class CasRegister(Register):
    """Adds ("cas", (from, to)) with output True (swapped), False (value was not ``from``) or UNKNOWN.

    Porcupine's etcd model: starts nil and a read of nil is a real answer. Knossos' cas-register:
    starts at 0 and a read of nil is always legal.
    """

    name = "cas-register"

    def step(self, state: Any, inp: Any, out: Any) -> tuple[bool, Any]:
        if inp[0] == "cas":
            frm, to = inp[1]
            if out is UNKNOWN:
                return True, (to if state == frm else state)
            if out:
                return state == frm, to
            return state != frm, state
        return Register.step(self, state, inp, out)


class MultiRegister(Model):
    """Knossos multi-register: input is a txn tuple of (f, key, value); output the read values."""

    name = "multi-register"

    def __init__(self, initial: dict[Any, Any] | None = None) -> None:
        self.initial = tuple(sorted((initial or {}).items()))

    def init(self) -> Any:
        return self.initial

    def step(self, state: Any, inp: Any, out: Any) -> tuple[bool, Any]:
        d = dict(state)
        for i, (f, k, v) in enumerate(inp):
            if f == "read":
                got = UNKNOWN if out is UNKNOWN else out[i]
                if got is not UNKNOWN and got is not None and d.get(k) != got:
                    return False, state
            elif f == "write":
                d[k] = v
            else:
                return False, state
        return True, tuple(sorted(d.items()))


class KeyValue(Model):
    """Porcupine kv: input (f, key, value) with f get/put/append; output the string a get read.

    Partitionable by key: each part's state is one string (starting "").
    """

    name = "kv"

    def __init__(self, partitioned: bool = True) -> None:
        self.partitioned = partitioned

    def init(self) -> Any:
        return "" if self.partitioned else ()

    def partition(self, ops: Sequence[Op]) -> list[tuple[Any, list[Op]]]:
        if not self.partitioned:
            return [(None, list(ops))]
        parts: dict[Any, list[Op]] = defaultdict(list)
        for op in ops:
            parts[op.input[1]].append(op)
        return sorted(parts.items(), key=lambda kv: str(kv[0]))

    def _step1(self, cur: str, f: str, v: str, out: Any) -> tuple[bool, str]:
        if f == "get":
            return (out is UNKNOWN or out == cur), cur
        if f == "put":
            return True, v
        if f == "append":
            return True, cur + v
        return False, cur

    def step(self, state: Any, inp: Any, out: Any) -> tuple[bool, Any]:
        f, key, v = inp
        if self.partitioned:
            return self._step1(state, f, v, out)
        d = dict(state)
        ok, new = self._step1(d.get(key, ""), f, v, out)
        d[key] = new
        return ok, tuple(sorted(d.items()))


class Mutex(Model):
    """acquire is legal when free, release when held (outputs are ignored)."""

    name = "mutex"

    def init(self) -> Any:
        return False

    def step(self, state: Any, inp: Any, out: Any) -> tuple[bool, Any]:
        f = inp[0]
        if f == "acquire":
            return (not state), True
        if f == "release":
            return bool(state), False
        return False, state


def parts_by_key(ops: Sequence[Op]) -> list[tuple[Any, list[Op]]]:
    """P-compositionality over the key of inputs ``(f, key, arg)``: one part per key."""
    parts: dict[Any, list[Op]] = defaultdict(list)
    for op in ops:
        parts[op.input[1]].append(op)
    return sorted(parts.items(), key=lambda kv: str(kv[0]))


class VersionedRegister(Model):
    """ZooKeeper znodes as registers (``workloads.register``): the state is (value, version),
    starting (None, 0) (created empty). Inputs ``(f, key, arg)``, partitioned by key:

    * ``("read", key, None)`` → output ``(value, version)``: must equal the state;
    * ``("write", key, value)`` → output the new version: the state's version + 1;
    * ``("cas", key, (expected, value))`` → output the new version (the state's version was
      ``expected``), or False (it was not: BadVersion). ``expected`` None: unknown, any version.

    UNKNOWN outputs (timeouts) take effect when the op could have (the search may also leave
    them out).
    """

    name = "versioned-register"

    def init(self) -> Any:
        return (None, 0)

    def partition(self, ops: Sequence[Op]) -> list[tuple[Any, list[Op]]]:
        return parts_by_key(ops)

    def step(self, state: Any, inp: Any, out: Any) -> tuple[bool, Any]:
        f, _, arg = inp
        value, version = state
        if f == "read":
            return (out is UNKNOWN or tuple(out) == state), state
        if f == "write":
            return (out is UNKNOWN or out == version + 1), (arg, version + 1)
        if f == "cas":
            expected, new = arg
            matches = expected is None or expected == version
            if out is False:
                return expected is not None and expected != version, state
            return matches and (out is UNKNOWN or out == version + 1), (new, version + 1)
        return False, state


class PartitionLog(Model):
    """Kafka partitions as append-only logs (``workloads.queue``): the state is the tuple of values
    at offsets 0, 1, …, starting empty. Inputs ``(f, partition, arg)``, partitioned by partition:

    * ``("send", p, value)`` → output the offset the broker gave it: the log's length; appends it;
    * ``("read", p, offset)`` → output ``((offset, value), …)``: consecutive offsets from ``offset``
      holding those values, a prefix of the log from there (a poll reads up to the leader's high
      watermark, which may lag the log);
    * ``("read_all", p, None)`` → the same, and the whole log (the final read, after every heal).

    An UNKNOWN send (timed out, or acks=1: a leader's acknowledgement promises nothing after it
    fails) appends wherever it is linearized, or is left out.
    """

    name = "partition-log"

    def init(self) -> Any:
        return ()

    def partition(self, ops: Sequence[Op]) -> list[tuple[Any, list[Op]]]:
        return parts_by_key(ops)

    def step(self, state: Any, inp: Any, out: Any) -> tuple[bool, Any]:
        f, _, arg = inp
        if f == "send":
            return (out is UNKNOWN or out == len(state)), (*state, arg)
        if f in ("read", "read_all"):
            start = arg or 0
            end = start + len(out)
            if end > len(state) or (f == "read_all" and (start != 0 or end != len(state))):
                return False, state
            return all(o == start + i and state[o] == v for i, (o, v) in enumerate(out)), state
        return False, state


MODELS = {
    "register": lambda: Register(None, nil_reads_any=True),
    "cas-register": lambda: CasRegister(0, nil_reads_any=True),
    "etcd": lambda: CasRegister(None, nil_reads_any=False),
    "multi-register": lambda: MultiRegister({"x": 0, "y": 0}),
    "kv": lambda: KeyValue(partitioned=True),
    "kv-nopartition": lambda: KeyValue(partitioned=False),
    "mutex": Mutex,
    "versioned-register": VersionedRegister,
    "partition-log": PartitionLog,
}


def make_model(name: str) -> Model:
    try:
        return MODELS[name]()
    except KeyError:
        raise ValueError(f"unknown model {name!r}; one of {', '.join(sorted(MODELS))}") from None
