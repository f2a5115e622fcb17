"""Hierarchy counts on a public rooted tree (Ghazi, Kamath, Kumar, Manurangsi, Wu 2023).

Read in this order, following one release from the call to the file:

* :mod:`~dptree.hierarchy.api` -- :func:`hierarchy_counts`, the entry point: the plan
  (:func:`plan_hierarchy_counts`, public inputs only), then its release through the stages below;
* :mod:`~dptree.hierarchy.structure` / :mod:`~dptree.hierarchy.building` /
  :mod:`~dptree.hierarchy.levels` -- the public tree (:class:`Hierarchy`), its constructors and
  the level arrays built from integer label codes;
* :mod:`~dptree.hierarchy.counting` -- data to exact leaf and node counts (the private input);
* :mod:`~dptree.hierarchy.measure` -- calibration from public parameters and the noise step
  (Laplace/Gaussian through :mod:`dptree.privacy.measurement`; the multiplicative algorithm of
  :mod:`~dptree.hierarchy.multiplicative`);
* :mod:`~dptree.hierarchy.plan` -- what the plan derives without data: the statement, the
  privacy loss, each node's expected error;
* :mod:`~dptree.hierarchy.release` -- :class:`HierarchyRelease` (a
  :class:`~dptree.io.contract.CountRelease`): post-processing and queries;
* :mod:`~dptree.hierarchy.document` -- reading a saved release, re-deriving its noise;
* :mod:`~dptree.hierarchy.error_metrics` -- the error measures of Ghazi et al. 2023, for experiments.
"""

from dptree.hierarchy.api import HierarchyCountsPlan, hierarchy_counts, measurement_copies, plan_hierarchy_counts
from dptree.hierarchy.counting import leaf_counts, node_weights
from dptree.hierarchy.release import HierarchyRelease, load_hierarchy_release
from dptree.hierarchy.structure import Hierarchy

__all__ = ["Hierarchy", "HierarchyRelease", "hierarchy_counts", "leaf_counts", "node_weights", "load_hierarchy_release",
           "measurement_copies", "plan_hierarchy_counts", "HierarchyCountsPlan"]
