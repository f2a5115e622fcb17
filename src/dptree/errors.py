"""The exception tree of dptree.

Every error dptree raises on bad input is a :class:`DPTreeError`. Messages say what
was wrong and what to do about it. Privacy-relevant misuse always raises; dptree
never warns and proceeds.
"""

from __future__ import annotations

__all__ = [
    "DPTreeError",
    "InvalidParameterError",
    "DomainError",
    "DataError",
    "BudgetExceededError",
    "ReleaseFileError",
    "InputFormatError",
]


class DPTreeError(Exception):
    """Base class of every error raised by dptree."""


class InvalidParameterError(DPTreeError, ValueError):
    """A privacy or structural parameter is invalid (epsilon <= 0, delta outside [0, 1), ...)."""


class DomainError(DPTreeError, ValueError):
    """The public domain is invalid or cannot hold the data (lower >= upper, too large, ...)."""


class DataError(DPTreeError, ValueError):
    """The private data is malformed (NaN, wrong type, unknown path, ...)."""


class BudgetExceededError(DPTreeError):
    """A release would spend more privacy budget than is available."""


class ReleaseFileError(DPTreeError, ValueError):
    """A saved release is malformed, tampered with, or of an unsupported version."""


class InputFormatError(DPTreeError):
    """An input file or table cannot be read (missing file, missing column, bad format)."""
