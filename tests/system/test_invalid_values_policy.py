"""One declared invalid-value policy for every product, method and input kind.

D is 1..60 (floats) on the integer domain [0, 120]; D' is D plus one invalid record: a non-integer
(2.5), a NaN, or an entry that is not a number (text). Under ``on_invalid="drop"`` D' releases
exactly what D releases with the same seed (the record is left out before anything else reads it;
an error on D' alone would tell, at epsilon = infinity, that D' holds it). Under
``on_invalid="error"`` every such input raises a :class:`DataError` whose message names the kind of
problem and the fix, the same for any number or position of invalid records, and never a value or
a count (docs/notes/privacy.md, "One invalid-value policy").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import DataError

D = np.arange(1, 61, dtype=float)
BAD = {"non-integer": 2.5, "nan": np.nan, "text": "n/a"}
KW: dict[str, Any] = dict(lower=0, upper=120, epsilon=1.0, rng=3)


def _tree(data: Any, column: str | None, policy: str, user: Any) -> Any:
    return dptree.range_tree(data, column=column, on_invalid=policy, **KW)


def _tree_user(data: Any, column: str | None, policy: str, user: Any) -> Any:
    return dptree.range_tree(data, column=column, user_id=user, max_contributions=1, on_invalid=policy, **KW)


def _tree_by(data: Any, column: str | None, policy: str, user: Any) -> Any:
    return dptree.range_tree_by(data, column=column, by=user, groups=list(range(110)), on_invalid=policy, **KW)


def _sparse(data: Any, column: str | None, policy: str, user: Any) -> Any:
    return dptree.sparse_range_tree(data, column=column, on_invalid=policy, **KW)


def _quantiles(method: str) -> Callable[..., Any]:
    def run(data: Any, column: str | None, policy: str, user: Any) -> Any:
        extra = {"n_max": 100} if method == "joint" else {}
        qs = [0.1, 0.3, 0.5, 0.7, 0.9]  # five levels on [0, 120]: auto picks the tree
        rel = dptree.quantiles(data, qs, column=column, method=method, on_invalid=policy, **extra, **KW)
        assert method != "auto" or rel.method == "tree"
        return rel
    return run


PRODUCTS: dict[str, Callable[..., Any]] = {
    "range_tree": _tree,
    "range_tree user_id": _tree_user,
    "range_tree_by": _tree_by,
    "sparse_range_tree": _sparse,
    **{f"quantiles {m}": _quantiles(m) for m in ("tree", "auto", "approx", "exponential", "joint")},
    "interior_point": lambda d, c, p, u: dptree.interior_point(d, column=c, on_invalid=p, **KW),
    "median": lambda d, c, p, u: dptree.median(d, column=c, on_invalid=p, **KW),
    "quantile": lambda d, c, p, u: dptree.quantile(d, 0.3, column=c, on_invalid=p, **KW),
}


def _field(v: Any) -> str:
    if isinstance(v, str):
        return v
    if v != v:
        return ""  # an empty CSV field is missing
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _input(kind: str, values: list[Any], tmp: Path, name: str) -> tuple[Any, str | None, Any]:
    """(data, column, user ids or their column) of ``values``: one user and one group per record,
    the valid records' ids in order from 0, then the invalid ones'."""
    invalid = [isinstance(v, str) or v != v or not float(v).is_integer() for v in values]
    users = np.where(invalid, 100 + np.cumsum(invalid), np.cumsum(np.logical_not(invalid)))
    if kind == "numpy":
        text = any(isinstance(v, str) for v in values)
        return np.array(values, dtype=object if text else float), None, users
    if kind == "pandas":
        return pd.DataFrame({"x": values, "u": users}), "x", "u"
    path = tmp / f"{name}.csv"
    path.write_text("x,u\n" + "".join(f"{_field(v)},{u}\n" for v, u in zip(values, users)))
    return str(path), "x", "u"


def _output(rel: Any) -> Any:
    return rel.to_frame().drop(columns=["group"], errors="ignore").to_numpy().tolist()


@pytest.mark.parametrize("kind", ["numpy", "pandas", "csv"])
@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("product", list(PRODUCTS))
def test_the_drop_policy_releases_the_same_on_d_and_d_prime(product: str, bad: str, kind: str,
                                                            tmp_path: Path) -> None:
    run = PRODUCTS[product]
    clean = _input(kind, list(D), tmp_path, "d")
    dirty = _input(kind, list(D[:30]) + [BAD[bad]] + list(D[30:]), tmp_path, "d_prime")
    assert _output(run(*dirty[:2], "drop", dirty[2])) == _output(run(*clean[:2], "drop", clean[2]))


@pytest.mark.parametrize("kind", ["numpy", "pandas", "csv"])
@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("product", list(PRODUCTS))
def test_the_error_policy_refuses_with_one_data_independent_message(product: str, bad: str, kind: str,
                                                                    tmp_path: Path) -> None:
    run = PRODUCTS[product]
    messages = set()
    for name, values in (("one", list(D) + [BAD[bad]]), ("three", [BAD[bad]] * 3 + list(D[:40]))):
        data, column, user = _input(kind, values, tmp_path, name)
        with pytest.raises(DataError) as info:
            run(data, column, "error", user)
        assert type(info.value) is DataError
        messages.add(str(info.value))
    (message,) = messages  # the same for one invalid record at the end and three at the start
    assert "on_invalid='drop'" in message
    for private in ("2.5", "n/a'", " 60", " 61", " 40", " 43", " 3 "):
        assert private not in message.replace("'n/a', True/False", ""), (private, message)


@pytest.mark.parametrize("command", [["release"], ["release", "--user-id", "u"], ["quantiles", "--q", "0.1,0.5,0.9",
                                                                                 "--method", "tree"],
                                     ["quantiles", "--q", "0.5", "--method", "approx"], ["median"],
                                     ["release", "--sparse"]])
def test_the_cli_applies_one_policy_and_names_its_flag(command: list[str], tmp_path: Path, cli_run: Any) -> None:
    """``--on-invalid drop``: D and D' (D plus 2.5) write the same release; without it, D' is refused
    with a message naming the flag, never a Python parameter."""
    outs = []
    for name, values in (("d", list(D)), ("d_prime", list(D) + [2.5])):
        path, column, _ = _input("csv", values, tmp_path, name)
        out = tmp_path / f"{name}.json"
        args = [command[0], path, "--column", column, *command[1:], "--lower", "0", "--upper", "120", "--epsilon",
                "1", "--seed", "5", "--allow-nonprivate", "--force", "--out", out]
        res = cli_run([*args, "--on-invalid", "drop"])
        assert res.code == 0, res.err
        outs.append(dptree.load(str(out)).to_frame())
        if name == "d_prime":
            refused = cli_run(args)
            assert refused.code == 2 and "--on-invalid drop" in refused.err and "on_invalid" not in refused.err
    pd.testing.assert_frame_equal(outs[0], outs[1])


def test_missing_is_a_deprecated_name_of_on_invalid(tmp_path: Path, cli_run: Any) -> None:
    values = np.array([1.0, np.nan, 3.0])
    want = dptree.range_tree(values, on_invalid="drop", **KW).leaf_estimates
    with pytest.warns(DeprecationWarning, match="on_invalid"):
        got = dptree.range_tree(values, missing="drop", **KW).leaf_estimates
    assert np.array_equal(got, want)
    with pytest.warns(DeprecationWarning), pytest.raises(dptree.InvalidParameterError, match="on_invalid= only"):
        dptree.range_tree(values, missing="error", on_invalid="drop", **KW)
    path, column, _ = _input("csv", list(values), tmp_path, "d")
    res = cli_run(["release", path, "--column", column, "--lower", "0", "--upper", "9", "--epsilon", "1", "--seed", "1",
                   "--allow-nonprivate", "--out", tmp_path / "o.json", "--missing", "drop"])
    assert res.code == 0 and "--missing is deprecated; use --on-invalid" in res.err
