"""Private partition selection: the keys of a group-by found from the data, with (epsilon, delta)-DP.

Neighbouring relation: add or remove one user (all their records), each user bounded to at most
``max_groups`` distinct keys; or one record, when there is no user column. A key is released when
its count of distinct users passes a randomized threshold:

* :mod:`~dptree.partitions.policy` -- the keep-or-drop policies: the optimal thresholding of
  Desfontaines, Voss, Gipson & Mandayam (PoPETs 2022) for one key per user, sampled exactly; the
  Gaussian thresholding of Gopi et al. (ICML 2020) for several, with its exact delta;
* :mod:`~dptree.partitions.selection` -- the plan (budget, privacy loss, statement) and the one
  private step, :meth:`~dptree.partitions.selection.SelectionPlan.select`;
* :mod:`~dptree.partitions.composed` -- a selection followed by one release per released key: the
  budget split and the statement of the whole.

The products use it through ``groups="private"`` (``dptree.range_tree``, ``dptree.quantiles``, the
command line's ``--groups private``). Notes, proofs and measurements: docs/notes/partitions.md.
"""
