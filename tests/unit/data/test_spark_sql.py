"""dptree.data.engines.spark_sql.collect_columns: Arrow where pyspark has ``toArrow`` (>= 4), pandas
otherwise (pyspark 3.5, which the ``spark`` extra allows); both give the same numpy columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from dptree.data.engines.spark_sql import collect_columns

FRAME = pd.DataFrame({"b": np.array([3, 1], np.int64), "v": [0.5, -2.0], "count": np.array([7, 9], np.int64)})


class _Spark4:
    def toArrow(self) -> pa.Table:
        return pa.Table.from_pandas(FRAME)


class _Spark35:  # no toArrow
    def toPandas(self) -> pd.DataFrame:
        return FRAME


def test_both_collection_paths_give_the_same_columns() -> None:
    arrow, pandas = collect_columns(_Spark4(), "v", "count"), collect_columns(_Spark35(), "v", "count")
    for a, b, want in zip(arrow, pandas, (FRAME["v"], FRAME["count"])):
        np.testing.assert_array_equal(a, want.to_numpy())
        np.testing.assert_array_equal(b, want.to_numpy())
        assert a.dtype == b.dtype
