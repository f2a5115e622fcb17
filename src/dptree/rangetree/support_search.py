"""A local search over which levels of a range tree get budget, for budget splits whose objective
is not convex (Laplace noise: a level's information grows as w^2, so leaving a level out is always
a stationary point and the optimum measures a few well-spaced levels).

:func:`search_supports` minimises a smooth objective f(w) over the simplex (the last coordinate,
the leaves, is always measured). For a *support* S (the levels with w > 0) the restricted problem
is solved with SLSQP; the search starts from the given supports and moves to the best neighbouring
support (one level added, dropped, or moved to an adjacent level; when none helps, two levels
moved) while that lowers f.
Deterministic; the inputs are public quantities only (the objective is built from D, the fan-outs
and the noise family).
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

__all__ = ["search_supports", "strided_supports", "MIN_LEVEL_WEIGHT"]

#: a level whose optimised share of the budget is below this is not measured (its share goes to the
#: others), so every measured level gets at least this share
MIN_LEVEL_WEIGHT = 1e-6

Objective = Callable[[np.ndarray], "tuple[float, np.ndarray]"]


def strided_supports(k: int) -> list[tuple[int, ...]]:
    """Every evenly spaced set of levels ending at the leaves (index k - 1): strides 1 .. k - 1."""
    return [tuple(range(k - 1, -1, -t))[::-1] for t in range(1, k)] if k > 1 else [(0,)]


def _solve(f: Objective, k: int, support: tuple[int, ...], x0: np.ndarray) -> tuple[np.ndarray, float]:
    """The minimum of f with w zero outside ``support``, from the start x0 (local, SLSQP)."""
    from scipy.optimize import minimize

    idx = np.asarray(support, dtype=np.int64)

    def g(z: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.zeros(k)
        x[idx] = z
        v, grad = f(x)
        return v, grad[idx]

    # half the warm start, half uniform: a level started near zero stays a trap (w = 0 is always
    # stationary for Laplace noise)
    z0 = x0[idx] / max(float(x0[idx].sum()), 1e-300) + 1.0 / idx.size
    lower = np.zeros(idx.size)
    lower[-1] = 1e-3  # the leaves must be measured
    res = minimize(
        g,
        z0 / z0.sum(),
        jac=True,
        method="SLSQP",
        bounds=list(zip(lower, np.ones(idx.size))),
        constraints=[{"type": "eq", "fun": lambda z: z.sum() - 1.0, "jac": lambda z: np.ones_like(z)}],
        options={"maxiter": 500, "ftol": 1e-13},
    )
    x = np.zeros(k)
    x[idx] = np.clip(res.x, 0.0, None)
    x[x < MIN_LEVEL_WEIGHT] = 0.0
    x /= x.sum()
    v = f(x)[0]
    return x, (v if np.isfinite(v) else np.inf)


def _neighbours(support: tuple[int, ...], k: int) -> Iterable[tuple[tuple[int, ...], int | None]]:
    """Supports one move away (the leaves k - 1 always stay), with the level that was added or moved to."""
    inner = set(support) - {k - 1}
    for level in range(k - 1):
        if level not in inner:
            yield tuple(sorted(inner | {level, k - 1})), level
    for level in inner:
        yield tuple(sorted((inner - {level}) | {k - 1})), None
        for step in (-1, 1):
            moved = level + step
            if 0 <= moved < k - 1 and moved not in inner:
                yield tuple(sorted((inner - {level}) | {moved, k - 1})), moved


def _double_shifts(support: tuple[int, ...], k: int) -> Iterable[tuple[tuple[int, ...], int | None]]:
    """Supports with two levels each moved to an adjacent level (tried when no single move helps)."""
    for sup, moved in _neighbours(support, k):
        if moved is not None and len(sup) == len(support):
            for sup2, moved2 in _neighbours(sup, k):
                if moved2 is not None and len(sup2) == len(sup) and moved2 != moved:
                    yield sup2, moved2


def search_supports(f: Objective, k: int, supports: Iterable[tuple[int, ...]], *, keep: int = 3) -> np.ndarray:
    """The best weights found: each start support solved, then a best-improvement local search over
    supports from the ``keep`` best of them (single moves first, then pairs of adjacent shifts)."""
    solved: dict[tuple[int, ...], tuple[np.ndarray, float]] = {}

    def solve(support: tuple[int, ...], x0: np.ndarray) -> tuple[np.ndarray, float]:
        if support not in solved:
            solved[support] = _solve(f, k, support, x0)
        return solved[support]

    starts = []
    for sup in dict.fromkeys(tuple(sorted(set(s) | {k - 1})) for s in supports):
        x0 = np.zeros(k)
        x0[list(sup)] = 1.0
        starts.append(solve(sup, x0))
    starts.sort(key=lambda xv: xv[1])
    best_x, best_v = starts[0]
    for x, v in starts[:keep]:
        while True:
            current = tuple(int(i) for i in np.flatnonzero(x > 0))
            for neighbourhood in (_neighbours, _double_shifts):
                moves = [solve(sup, x) for sup, _ in neighbourhood(current, k)]
                nx, nv = min(moves, key=lambda xv: xv[1], default=(x, v))
                if nv < v * (1.0 - 1e-12):
                    break
            else:
                break
            x, v = nx, nv
        if v < best_v:
            best_x, best_v = x, v
    return best_x
