"""Cross-run tables over the checks dataset."""

from __future__ import annotations

import csv
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Rate:
    checker: str
    toggles: str
    faults: str
    runs: int
    invalid: int
    unknown: int

    @property
    def rate(self) -> float:
        return self.invalid / self.runs if self.runs else 0.0


def anomaly_rates(checks: DataFrame) -> list[Rate]:
    """Anomaly rate (runs where the checker said invalid ÷ runs it checked) per checker × toggle
    set × fault type, sorted by rate descending."""
    from pyspark.sql import functions as F

    agg = (checks.groupBy("checker", "toggles", "faults")
           .agg(F.countDistinct("run_dir").alias("runs"),
                F.countDistinct(F.when(F.col("valid") == "invalid", F.col("run_dir"))).alias("invalid"),
                F.countDistinct(F.when(F.col("valid") == "unknown", F.col("run_dir"))).alias("unknown")))
    rates = [Rate(r["checker"], r["toggles"], r["faults"], r["runs"], r["invalid"], r["unknown"]) for r in agg.collect()]
    return sorted(rates, key=lambda r: (-r.rate, r.checker, r.toggles, r.faults))


def write_csv(rates: list[Rate], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".csv.part")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*(fl.name for fl in fields(Rate)), "rate"])
        for r in rates:
            w.writerow([*astuple(r), f"{r.rate:.4f}"])
    tmp.replace(path)


def render(rates: list[Rate]) -> object:
    from rich.table import Table

    t = Table(title="anomaly rate per checker × toggle set × fault type")
    for col in ("checker", "toggles", "faults", "runs", "invalid", "unknown", "rate"):
        t.add_column(col, justify="right" if col in ("runs", "invalid", "unknown", "rate") else "left")
    for r in rates:
        t.add_row(r.checker, r.toggles, r.faults, str(r.runs), str(r.invalid), str(r.unknown), f"{r.rate:.0%}")
    return t
