"""Verdicts: pure checking logic (invariants, models, WGL search, zxid sweeps) and the Spark
drivers that run it partitioned. No SSH, no processes. A checker returns
``{"valid": True | False | "unknown", "anomalies": [...], "stats": {...}}``; composition ranks
False > "unknown" > True.
"""
