"""The engines behind the one interface :class:`~dptree.data.engines.base.Engine`: numpy (in-memory
data), DuckDB (files and DuckDB relations) and Spark; :mod:`dptree.data.histograms` picks one."""

from dptree.data.engines.base import Engine
from dptree.data.engines.duckdb import DuckDBEngine, read_column
from dptree.data.engines.numpy import NumpyEngine
from dptree.data.engines.spark import SparkEngine

__all__ = ["Engine", "NumpyEngine", "DuckDBEngine", "SparkEngine", "read_column"]
