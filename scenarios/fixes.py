"""Which released Kafka carries each reproduced JIRA's fix, and what `--fixed` models.

Read from apache/kafka's history: the first release tag containing the fix commit, and for
unmerged or partial fixes the code as released (3.9.0, the last release with ZooKeeper mode).
`harness repro --list` prints these lines; docs/repro.md gives the commits.
"""

from __future__ import annotations

FIX_STATUS: dict[str, str] = {
    "KAFKA-14845": "no release carries a fix: apache/kafka PR #13558 was closed unmerged, and 3.9.0's "
    "CheckedEphemeral still gives up on a foreign owner; --fixed runs the PR's last commit "
    "(5 attempts in all, 4 backoffs of (T + 1 s)/5)",
    "KAFKA-6584": "fixed in 2.2.0 (KAFKA-7165, commit eb3335ef592: delete and re-create an ephemeral "
    "owned by the recorded session); --fixed runs that logic (registration=3x)",
    "KAFKA-7235": "fixed in 2.2.0 (KIP-380, commit 2155c6d54b0: broker epochs in control requests); "
    "--fixed runs broker_epoch_check=on",
    "KAFKA-14139": "fixed for KRaft only, in 3.5.0 (KIP-903, commits 79b5f7f1ce2, 8c88cdb7186, d5e216d6183); "
    "the ZooKeeper-mode controller never checks broker epochs on AlterPartition (3.9.0 source), so "
    "--fixed (isr_epoch_check=kip903) is KIP-903's rule moved into the ZooKeeper controller, which "
    "no release does",
}


def fix_status(jira: str) -> str:
    return FIX_STATUS.get(jira, "fix status not recorded")
