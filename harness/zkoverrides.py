"""ZooKeeper ensemble settings a run or a campaign sets on top of the inventory's ``[zookeeper]``
(``TestSpec.zk_overrides``; ``harness run --zk KEY=VALUE``, a campaign's ``[zookeeper]`` table or a
fault set's ``zookeeper`` table). Pure: the names, their checks and the ``KEY=VALUE`` parser.

Only the zoo.cfg timing settings: the rest of ``ZkSettings`` (java, classpath, source) is how the
servers are installed, an inventory's business. A run with overrides gets its own cluster (the
engine's warm cluster is reused only for runs of the same shape, ``TestSpec.cluster_shape``).
"""

from __future__ import annotations

from typing import Any

from base.bounds import MAX_INT32, shown

# name → what zoo.cfg line it sets (for errors and docs)
ZK_OVERRIDE_KEYS: dict[str, str] = {
    "tick_time_ms": "tickTime",
    "init_limit": "initLimit (ticks)",
    "sync_limit": "syncLimit (ticks)",
    "min_session_timeout_ms": "minSessionTimeout",
    "max_session_timeout_ms": "maxSessionTimeout",
}


def override_error(key: str, value: Any) -> str | None:
    """Why ``key = value`` is not a ZooKeeper override, or None."""
    if key not in ZK_OVERRIDE_KEYS:
        return f"unknown ZooKeeper setting (known: {', '.join(ZK_OVERRIDE_KEYS)})"
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return f"expected a positive integer ({ZK_OVERRIDE_KEYS[key]}), got {shown(value)}"
    if value > MAX_INT32:  # zoo.cfg's values are Java ints
        return f"expected at most {MAX_INT32} ({ZK_OVERRIDE_KEYS[key]}), got {shown(value)}"
    return None


def check_overrides(table: dict[str, Any]) -> tuple[str, str] | None:
    """The first bad ``(key, why)`` of a table of overrides, or None."""
    for k, v in table.items():
        if (why := override_error(k, v)) is not None:
            return k, why
    lo, hi = table.get("min_session_timeout_ms"), table.get("max_session_timeout_ms")
    if lo is not None and hi is not None and lo > hi:
        return "min_session_timeout_ms", f"{lo} is larger than max_session_timeout_ms {hi}"
    return None


def parse_zk_args(items: list[str], where: str = "--zk") -> dict[str, int]:
    """``["sync_limit=100", ...]`` → ``{"sync_limit": 100}``; ValueError naming ``where`` and the key."""
    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ValueError(f"{where} {shown(item)}: expected KEY=VALUE (keys: {', '.join(ZK_OVERRIDE_KEYS)})")
        try:
            value: Any = int(raw.strip()) if len(raw.strip()) <= 40 else raw.strip()  # never thousands of digits
        except ValueError:
            value = raw.strip()
        if (why := override_error(key, value)) is not None:
            raise ValueError(f"{where} {key}: {why}")
        out[key] = value
    if (bad := check_overrides(out)) is not None:
        raise ValueError(f"{where} {bad[0]}: {bad[1]}")
    return out


def as_args(table: dict[str, Any]) -> list[str]:
    """The ``--zk`` flags of a table of overrides, in a fixed order."""
    return [x for k in sorted(table) for x in ("--zk", f"{k}={table[k]}")]
