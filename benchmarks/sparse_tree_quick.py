"""Quick sparse-vs-dense quantile rank error ratio (issue 15): sparse_range_tree and the dense tree at
the oracle D of docs/notes/sparse_tree.md, same seeds as benchmarks/sparse_tree.py.

    PYTHONPATH=src python3 benchmarks/sparse_tree_quick.py N REPEATS [JSON kwargs for sparse_range_tree]
"""
import sys, json, time
sys.path.insert(0, __import__('os').path.dirname(__file__))
from sparse_tree import *
n = int(sys.argv[1]); reps = int(sys.argv[2]); kw = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
ORACLE = {"lognormal latencies": 2**20, "pareto sizes": 2**20, "64-bit ids": 2**10 if n <= 10**5 else 2**12, "ns timestamps": 2**16 if n <= 10**5 else 2**20}
out = []
for name in DATASETS:
    s_err, d_err, H = [], [], []
    for r in range(reps):
        x = dataset(name, n, 100 + r); sx = np.sort(x)
        s = dptree.sparse_range_tree(x, epsilon=EPS, rng=r, **kw)
        s_err.append(rank_error(sx, s.quantile(QS))); H.append(s.depth)
        d_err.append(rank_error(sx, dense(x, ORACLE[name], r).quantile(QS)))
    out.append(f"{name[:12]:12s} sparse {np.mean(s_err):7.1f} dense {np.mean(d_err):7.1f} ratio {np.mean(s_err)/np.mean(d_err):5.2f} H {np.mean(H):.1f}")
print(kw, "|", " ; ".join(out))
