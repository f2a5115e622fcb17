"""Hierarchy counts on a public rooted tree (seed 001: Ghazi, Kamath, Kumar, Manurangsi, Wu).

Read in this order, following one release from the call to the file:

* :mod:`~dptree.hierarchy.api` -- :func:`hierarchy_counts`, the entry point (validates, then
  walks the stages below);
* :mod:`~dptree.hierarchy.structure` / :mod:`~dptree.hierarchy.building` -- the public tree
  (:class:`Hierarchy`) and its constructors;
* :mod:`~dptree.hierarchy.counting` -- data to exact leaf and node counts (the private input);
* :mod:`~dptree.hierarchy.measure` -- calibration from public parameters and the noise step
  (Laplace/Gaussian through :mod:`dptree.privacy.measurement`; the multiplicative algorithm of
  :mod:`~dptree.hierarchy.multiplicative`);
* :mod:`~dptree.hierarchy.release` -- :class:`HierarchyRelease` (a
  :class:`~dptree.io.contract.CountRelease`): post-processing and queries;
* :mod:`~dptree.hierarchy.document` -- reading a saved release, re-deriving its noise;
* :mod:`~dptree.hierarchy.error_metrics` -- seed 001's error measures, for experiments.
"""
