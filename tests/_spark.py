"""A shared local Spark session for the tests (local[2]), started on first use."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

_SESSION: list[Any] = []


def spark_session() -> Any:
    """The session, or skip with the reason Spark cannot run here."""
    if _SESSION:
        return _SESSION[0]
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        pytest.skip('pyspark is not installed: pip install "dptree[spark]" (scripts/test.sh does)')
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java: install a JRE (scripts/test.sh does: apt-get install default-jre-headless)")
    spark = (
        SparkSession.builder.master("local[2]").appName("dptree-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    _SESSION.append(spark)
    return spark


def spark_frame(columns: dict[str, Any]) -> Any:
    """A Spark DataFrame of numpy/list columns (None and NaN kept as they are)."""
    import numpy as np

    spark = spark_session()
    names = list(columns)
    arrays = [np.asarray(columns[n], dtype=object) for n in names]
    rows = [tuple(_py(a[i]) for a in arrays) for i in range(len(arrays[0]))]
    types = ", ".join(f"{n} {_spark_type(np.asarray(columns[n]))}" for n in names)
    return spark.createDataFrame(rows, types)


def _py(v: Any) -> Any:
    import numpy as np

    if isinstance(v, np.generic):
        return v.item()
    return v


def _spark_type(a: Any) -> str:
    kind = a.dtype.kind
    if kind in "iu":
        return "long"
    if kind == "f":
        return "double"
    if kind == "O":
        vals = [v for v in a.tolist() if v is not None]
        if vals and all(isinstance(v, str) for v in vals):
            return "string"
        if vals and all(isinstance(v, float) for v in vals):
            return "double"
        return "long"
    return "string"
