"""Engines that compute leaf histograms: numpy for arrays (in :mod:`dptree.ranges`), DuckDB for files."""

from .duckdb_backend import file_leaf_histogram, read_column

__all__ = ["file_leaf_histogram", "read_column"]
