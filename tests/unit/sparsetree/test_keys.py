"""Order-preserving 64-bit keys of the sparse tree's domain: the float64 order against its
definition by the bits, monotone, clamped, and the invalid-value policy (refuse with a message
that names no value, or drop record by record)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from dptree.data.domain import key_domain
from dptree.data.sorting import float_keys, key_floats, sort_keys
from dptree.errors import DataError, DomainError


def _float_order(x: float) -> int:
    """The float64 order by definition: the bits as a signed integer, negatives mirrored."""
    i = struct.unpack(">q", struct.pack(">d", x))[0]
    return -(i & 0x7FFFFFFFFFFFFFFF) if i < 0 else i


def _specials() -> np.ndarray:
    f = np.finfo(np.float64)
    return np.array([-f.max, -1e300, -2.5, -f.tiny, -5e-324, -0.0, 0.0, 5e-324, f.tiny, 1.0, 3.5, 1e300, f.max])


def test_float_keys_are_the_float64_order_shifted_by_2_63() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([_specials(), rng.standard_normal(500) * 10.0 ** rng.integers(-300, 300, 500)])
    keys = float_keys(x)
    assert [int(k) - 2**63 for k in keys] == [_float_order(float(v)) for v in x]
    d = key_domain(None, None, "f")  # every double: positions are the keys less the key of -max
    assert d.read_positions(x).tolist() == [int(k) - int(float_keys(np.array([-np.finfo(np.float64).max]))[0])
                                             for k in keys]
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(keys[order].astype(object)) >= 0)  # monotone
    back = key_floats(keys)
    assert np.array_equal(back, x + 0.0)  # -0.0 decodes to 0.0, everything else exactly


def test_integer_domains_cover_64_bits_and_clamp() -> None:
    d = key_domain(None, None, "i")
    assert (d.bits, d.kind, d.key_kind, d.size) == (64, "integer", "int", 2**64)
    v = np.array([-(2**63), -1, 0, 2**63 - 1], dtype=np.int64)
    assert d.values_at(d.read_positions(v)).tolist() == v.tolist()
    u = key_domain(None, None, "u")
    assert (u.key_kind, u.size) == ("uint", 2**64)
    big = np.array([0, 2**63, 2**64 - 1], dtype=np.uint64)
    assert u.values_at(u.read_positions(big)).tolist() == big.tolist()
    b = key_domain(10, 20, "i")
    assert b.bits == 4 and b.size == 11
    assert b.read_positions([-5, 10, 15, 99]).tolist() == [0, 0, 5, 10]
    assert b.read_positions(np.array([2**64 - 1], dtype=np.uint64)).tolist() == [10]  # beyond int64: clamped
    assert b.read_positions([12.0, 13.0]).tolist() == [2, 3]  # whole floats are integers


def test_dates_are_nanosecond_keys() -> None:
    d = key_domain(np.datetime64("2024-01-01"), np.datetime64("2024-01-02"), "M")
    assert d.kind == "datetime" and d.bits == 47  # 8.64e13 ns
    v = np.array(["2023-06-01", "2024-01-01T06", "2031-01-01"], dtype="datetime64[ns]")
    assert d.values_at(d.read_positions(v)).astype(str).tolist() == [
        "2024-01-01T00:00:00.000000000", "2024-01-01T06:00:00.000000000", "2024-01-02T00:00:00.000000000"]
    with pytest.raises(DataError, match="date"):
        d.read_positions(np.array([1, 2]))


@pytest.mark.parametrize("bad", [[1.5, np.nan, 7.25], [1.5, np.inf], [1.0, None]])
def test_invalid_values_are_refused_without_values_or_dropped(bad: list) -> None:
    d = key_domain(None, None, "f")
    with pytest.raises(DataError) as err:
        d.read_positions(np.array(bad, dtype=object if None in bad else np.float64))
    msg = str(err.value)
    assert "on_invalid='drop'" in msg and "1.5" not in msg and "7.25" not in msg
    kept = d.read_positions(np.array(bad, dtype=object if None in bad else np.float64), on_invalid="drop")
    assert kept.size == len([v for v in bad if v is not None and np.isfinite(v)])


def test_non_integers_on_integer_bounds_are_refused_or_dropped() -> None:
    d = key_domain(0, 100, "i")
    with pytest.raises(DataError):
        d.read_positions([1.0, 2.5])
    assert d.read_positions([1.0, 2.5], on_invalid="drop").tolist() == [1]


@pytest.mark.parametrize("lower, upper", [(5, 1), (0, None), (-1, 2**63), (0.0, float("inf")), ("a", 3), (True, 3)])
def test_bad_bounds_are_refused(lower: object, upper: object) -> None:
    with pytest.raises(DomainError):
        key_domain(lower, upper, "i")


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_sort_keys_in_parallel_chunks_equals_a_plain_sort(threads: int) -> None:
    rng = np.random.default_rng(threads)
    for keys in (rng.integers(0, 2**64, (1 << 20) + 7, dtype=np.uint64),
                 rng.integers(0, 50, (1 << 20) + 3).astype(np.uint64),  # many ties
                 np.arange(1 << 21, dtype=np.uint64)[::-1].copy()):
        want = np.sort(keys)
        sort_keys(keys, threads=threads)
        assert np.array_equal(keys, want)
