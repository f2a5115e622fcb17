"""Engines that compute leaf histograms: numpy for arrays (in :mod:`dptree.rangetree.release`), DuckDB for files."""

from dptree.data.engines.duckdb import file_leaf_histogram, read_column

__all__ = ["file_leaf_histogram", "read_column"]
