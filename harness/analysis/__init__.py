"""`harness analyze`: stored runs → a Parquet dataset (``store/analysis/``) → cross-run tables.

``runs`` finds and reads run directories (pure, no Spark); ``dataset`` appends new runs to the
Parquet dataset on Spark, atomically per part file; ``tables`` aggregates it.
"""
