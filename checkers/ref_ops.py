"""Reference histories as Spark rows of operations, read, parsed and paired on the executors in the JVM
(``zkfence.RefOps``, ``checkers/java``): the input of the WGL search (``checkers.ref_search``), with no
Python object per line or per op on the driver, which never reads the files.

A file is one pass in one task, in line order, because pairing is per process over the whole file
(an invocation may wait any number of lines for its completion, or forever); the files of a job
are parsed in parallel, one task each. ``zkfence.RefOps`` follows ``checkers.parsers``' rules and
reads only the canonical line shapes; for any other line or a pairing error it gives one ``err``
row, and the caller parses that history with ``checkers.parsers`` (which reads it or names the
line), so this path never reads a history differently, it only declines.

``part_key`` is what the search partitions the ops by: the key for a model checked per key
(``kv``), else nothing (one part per history).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from checkers.ops import OPEN, UNKNOWN, Op

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

KV, ETCD = "porcupine-kv", "porcupine-etcd"
# The models this path builds ops for, per format; True: checked per key (P-compositionality).
MODELS = {KV: {"kv": True, "kv-nopartition": False}, ETCD: {"etcd": False, "cas-register": False, "register": False}}
# zkfence.RefOps.SCHEMA: a row per op (or one ``err`` row for a history it declines)
OPS = ("hist int, line long, proc long, f string, key string, val string, "
       "ret_line long, ret_typ string, ret_f string, ret_val string, err boolean")


@dataclass(frozen=True)
class RefFile:
    """One reference history for this path: its name in results, path, format and model name."""

    name: str
    path: str
    fmt: str
    model: str

    @property
    def by_key(self) -> bool:
        return MODELS[self.fmt][self.model]


def supported(fmt: str, model: str) -> bool:
    return model in MODELS.get(fmt, {})


def ops(spark: SparkSession, files: Sequence[RefFile]) -> DataFrame:
    """``OPS`` rows of every file: each invocation with the completion paired with it (``ret_*`` null
    when none: open), and an ``err`` row for each file the JVM parser declines."""
    from pyspark.sql import DataFrame

    rows = [(i, f.path, f.fmt) for i, f in enumerate(files)]
    df = spark.createDataFrame(rows, "hist int, path string, fmt string")
    if len(rows) > 1:
        df = df.repartition(len(rows))  # round-robin: a file per task, the files in parallel
    return DataFrame(spark._jvm.zkfence.RefOps.ops(df._jdf), spark)


def part_key(files: Sequence[RefFile]) -> Column:
    """The key of an op's part: its ``key`` in a history checked per key, else null."""
    from pyspark.sql import functions as F

    by_key = [i for i, f in enumerate(files) if f.by_key]
    return F.when(F.col("hist").isin(by_key or [-1]), F.col("key"))


def kv_ops(cols: dict[str, list[Any]], rows: range) -> list[Op]:
    """The kv ops of ``rows`` as ``parsers.parse_porcupine_kv`` builds them (index: rank in the part)."""
    a, b = rows.start, rows.stop
    fs, keys, vals, lines = cols["f"][a:b], cols["key"][a:b], cols["val"][a:b], cols["line"][a:b]
    done = [t == "ok" for t in cols["ret_typ"][a:b]]  # :fail, :info and never completed: open
    rls = cols["ret_line"][a:b]
    # column at a time (zip and comprehensions run in C), then one constructor call per op: building
    # the ops is most of a task's Python work besides the search
    inputs = [(f, k, None if f == "get" else v) for f, k, v in zip(fs, keys, vals, strict=True)]
    outputs = [(rv if rf == "get" else None) if d else UNKNOWN
               for d, rf, rv in zip(done, cols["ret_f"][a:b], cols["ret_val"][a:b], strict=True)]
    rets = [float(r) if d else OPEN for d, r in zip(done, rls, strict=True)]
    ret_lines = [r if d else 0 for d, r in zip(done, rls, strict=True)]
    return list(map(Op, range(b - a), cols["proc"][a:b], fs, inputs, outputs, lines, rets, lines, ret_lines))
