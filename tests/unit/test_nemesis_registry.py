"""The fault registry is the one place a fault's facts live: what derives from it says the same as the
hand-kept lists it replaced, and every nemesis handles exactly its kind's rows."""

from __future__ import annotations

from nemesis.kafkaproxy_faults import KafkaProxyNemesis
from nemesis.nemeses import default_nemeses
from nemesis.packages import DEFAULT_FAULTS, PACKAGEABLE
from nemesis.registry import (
    FAULTS,
    crash_heals,
    external_only,
    faults_of,
    grudge_faults,
    instant_faults,
    roles,
)
from nemesis.search import HUNT_FAULTS
from nemesis.zkproxy_faults import ZkProxyNemesis


def test_every_fault_is_handled_by_exactly_one_nemesis_of_its_kind() -> None:
    handled = [f for n in [*default_nemeses(), ZkProxyNemesis(client=None),  # type: ignore[arg-type]
                           KafkaProxyNemesis(client=None)] for f in n.fs]  # type: ignore[arg-type]
    orphans = [f"{f} (kind {spec.kind})" for f, spec in FAULTS.items() if f not in handled]
    assert not orphans, (f"no nemesis handles {', '.join(orphans)}: give its nemesis fs = faults_of(kind) and add it "
                         "to nemesis.nemeses.default_nemeses")
    twice = sorted({f for f in handled if handled.count(f) > 1})
    assert not twice, f"faults handled by two nemeses: {twice}"
    assert faults_of("agent") == {"hold_controller", "hold_alter_partition", "delay_request"}


def test_the_derived_lists_are_the_ones_they_replaced() -> None:
    assert HUNT_FAULTS == ("isolate", "pause", "partition", "kill")
    assert DEFAULT_FAULTS == ("partition", "kill", "pause")
    assert PACKAGEABLE[:13] == ("isolate", "partition", "net_partition", "latency", "bandwidth", "reset_peer",
                                "slow_close", "kill", "pause", "shutdown", "bounce", "fast_bounce", "wipe")
    assert instant_faults() == {"bounce", "fast_bounce", "wipe"}
    assert grudge_faults() == {"partition", "net_partition"}
    assert external_only() == {"net_partition"}
    assert roles() == {"wipe": "broker", "hold_controller": "broker", "hold_alter_partition": "broker",
                       "delay_request": "broker", "hold_control": "broker", "drop_control": "broker",
                       "delay_alter_partition": "broker", "replay_control": "broker"}
    assert len(crash_heals()) == 1 and "nft delete table" in crash_heals()[0]


def test_docs_nemesis_md_has_a_row_per_fault() -> None:
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "nemesis.md").read_text()
    table = text.split("## Faults", 1)[1].split("\n## ", 1)[0]
    documented = {name for row in table.splitlines() if row.startswith("| `")
                  for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    missing = [f for f in FAULTS if f not in documented]
    assert not missing, f"docs/nemesis.md's fault table has no row for {', '.join(missing)}: add one"
    unknown = sorted(documented - set(FAULTS))
    assert not unknown, f"docs/nemesis.md's fault table has rows for {', '.join(unknown)}, not in nemesis.registry.FAULTS"
