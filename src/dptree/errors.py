"""The exception tree of dptree.

Every error dptree raises on bad input is a :class:`DPTreeError`. Messages say what
was wrong and what to do about it. Privacy-relevant misuse always raises; dptree
never warns and proceeds.

Messages about the private data follow one rule (docs/notes/privacy.md): they may say *what
kind* of problem the data has and what to do, never how many rows have it, how many rows there
are, or which values they hold. Errors that carry an engine's own text (DuckDB, Spark, numpy)
pass it through :func:`redact` and are raised ``from None``, so the raw text is not chained.
"""

from __future__ import annotations

import re

__all__ = [
    "DPTreeError",
    "InvalidParameterError",
    "DomainError",
    "DataError",
    "BudgetExceededError",
    "ReleaseFileError",
    "StreamStateError",
    "InputFormatError",
    "MissingDependencyError",
    "TotalTooLargeError",
    "InsufficientDataError",
    "LedgerError",
    "LedgerCorruptError",
    "LedgerOutdatedError",
    "LedgerLockedError",
    "LedgerReadOnlyError",
    "redact",
    "check_invalid",
]

_DROPPED_LINE = re.compile(r"^\s*(original line|line \d+|\^|candidate|possible fix|actual|expected|row)", re.IGNORECASE)
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`")
_NUMBER = re.compile(r"(?<![A-Za-z]-)(?<![\w.])[-+]?\d[\d_,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")


def redact(text: object, max_lines: int = 2) -> str:
    """An engine's error text with the private data removed: quoted strings (values, file lines)
    become '…', numbers (row and line numbers, counts, values) become #, and lines that quote
    the input are dropped. Keeps the kind of error ("not utf-8 encoded", "Could not convert")."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip() and not _DROPPED_LINE.match(ln)]
    out = " ".join(lines[:max_lines])
    out = _QUOTED.sub("'…'", out)
    return _NUMBER.sub("#", out)



class DPTreeError(Exception):
    """Base class of every error raised by dptree.

    ``parameter``: the name of the one parameter the message is about, as the function spells it
    (``"epsilon"``, ``"max_contributions"``), when there is one; the message then opens with that
    name. The command line shows it as its own flag (``--max-contributions``), from one table
    (:mod:`dptree.cli.flags`)."""

    parameter: str | None

    def __init__(self, *args: object, parameter: str | None = None) -> None:
        super().__init__(*args)
        self.parameter = parameter


class InvalidParameterError(DPTreeError, ValueError):
    """A privacy or structural parameter is invalid (epsilon <= 0, delta outside [0, 1), ...);
    ``parameter`` names it where the message is about one."""


class DomainError(DPTreeError, ValueError):
    """The public domain is invalid or cannot hold the data (lower >= upper, too large, ...)."""


class DataError(DPTreeError, ValueError):
    """The private data is malformed (NaN, wrong type, unknown path, ...)."""


class BudgetExceededError(DPTreeError):
    """A release would spend more privacy budget than is available."""


class ReleaseFileError(DPTreeError, ValueError):
    """A saved release is malformed, tampered with, or of an unsupported version."""


class StreamStateError(ReleaseFileError):
    """A continual counter's saved state cannot be continued: it was continued already (a second
    continuation would reuse its noise on other counts), or another process holds it."""


class InputFormatError(DPTreeError):
    """An input file or table cannot be read (missing file, missing column, bad format)."""


class MissingDependencyError(DPTreeError, ImportError):
    """An optional package a feature needs is not installed; the message names the extra."""


class TotalTooLargeError(DataError):
    """The total weight of the data reaches the limit, beyond what the noise arithmetic
    holds exactly (2^61, ``dptree.hierarchy``). The message never contains the total."""


class InsufficientDataError(DPTreeError, ValueError):
    """No method's stated success guarantee holds at this n (pass run_anyway=True to run regardless)."""


class LedgerError(DPTreeError):
    """The budget ledger cannot be used."""


class LedgerCorruptError(LedgerError):
    """The ledger file is not a valid dptree ledger (corrupt, truncated or another file)."""


class LedgerOutdatedError(LedgerError):
    """The ledger was written by an older dptree, in a format without integrity checks; upgrade it
    once with :meth:`Ledger.upgrade` (``dptree budget PATH --upgrade``)."""


class LedgerLockedError(LedgerError):
    """Another process held the ledger locked for longer than the timeout."""


class LedgerReadOnlyError(LedgerError):
    """The ledger cannot be written (read-only file, directory or opening mode)."""


# --------------------------------------------------------------------------- data-derived errors
# One wording per data problem, shared by the numpy, DuckDB and Spark engines. None of them takes
# a count or a value: only caller-supplied names (column names) and the fix.


#: how a caller declares the invalid-value policy, in the library's terms (the CLI: --on-invalid drop)
DROP_HINT = ("pass on_invalid='drop' to leave them out (a declared per-record policy; how many are dropped is "
             "never shown)")


def missing_values_error(column: str | None = None, *, cli_flag: bool = True) -> DataError:
    """The data holds missing values (NaN, None, NaT, NULL) and ``on_invalid="error"``."""
    where = f"column {column!r}" if column else "the values"
    return DataError(f"{where} {'contains' if column else 'contain'} missing values (NaN, None, NaT or NULL); "
                     f"{DROP_HINT}, or fill them first")


def infinite_values_error(column: str | None = None) -> DataError:
    """The data holds +-inf, which no bucket of a finite domain can hold honestly."""
    where = f"column {column!r} contains" if column else "the values contain"
    return DataError(f"{where} +-inf; {DROP_HINT}, or replace them with finite values first")


def non_numeric_values_error(column: str | None = None, dates: bool = False) -> DataError:
    """Some entries of a numeric (or date) column are not numbers (dates): text, True/False, objects."""
    where = f"column {column!r} holds" if column else "the values hold"
    what = "a date or time" if dates else "a number"
    return DataError(f"{where} entries that are not {what} (text such as 'n/a', True/False, other objects); "
                     f"{DROP_HINT}, or clean the column first" + ("" if dates else f" ({DATE_BOUNDS_HINT})"))


#: what to do with dates on a numeric domain (in the CLI: --lower 2024-01-01, --upper 2024-12-31)
DATE_BOUNDS_HINT = ("dates, also as ISO text such as '2024-01-05', need date bounds: "
                    "lower='2024-01-01', upper='2024-12-31'")


def dates_need_date_bounds_error(kind: str) -> DataError:
    """Values that are dates or text (``kind``, from the column's type, never its values) on a
    domain whose bounds are numbers: say that date bounds are expected and how to give them."""
    what = "dates" if kind == "dates" else "text (not numbers)"
    return DataError(f"the values are {what} but the bounds are numbers; {DATE_BOUNDS_HINT}"
                     + ("" if kind == "dates" else "; numbers stored as text must be converted to numbers first"))


#: the kinds of invalid value, in the order a refusal names them
INVALID_KINDS = ("missing", "infinite", "fraction", "text")


def check_invalid(found: "set[str] | frozenset[str]", on_invalid: str, column: str | None = None, *,
                  fraction_fix: str | None = None, dates: bool = False) -> None:
    """The declared invalid-value policy, once for every product, method and engine: with
    ``on_invalid="drop"`` every flagged record is left out by the caller (nothing is raised, so
    the outcome never depends on which records were invalid); with ``"error"`` the first kind of
    problem in ``found`` (:data:`INVALID_KINDS`: missing, +-inf, a non-integer on an integer
    domain, an entry that is not a number or date) raises a :class:`DataError` naming the kind
    and the fix, never a value, position or count."""
    if on_invalid not in ("error", "drop"):
        raise InvalidParameterError(f"on_invalid must be 'error' or 'drop', got {on_invalid!r}")
    if on_invalid == "drop" or not found:
        return
    kind = next(k for k in INVALID_KINDS if k in found)
    if kind == "infinite":
        raise infinite_values_error(column)
    if kind == "missing":
        raise missing_values_error(column)
    if kind == "fraction":
        raise non_integer_values_error(fraction_fix or RANGE_TREE_FLOAT_FIX)
    raise non_numeric_values_error(column, dates)


def unknown_groups_error() -> DataError:
    """Some rows name a group that is not in the public list of groups."""
    return DataError(
        "some rows have a group that is not in groups (or none); list every group, or pass "
        "unknown='drop' (--unknown-groups drop) to leave those rows out (a declared policy: each release then "
        "counts the rows of its own group only)"
    )


def missing_keys_error() -> DataError:
    """Some rows have no key (a missing ``by`` value) in a group-by whose keys are found from the data."""
    return DataError(
        "some rows have no group (a missing by value); fill or remove them, or pass unknown='drop' "
        "(--unknown-groups drop) to leave those rows out (a declared policy)"
    )


def partition_key_type_error(column: str | None = None) -> DataError:
    """The keys of a group-by found from the data are neither text nor integers."""
    where = f"by column {column!r}" if column else "by"
    return DataError(
        f"groups found from the data (groups='private') need keys that are text or integers; {where} holds other "
        "values (floats, dates, True/False, or a mix of kinds): convert the column to text or integers first"
    )


def missing_user_ids_error(column: str | None = None) -> DataError:
    """Some rows lack a user id, so contribution bounding cannot attribute them."""
    where = f"user column {column!r}" if column else "user_id"
    return DataError(
        f"{where} contains missing ids; every record needs a user id for bounding (drop or fill those "
        "records first)"
    )


def non_integer_values_error(fix: str) -> DataError:
    """Float values that are not whole numbers on an integer domain (integer bounds): refused,
    never floored silently. ``fix`` names the caller's way out (float bounds with a width, ...)."""
    return DataError(f"the values include non-integers (numbers that are not integers) but the bounds are integers "
                     f"(an integer domain); {fix}")


RANGE_TREE_FLOAT_FIX = (
    "give float bounds for a float domain (lower=0.0; a range tree buckets them by a width, width=1.0), "
    "pass on_invalid='drop' to leave them out, or round the values first"
)


def length_mismatch_error(name: str) -> DataError:
    """A per-record column (user ids, groups) does not have one entry per value."""
    return DataError(f"{name} must have one entry per value (the same length as the values)")


#: DuckDB's wording for a file that does not end with Parquet's footer
_NOT_PARQUET = ("No magic bytes found", "too small to be a Parquet file")
#: the column type DuckDB could not use, in its binder and cast errors
_FAILED_TYPE = re.compile(r"Cannot combine types of (.+?) and |Unimplemented type for cast \((.+?) -> ")


def engine_detail(exc: BaseException) -> str:
    """What an engine's failure (DuckDB, Spark, numpy) means, in dptree's terms where the kind of
    failure is known (a value that is not a number, a CSV row with the wrong number of fields, a
    file that is not Parquet, a nested column), else its text redacted (:func:`redact`). Never a
    value, a line or a count."""
    text = str(exc)
    failed = _FAILED_TYPE.search(text)
    typ = (failed.group(1) or failed.group(2)).strip().upper() if failed else ""
    if typ.startswith(("STRUCT(", "MAP(", "UNION(")) or typ.endswith("]"):
        return ("the column is nested (a struct, list, map or union column), not numbers or dates; use a plain "
                "column (write the field or element you need into a column of its own first)")
    if any(s in text for s in _NOT_PARQUET):
        return ("the file is not Parquet (it does not end with Parquet's footer: a file of another format under a "
                ".parquet name, or one cut short); write it again as Parquet, or give a CSV file a .csv name")
    if type(exc).__name__ == "ConversionException" or "Could not convert" in text:
        # which value and which line would be private: say what is wrong and how to fix it, not where
        return ("a value of the column is not a number (or, on a date domain, not a date or time), e.g. text such "
                "as 'n/a'; leave such fields empty (missing values) or remove those rows")
    if "Expected Number of Columns" in text:
        return ("some row of the CSV has a different number of fields than its header (a stray delimiter, or a "
                "field with a comma that is not quoted); fix those rows")
    return redact(exc) or type(exc).__name__


def engine_error(what: str, column: str | None, exc: BaseException) -> InputFormatError:
    """An engine (DuckDB, Spark, numpy) failed on the data: :func:`engine_detail`."""
    of = f" of {column!r}" if column else ""
    return InputFormatError(f"cannot compute the {what}{of}: {engine_detail(exc)}")
