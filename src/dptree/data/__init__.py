"""The data stage: from the caller's rows to exact (not yet private) counts.

* :mod:`~dptree.data.histograms` -- the one dispatcher: :func:`leaf_histogram` (range trees: plain,
  bounded per user, split by group), :func:`path_counts` (hierarchies) and the value counts of the
  exponential mechanisms, each built once from the engines' primitive;
* :mod:`~dptree.data.engines` -- the one interface (:class:`~dptree.data.engines.base.Engine`: exact
  grouped counts of key expressions, optionally sampled per user) and its engines: numpy
  (in-memory data), DuckDB (files, DuckDB relations), Spark (DataFrames);
* :mod:`~dptree.data.inputs` -- any in-memory container as a 1-D numpy array (:func:`to_numpy`);
* :mod:`~dptree.data.domain` -- public ordered domains: values to leaves and back;
  :mod:`~dptree.data.values` -- raw values read on their own, into positions (on_invalid);
* :mod:`~dptree.data.bounding` -- at most k records per user, chosen uniformly at random;
* :mod:`~dptree.data.groups` -- the public list of groups; :mod:`~dptree.data.weights` -- exact
  integer weights.

Nothing here adds noise, and nothing here imports a product (range trees, hierarchies): the plan is
passed in, typed by :class:`~dptree.data.engines.base.LeafPlan` (``tests/system/test_architecture.py``).
"""
