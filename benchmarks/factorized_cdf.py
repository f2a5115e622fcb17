"""The factorised CDF against Gaussian range trees: exact average variances, same budget, one run.

For D = 2^8 .. 2^16 buckets, rho = 1 (add/remove one record), every figure exact from public
parameters (no data, no sampling):

* the factorised CDF (``range_tree(..., noise="gaussian", levels="factorization")``: the
  square-root factorisation on the lattice 2^-p, the discrete Gaussian's exact variance);
* the prefix-tuned Gaussian range tree (``levels="prefix"``, branching chosen for prefixes), the
  baseline for CDF queries;
* the all-ranges Gaussian range tree (``levels="all_ranges"``), the baseline for range counts.

Columns: the average variance over the D prefixes [lower, x] and over all D(D+1)/2 ranges, and the
ratios factorisation / tree (below 1: the factorisation wins). Prefix averages of trees are the
release's own ``stderr`` (least squares conditioned on the empty padding, ``expected_error``);
range averages of trees the closed form over the real domain
(:func:`dptree.rangetree.allocation.average_range_variance`), exact when the tree has no padding
(``pad`` = padded size / D; 1 for every tree below but the prefix tree at some D, where it is an
upper bound). The factorisation's averages are the closed forms of
:mod:`dptree.rangetree.factorization`, tested equal to the dense covariance of B.

    PYTHONPATH=src python benchmarks/factorized_cdf.py

Results: docs/notes/factorized_cdf.md.
"""

from __future__ import annotations

from dptree.rangetree.allocation import average_range_variance
from dptree.rangetree.cdf_choice import factorized_average_prefix_variance, tree_average_prefix_variance
from dptree.rangetree.factorization import unit_average_range_variance
from dptree.rangetree.factorized_release import plan_factorized_cdf
from dptree.rangetree.release import plan_range_tree

RHO = 1.0


def row(D: int) -> dict[str, float]:
    common = dict(lower=0, upper=D - 1, rho=RHO, neighbors="add_remove")
    fact = plan_factorized_cdf(**common)
    prefix_tree = plan_range_tree(noise="gaussian", levels="prefix", **common)
    ranges_tree = plan_range_tree(noise="gaussian", levels="all_ranges", **common)
    return {
        "p": fact.bits,
        "f_prefix": factorized_average_prefix_variance(fact),
        "pt_prefix": tree_average_prefix_variance(prefix_tree),
        "pt_b": prefix_tree.layout.branching,
        "pt_pad": prefix_tree.layout.padded_size / D,
        "f_range": unit_average_range_variance(D) * fact.unit_variance,
        "pt_range": average_range_variance(prefix_tree.layout, prefix_tree.level_variance),
        "rt_range": average_range_variance(ranges_tree.layout, ranges_tree.level_variance),
        "rt_prefix": tree_average_prefix_variance(ranges_tree),
        "rt_b": ranges_tree.layout.branching,
    }


def main() -> None:
    print(f"Average variance x rho (rho = {RHO}), add/remove one record; f = factorised CDF, "
          "pt = prefix-tuned tree, rt = all-ranges tree (Gaussian)")
    print(f"{'D':>7} {'p':>3} | {'prefix: f':>10} {'pt':>8} {'rt':>8} {'f/pt':>6} | "
          f"{'ranges: f':>10} {'pt':>8} {'rt':>8} {'f/rt':>6} | {'pt b':>4} {'pad':>5} {'rt b':>4}")
    for k in range(8, 17):
        D = 1 << k
        r = row(D)
        print(f"{D:>7} {r['p']:>3} | {r['f_prefix'] * RHO:>10.3f} {r['pt_prefix'] * RHO:>8.3f} "
              f"{r['rt_prefix'] * RHO:>8.3f} {r['f_prefix'] / r['pt_prefix']:>6.3f} | "
              f"{r['f_range'] * RHO:>10.3f} {r['pt_range'] * RHO:>8.3f} {r['rt_range'] * RHO:>8.3f} "
              f"{r['f_range'] / r['rt_range']:>6.3f} | {r['pt_b']:>4} {r['pt_pad']:>5.2f} {r['rt_b']:>4}")
    print("\nSmall domains (where the tree may win), same columns:")
    for D in (2, 4, 8, 16, 32, 64, 128):
        r = row(D)
        print(f"{D:>7} {r['p']:>3} | {r['f_prefix'] * RHO:>10.3f} {r['pt_prefix'] * RHO:>8.3f} "
              f"{r['rt_prefix'] * RHO:>8.3f} {r['f_prefix'] / r['pt_prefix']:>6.3f} | "
              f"{r['f_range'] * RHO:>10.3f} {r['pt_range'] * RHO:>8.3f} {r['rt_range'] * RHO:>8.3f} "
              f"{r['f_range'] / r['rt_range']:>6.3f} | {r['pt_b']:>4} {r['pt_pad']:>5.2f} {r['rt_b']:>4}")


if __name__ == "__main__":
    main()
