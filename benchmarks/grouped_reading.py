"""The cost of reading group and user columns exactly: ``range_tree(path, by=, groups=)``
and ``range_tree(path, user_id=)`` from Parquet and CSV, against the ungrouped release of the same
file, each call in a fresh process, rounds interleaved, medians (ratios to the baseline measured in
the same run).

Integer groups are matched exactly (as HUGEINT: a DOUBLE column compared as DOUBLE matches two
groups above 2^53) and a CSV's group and user columns are read as text (never DuckDB's type guess
from the rows). Run this script in two checkouts to compare their ratios:

    PYTHONPATH=src python3 benchmarks/grouped_reading.py --rows 5000000 --groups 8 --rounds 3
    PYTHONPATH=src python3 benchmarks/grouped_reading.py --rows 5000000 --sql   # the matching rules alone

The files hold integer values ``v`` in [0, 1000), an integer group ``g`` (int64 in Parquet) drawn
uniformly from ``--groups`` values and a user id ``u`` (n / 4 users); every call releases ``v``
over [0, 1023] at epsilon = 1 (users: at most 4 records each).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh_process import report, rounds, table  # noqa: E402

TASKS = ("parquet", "parquet by", "parquet users", "csv", "csv by", "csv users")


def _child(task: str, folder: str, n_groups: int) -> None:
    import dptree

    fmt = task.split()[0]
    path = str(Path(folder) / f"d.{fmt}")
    kw: dict = {}
    if task.endswith(" by"):
        kw = {"by": "g", "groups": list(range(n_groups))}
    elif task.endswith(" users"):
        kw = {"user_id": "u", "max_contributions": 4}
    report(lambda: dptree.range_tree(path, column="v", lower=0, upper=1023, epsilon=1.0, **kw))


#: ways to match a CSV's text field to the integer group 3 (``--sql``): the rule kept, and the cheaper ones
SQL_RULES = {
    "DuckDB's type guess from the rows": ("read_csv('{path}')", "t.g = 3"),
    "text, DuckDB's cast alone (7.5 -> 8, 0x10, 1_000 accepted)": ("{text}", "TRY_CAST(t.g AS HUGEINT) = 3"),
    "text, guard on '.' and 'e', then the cast": (
        "{text}", "(CASE WHEN NOT contains(t.g, 'e') AND NOT contains(t.g, 'E') AND (NOT contains(t.g, '.') OR "
                  "regexp_full_match(trim(t.g), '[+-]?[0-9]+[.]0*')) THEN TRY_CAST(t.g AS HUGEINT) END) = 3"),
    "text, integer numeral checked, then the cast (kept)": (
        "{text}", "(CASE WHEN regexp_full_match(trim(t.g), '[+-]?[0-9]+([.]0*)?') THEN "
                  "TRY_CAST(regexp_extract(trim(t.g), '^[+-]?[0-9]+') AS HUGEINT) END) = 3"),
}


def sql_rules(rows: int, n_groups: int, repeat: int) -> None:
    """One DuckDB scan of a CSV per rule, in process, alternating, medians of ``repeat``."""
    import statistics
    import time

    import duckdb
    import numpy as np
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="dptree-grouped-sql-") as tmp:
        path = str(Path(tmp) / "d.csv")
        g = np.random.default_rng(1)
        pd.DataFrame({"v": g.integers(0, 1000, rows), "g": g.integers(0, n_groups, rows)}).to_csv(path, index=False)
        con = duckdb.connect()
        text = f"read_csv('{path}', types={{'g': 'VARCHAR'}})"
        times: dict[str, list[float]] = {k: [] for k in SQL_RULES}
        for _ in range(repeat):
            for name, (src, cond) in SQL_RULES.items():
                t0 = time.perf_counter()
                con.execute(f"SELECT count(*) FROM {src.format(path=path, text=text)} t WHERE {cond}").fetchall()
                times[name].append(time.perf_counter() - t0)
    print(f"# {rows:,} CSV rows, one scan per rule, medians of {repeat}\n")
    print("| rule | time |\n|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.3f} s |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sql", action="store_true", help="time the SQL rules for a CSV's integer groups instead")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sql:
        sql_rules(args.rows, args.groups, max(args.rounds, 3))
        return
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return
    import numpy as np
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="dptree-grouped-reading-") as tmp:
        g = np.random.default_rng(1)
        frame = pd.DataFrame({"v": g.integers(0, 1000, args.rows), "g": g.integers(0, args.groups, args.rows),
                              "u": g.integers(0, max(args.rows // 4, 1), args.rows)})
        frame.to_parquet(Path(tmp) / "d.parquet")
        frame.to_csv(Path(tmp) / "d.csv", index=False)
        runs = rounds(__file__, TASKS, [tmp, str(args.groups)], args.rounds)
    print(f"# {args.rows:,} rows, {args.groups} groups, {args.rounds} rounds\n")
    print(table({t: runs[t] for t in TASKS if t.startswith("parquet")}, "parquet", "the ungrouped Parquet release"))
    print()
    print(table({t: runs[t] for t in TASKS if t.startswith("csv")}, "csv", "the ungrouped CSV release"))


if __name__ == "__main__":
    main()
