"""Releases and results in a notebook: ``_repr_html_`` shows the privacy statement in one line and
the rows of ``to_frame()``, escapes every text and cuts long tables with a note."""

from __future__ import annotations

import html
import math
from html.parser import HTMLParser
from typing import Any, Callable

import numpy as np
import pytest

import dptree
from dptree.io.display import MAX_ROWS, privacy_line

HOSTILE = "<img src=x onerror=alert(1)>"  # no "/": a hierarchy label cannot hold one


class _Table(HTMLParser):
    """The header and body cells of the one table of a view, and all its text."""

    def __init__(self) -> None:
        super().__init__()
        self.head: list[str] = []
        self.rows: list[list[str]] = []
        self.text: list[str] = []
        self._cell: str | None = None
        self._in_head = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "thead":
            self._in_head = True
        elif tag == "tr" and not self._in_head:
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "thead":
            self._in_head = False
        elif tag in ("td", "th") and self._cell is not None:
            (self.head if self._in_head else self.rows[-1]).append(self._cell)
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell += data


def _parse(view: str) -> _Table:
    t = _Table()
    t.feed(view)
    return t


def _same(cell: str, value: Any) -> bool:
    """A shown cell against the frame's value: numbers to 7 digits, dates by day, others as text."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return cell == str(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        v = float(value)
        return (math.isnan(v) and cell == "nan") or math.isclose(float(cell), v, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(value, (np.datetime64,)) or hasattr(value, "isoformat"):
        return cell[:10] == str(np.datetime64(value, "D"))
    return cell == str(value)


_AGES = np.random.default_rng(0).integers(18, 90, 2000)
_DAYS = np.datetime64("2024-01-01") + np.random.default_rng(1).integers(0, 366, 500)
_BY = np.where(_AGES < 50, "under 50", "50+")
_TREE = dptree.Hierarchy.from_paths([("US", "CA"), ("US", "NY"), ("FR", "IDF")])

#: every release and result kind, made with a seed (NOT PRIVATE) at epsilon = 1
KINDS: dict[str, Callable[[], Any]] = {
    "range_tree": lambda: dptree.range_tree(_AGES, lower=0, upper=120, epsilon=1.0, rng=1),
    "range_tree_dates": lambda: dptree.range_tree(_DAYS, lower="2024-01-01", upper="2024-12-31", epsilon=1.0, rng=1),
    "histogram": lambda: dptree.range_tree(_AGES, lower=0, upper=120, epsilon=1.0, rng=1).histogram([0, 18, 65, 120]),
    "quantile_result": lambda: dptree.range_tree(_AGES, lower=0, upper=120, epsilon=1.0, rng=1).quantiles([0.5, 0.9]),
    "answers": lambda: dptree.range_tree(_AGES, lower=0, upper=120, epsilon=1.0, rng=1).answer(count=[(18, 29)]),
    "sparse": lambda: dptree.sparse_range_tree(_AGES, epsilon=1.0, rng=1),
    "range_tree_groups": lambda: dptree.range_tree_by(_AGES, by=_BY, groups=["under 50", "50+"], lower=0, upper=120,
                                                       epsilon=1.0, rng=1),
    "quantiles": lambda: dptree.quantiles(_AGES, [0.1, 0.5, 0.9], lower=0, upper=120, epsilon=1.0, rng=1),
    "quantiles_groups": lambda: dptree.quantiles(_AGES, [0.5], lower=0, upper=120, epsilon=1.0, by=_BY,
                                                 groups=["under 50", "50+"], rng=1),
    "hierarchy": lambda: dptree.hierarchy_counts([("US", "CA")] * 5, _TREE, epsilon=1.0, rng=1),
    "interior_point": lambda: dptree.interior_point(_AGES, lower=0, upper=2**20, epsilon=1.0, rng=1),
    "quantile": lambda: dptree.median(_DAYS, lower="2024-01-01", upper="2024-12-31", epsilon=1.0, rng=1),
    "threshold": lambda: dptree.learn_threshold(_AGES, (_AGES < 40).astype(int), lower=0, upper=1000, epsilon=1.0,
                                                rng=1),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_view_states_the_privacy_and_shows_the_rows_of_to_frame(kind: str) -> None:
    obj = KINDS[kind]()
    view = obj._repr_html_()
    shown = _parse(view)
    text = "".join(shown.text)
    assert type(obj).__name__ in text
    line = privacy_line(obj.privacy)
    assert line in text and "epsilon=1" in line and "neighbors: add or remove one record" in line
    assert obj.privacy["guarantee"] in line and "NOT PRIVATE" in line  # a seeded release says so
    frame = obj.to_frame()
    assert shown.head == [str(c) for c in frame.columns]
    assert len(shown.rows) == min(len(frame), MAX_ROWS)
    for row, (_, want) in zip(shown.rows, frame.head(MAX_ROWS).iterrows()):
        assert all(_same(c, v) for c, v in zip(row, want)), (row, list(want))


def test_a_result_states_the_privacy_of_the_release_it_was_read_from() -> None:
    rel = dptree.range_tree(_AGES, lower=0, upper=120, rho=0.5, noise="gaussian", rng=1, column="age")
    for result in (rel.histogram([0, 60, 120]), rel.quantiles([0.5]), rel.answer(cdf=[40])):
        text = "".join(_parse(result._repr_html_()).text)
        assert privacy_line(rel.privacy) in text and "rho-zCDP; rho=0.5" in text
        assert "age" in text


def test_an_unseeded_release_reads_private() -> None:
    rel = dptree.range_tree(_AGES, lower=0, upper=120, epsilon=0.5)
    text = "".join(_parse(rel._repr_html_()).text)
    assert "pure epsilon-DP; epsilon=0.5; neighbors: add or remove one record; private" in text
    assert "NOT PRIVATE" not in text
    replace = dptree.range_tree(_AGES, lower=0, upper=120, epsilon=0.5, neighbors="replace")
    assert "replace one record (the number of records is public)" in replace._repr_html_()


def test_every_text_is_escaped() -> None:
    rel = dptree.range_tree(_AGES, lower=0, upper=120, epsilon=1.0, rng=1, column=HOSTILE)
    groups = dptree.quantiles(_AGES, [0.5], lower=0, upper=120, epsilon=1.0, by=np.where(_AGES < 50, HOSTILE, "b"),
                              groups=[HOSTILE, "b"], rng=1)
    hier = dptree.hierarchy_counts([(HOSTILE, "x")], dptree.Hierarchy.from_paths([(HOSTILE, "x"), ("b", "y")]),
                                   epsilon=1.0, rng=1)
    for obj in (rel, rel.histogram([0, 60, 120]), groups, hier):
        view = obj._repr_html_()
        assert "<img" not in view and html.escape(HOSTILE) in view
        assert HOSTILE in "".join(_parse(view).text)  # shown as text
    script = dptree.range_tree(_AGES, lower=0, upper=120, epsilon=1.0, rng=1, column="<script>alert(1)</script>")
    view = script._repr_html_()
    assert "<script" not in view and "&lt;script&gt;alert(1)&lt;/script&gt;" in view


def test_a_long_table_is_cut_with_a_note_and_a_short_one_is_not() -> None:
    rel = dptree.range_tree(_AGES, lower=0, upper=120, epsilon=1.0, rng=1)  # 121 buckets: public
    shown = _parse(rel._repr_html_())
    assert len(shown.rows) == MAX_ROWS == 20
    assert "first 20 of 121 rows; to_frame() has all" in "".join(shown.text)
    q = dptree.quantiles(_AGES, [0.1, 0.5, 0.9], lower=0, upper=120, epsilon=1.0, rng=1)
    text = "".join(_parse(q._repr_html_()).text)
    assert "3 rows" in text and "first" not in text


def test_the_row_count_is_the_public_size_not_the_data() -> None:
    """Two datasets of different sizes give views that differ in noisy values only: the note counts
    buckets, never records."""
    small = dptree.range_tree(_AGES[:10], lower=0, upper=120, epsilon=1.0, rng=1)._repr_html_()
    large = dptree.range_tree(_AGES, lower=0, upper=120, epsilon=1.0, rng=1)._repr_html_()
    note = "first 20 of 121 rows; to_frame() has all"
    assert note in small and note in large
    assert "10 rows" not in small and "2000" not in large
