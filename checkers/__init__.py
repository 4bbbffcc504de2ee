"""Verdicts: pure checking logic (invariants, models, WGL search, zxid sweeps) and the Spark
drivers that run it partitioned. No SSH, no processes. A checker returns
``{"valid": True | False | "unknown", "anomalies": [...], "stats": {...}}``; composition ranks
False > "unknown" > True.

Project histories: every checker implements ``checkers.checker.Checker`` (a name, the event kinds
and fields it reads from the contract ``history.kinds``, ``check``) and ``checkers.project.
check_histories`` runs them. Reference histories: ``checkers.linearizability``.
"""
