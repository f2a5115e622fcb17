"""Interior points, quantiles and thresholds (seed 002, ``002_2f350810784938f5.txt``).

Read in the order of a release: :mod:`~dptree.interior.api` (``interior_point`` and its result
``InteriorPoint``) -> :mod:`~dptree.interior.calibration` (the public plan: method, requirements,
per-replacement budget, statement) -> :mod:`~dptree.interior.encoding` (domain and values to
integer offsets) -> the mechanisms: :mod:`~dptree.interior.selection` (exponential mechanism,
Choosing Mechanism, AboveThreshold), :mod:`~dptree.interior.multisets` (the tree over the domain),
:mod:`~dptree.interior.treelog` (Algorithm 1), :mod:`~dptree.interior.heavypaths` (Algorithms
2-6). Built on them: :mod:`~dptree.interior.quantiles` (``quantile``, ``median``) and
:mod:`~dptree.interior.thresholds` (``learn_threshold``). :mod:`~dptree.interior.points` only
re-exports the names of the module this package replaced.
"""
