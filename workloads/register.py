"""The register workload (Jepsen's ZooKeeper test): ZooKeeper itself as a set of linearizable registers.

Each key is one znode under ``REGISTER_ROOT``; its register value is the znode's data and its
version the znode's ``version``, so every write is observable as a (value, version) pair.
Clients run on the control node, each connected to ONE ZooKeeper server (process ``p`` to server
``p % servers``) through its Toxiproxy link ``client->zk<M>`` (and the wire proxy under it with
``--zkproxy``).

* setup: ``reg_create`` {key} per key: the znode (re)created empty, version 0.
* ``reg_read`` {key, mode}: ``mode`` ``sync`` calls ``sync(path)`` first (the server catches up
  with the leader), ``plain`` reads whatever the connected server has: ZooKeeper promises only
  sequentially consistent reads. ok carries ``value`` (null when empty) and ``version``.
* ``reg_write`` {key, value}: an unconditional ``set``; ok carries the new ``version``.
* ``reg_cas`` {key, value}: ``set`` with ``expected`` = the version this process last saw for the
  key (0 before any); ok carries the new ``version``, fail means BadVersion (it certainly did not
  happen). The completion carries ``expected`` (the invoke cannot: the client picks it).

A timeout or a lost connection is ``info`` (a write may or may not have happened) and the runner
replaces the process; an op that could not even connect is ``fail``. The generator is called by
every client thread at once; its state (the ops handed to each process, the throttle) is an
``OpCounter`` behind one lock. Process ``p``'s ``k``-th op is picked from a fixed mix of (p, k):
half reads, the rest writes and cas, over ``keys`` keys, values ``"p<p>-<k>"`` (unique).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any

from workloads.base import FAIL, INFO, OK, Op, OpCounter, Workload
from workloads.catalog import Option, WorkloadDef

REGISTER_ROOT = "/zkfence/register"
KEYS = 3
DEFAULT_CONCURRENCY = 6
READ_MODES = ("sync", "plain")
REGISTER_CHECKERS = ("register_linearizable",)


def key_path(key: str) -> str:
    return f"{REGISTER_ROOT}/{key}"


@dataclass
class RegisterGenerator:
    """Thread-safe: the next op from (process, elapsed) and the ops already handed out (an
    ``OpCounter``, locked)."""

    keys: int = KEYS
    concurrency: int = DEFAULT_CONCURRENCY
    rate: float | None = None
    reads: str = "sync"
    _ops: OpCounter = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._ops = OpCounter(self.concurrency, self.rate)

    def next_op(self, process: int, elapsed: float) -> Op | None:
        k = self._ops.take(process, elapsed)
        if isinstance(k, Op):  # the throttle's sleep
            return k
        key = f"k{(process + k) % self.keys}"
        mix = (process * 7 + k * 3) % 10  # 5 reads, 3 writes, 2 cas in every 10 of a process's ops
        if mix < 5:
            return Op("reg_read", {"key": key, "mode": self.reads})
        return Op("reg_write" if mix < 8 else "reg_cas", {"key": key, "value": f"p{process}-{k}"})


def setup_ops(keys: int = KEYS) -> tuple[Op, ...]:
    return tuple(Op("reg_create", {"key": f"k{i}"}) for i in range(keys))


class RegisterClient:
    """One process's ZooKeeper session (kazoo) to one server, and the versions it last saw."""

    def __init__(self, op_timeout: float = 3.0, session_timeout: float = 10.0, connect_timeout: float = 5.0) -> None:
        self.op_timeout = op_timeout
        self.session_timeout = session_timeout
        self.connect_timeout = connect_timeout
        self.server = ""
        self._address = ""
        self._zk: Any = None
        self._versions: dict[str, int] = {}

    def open(self, ctx: Any, process: int | str) -> RegisterClient:
        servers = ctx.cluster.client_zk_links()
        c = RegisterClient(self.op_timeout, self.session_timeout, self.connect_timeout)
        c.server, c._address = servers[process % len(servers) if isinstance(process, int) else 0]
        return c

    def _connect(self) -> Any:
        if self._zk is None:
            from kazoo.client import KazooClient

            zk = KazooClient(hosts=self._address, timeout=self.session_timeout)
            try:
                zk.start(timeout=self.connect_timeout)
            except Exception:
                _stop(zk)
                raise
            self._zk = zk
        return self._zk

    def invoke(self, op: Op) -> Op:
        handler = {"reg_create": self._create, "reg_read": self._read, "reg_write": self._write,
                   "reg_cas": self._cas}.get(op.f)
        if handler is None:
            raise ValueError(f"register: no operation {op.f!r}")
        extra: dict[str, Any] = {"server": self.server}
        if op.f == "reg_cas":  # the version this process last saw; carried by every completion
            extra["expected"] = self._versions.get(op.value["key"], 0)
        op = replace(op, value={**op.value, **extra})
        try:
            zk = self._connect()
        except Exception as e:  # noqa: BLE001 - never connected: nothing was sent
            return op.complete(FAIL, error=f"connect {self._address}: {type(e).__name__}: {e}")
        from kazoo.exceptions import BadVersionError, NoNodeError

        try:
            return handler(zk, op)
        except BadVersionError:
            return op.complete(FAIL, error="bad version")
        except NoNodeError:
            return op.complete(FAIL, error="no node")
        except Exception as e:  # noqa: BLE001 - a timeout or a lost connection: the outcome is unknown
            return op.complete(INFO, error=f"{type(e).__name__}: {e}")

    def _create(self, zk: Any, op: Op) -> Op:
        from kazoo.exceptions import NodeExistsError

        path = key_path(op.value["key"])
        try:
            zk.create(path, b"", makepath=True)
        except NodeExistsError:  # a previous run's register: start over at version 0
            zk.delete(path)
            zk.create(path, b"", makepath=True)
        return op.complete(OK, version=0)

    def _read(self, zk: Any, op: Op) -> Op:
        path = key_path(op.value["key"])
        if op.value.get("mode", "sync") == "sync":
            zk.sync_async(path).get(timeout=self.op_timeout)
        data, stat = zk.get_async(path).get(timeout=self.op_timeout)
        self._versions[op.value["key"]] = stat.version
        return op.complete(OK, value=data.decode() if data else None, version=stat.version)

    def _write(self, zk: Any, op: Op) -> Op:
        stat = zk.set_async(key_path(op.value["key"]), op.value["value"].encode(), -1).get(timeout=self.op_timeout)
        self._versions[op.value["key"]] = stat.version
        return op.complete(OK, version=stat.version)

    def _cas(self, zk: Any, op: Op) -> Op:
        stat = zk.set_async(key_path(op.value["key"]), op.value["value"].encode(), op.value["expected"]) \
            .get(timeout=self.op_timeout)
        self._versions[op.value["key"]] = stat.version
        return op.complete(OK, version=stat.version)

    def close(self) -> None:
        zk, self._zk = self._zk, None
        if zk is not None:
            # closing a session through a cut link waits for the connection to give up: bounded, in
            # the background, so a retired process never holds up the run
            t = threading.Thread(target=_stop, args=(zk,), name="register-close", daemon=True)
            t.start()
            t.join(self.op_timeout)


def _stop(zk: Any) -> None:
    try:
        zk.stop()
        zk.close()
    except Exception:  # noqa: BLE001, S110 - best effort: the session expires on its own
        pass


def register_workload(concurrency: int = DEFAULT_CONCURRENCY, rate: float | None = None, reads: str = "sync",
                      keys: int = KEYS) -> Workload:
    if concurrency <= 0:
        raise ValueError(f"concurrency must be > 0, got {concurrency}")
    if rate is not None and rate <= 0:
        raise ValueError(f"rate must be > 0 ops/s, got {rate}")
    if reads not in READ_MODES:
        raise ValueError(f"reads must be one of {', '.join(READ_MODES)}, not {reads!r}")
    gen = RegisterGenerator(keys, concurrency, rate, reads)
    return Workload("register", RegisterClient(), gen, concurrency, REGISTER_CHECKERS, setup=setup_ops(keys))


# `harness run --workload register`: its options, and how the command line builds it (workloads.DEFINITIONS)
DEFINITION = WorkloadDef("register", register_workload, DEFAULT_CONCURRENCY, (
    Option("reads", "sync", "register workload reads: sync (sync(path) then get: linearizable) or plain (the "
           "connected server's view: sequentially consistent)", choices=READ_MODES),))
