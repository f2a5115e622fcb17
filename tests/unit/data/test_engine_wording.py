"""DuckDB's failures reach the caller in dptree's terms (:func:`dptree.errors.engine_detail`): a
file that is not Parquet under a .parquet name, and a nested (struct or list) column, say what is
wrong and what to do, in the library and in the CLI, never in DuckDB's own words."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dptree
from dptree.errors import InputFormatError

#: DuckDB's wording, which must not reach the caller
DUCKDB_WORDS = ("magic bytes", "too small", "Binder Error", "Conversion Error", "INTEGER_LITERAL", "explicit cast",
                "Unimplemented type")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("wording")
    csv = d / "csv.parquet"
    csv.write_text("v\n" + "".join(f"{i % 10}\n" for i in range(200)))
    tiny = d / "tiny.parquet"
    tiny.write_bytes(b"PAR1")
    nested = d / "nested.parquet"
    pq.write_table(pa.table({"s": pa.array([{"a": 1, "b": 2}, {"a": 3, "b": 4}]), "l": pa.array([[1, 2], [3]]),
                             "v": [1, 2]}), nested)
    cut = d / "cut.parquet"
    cut.write_bytes(nested.read_bytes()[:300])
    return {"csv": csv, "tiny": tiny, "cut": cut, "nested": nested}


def _releases(path: str, column: str) -> list[Callable[[], Any]]:
    return [lambda: dptree.range_tree(path, column=column, lower=0, upper=10, epsilon=1.0),
            lambda: dptree.range_tree(path, column=column, lower=0.0, upper=10.0, width=1.0, epsilon=1.0),
            lambda: dptree.quantiles(path, [0.5], column=column, lower=0, upper=10, epsilon=1.0, method="approx"),
            lambda: dptree.median(path, column=column, lower=0, upper=10, epsilon=1.0)]


@pytest.mark.parametrize("name", ["csv", "tiny", "cut"])
def test_a_file_that_is_not_parquet_says_so(files: dict[str, Path], name: str, cli_run: Any) -> None:
    for release in [*_releases(str(files[name]), "v"),
                    lambda: dptree.sparse_range_tree(str(files[name]), column="v", epsilon=1.0)]:
        with pytest.raises(InputFormatError, match="the file is not Parquet") as err:
            release()
        assert "give a CSV file a .csv name" in str(err.value)
        assert not any(w in str(err.value) for w in DUCKDB_WORDS)
    code, out, err_text = cli_run(["release", files[name], "--column", "v", "--lower", "0", "--upper", "10",
                                   "--epsilon", "1", "--out", files[name].with_suffix(".json")])
    assert code == 2 and out == "" and err_text.count("\n") == 1
    assert "the file is not Parquet" in err_text and not any(w in err_text for w in DUCKDB_WORDS)


@pytest.mark.parametrize("column", ["s", "l"])
def test_a_nested_column_says_so(files: dict[str, Path], column: str, cli_run: Any) -> None:
    for release in _releases(str(files["nested"]), column):
        with pytest.raises(InputFormatError, match="the column is nested") as err:
            release()
        assert not any(w in str(err.value) for w in DUCKDB_WORDS)
    code, _, err_text = cli_run(["release", files["nested"], "--column", column, "--lower", "0", "--upper", "10",
                                 "--epsilon", "1", "--out", files["nested"].with_suffix(".json")])
    assert code == 2 and "the column is nested" in err_text and not any(w in err_text for w in DUCKDB_WORDS)
    dptree.range_tree(str(files["nested"]), column="v", lower=0, upper=10, epsilon=1.0)  # a plain column reads


@pytest.mark.parametrize("column", ["s", "l"])
def test_a_nested_level_column_of_a_hierarchy_says_so(files: dict[str, Path], column: str) -> None:
    import pandas as pd

    from dptree.errors import DataError

    tree = dptree.Hierarchy.from_paths(["1", "2"])
    for data in (str(files["nested"]), pd.read_parquet(files["nested"])):
        with pytest.raises(DataError, match="a column holds nested values"):
            dptree.hierarchy_counts(data, tree, levels=[column], epsilon=1.0)
