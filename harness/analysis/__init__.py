"""`harness analyze`: stored runs → a Parquet dataset (``store/analysis/``) → cross-run tables.

``runs`` finds and reads run directories (pure, no Spark); ``dataset`` appends new runs to the
Parquet dataset on Spark, atomically per part file; ``tables`` aggregates it; ``stamp`` keeps the
tables and what they were computed from, so a call with nothing new prints them without Spark. ``job``
is one call's work on a given session (in-process, or on a batch check server's warm one).
"""
