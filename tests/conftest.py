"""Shared fixtures: the session-wide SparkSession (created once; see checkers.spark)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():  # noqa: ANN201 - pyspark is imported lazily so unit tests never pay for it
    from checkers.spark import get_spark

    return get_spark("local[2]")
