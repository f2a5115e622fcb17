"""No silent wrong answers, data loss, crashes, hangs or unclear messages.

Each test reproduces one such failure and checks it cannot happen."""

from __future__ import annotations

import numpy as np
import pytest

import dptree
from dptree.errors import DataError, DPTreeError, InvalidParameterError

H = dptree.Hierarchy.from_paths([("US", "CA"), ("US", "NY"), ("FR", "IDF")])
X = np.arange(100)


# ------------------------------------------------------------------ extreme budgets: one range check

_MECHANISMS = {
    "range_tree": lambda e: dptree.range_tree(X, lower=0, upper=1000, epsilon=e),
    "hierarchy": lambda e: dptree.hierarchy_counts([("US", "CA")], H, epsilon=e),
    "hierarchy_gaussian": lambda e: dptree.hierarchy_counts([("US", "CA")], H, epsilon=e, delta=1e-6,
                                                            method="gaussian"),
    "interior_point": lambda e: dptree.interior_point(X, lower=0, upper=1000, epsilon=e),
    "median": lambda e: dptree.median(X, lower=0, upper=1000, epsilon=e),
    "quantile": lambda e: dptree.quantile(X, 0.3, lower=0, upper=1000, epsilon=e),
    "learn_threshold": lambda e: dptree.learn_threshold(X, X % 2, lower=0, upper=1000, epsilon=e),
}


@pytest.mark.parametrize("name", sorted(_MECHANISMS))
@pytest.mark.parametrize("eps", [1e-300, 1e300])
def test_extreme_budgets_are_refused_by_every_mechanism(name, eps):
    with pytest.raises(InvalidParameterError, match="outside the supported range"):
        _MECHANISMS[name](eps)


@pytest.mark.parametrize("name", sorted(set(_MECHANISMS) - {"range_tree"}))
def test_the_ends_of_the_supported_range_run(name):
    lo, hi = dptree.privacy.budget.BUDGET_RANGE
    for eps in (lo * (4 if name == "learn_threshold" else 1), hi):
        for _ in range(3):
            _MECHANISMS[name](eps)


def test_learn_threshold_with_a_tiny_budget_needs_no_memory_for_the_padding():
    # noise of scale 4/epsilon makes the public m huge; S's padding is one value with a count
    for seed in range(20):
        dptree.learn_threshold(X, X % 2, lower=0, upper=1000, epsilon=4e-9, rng=seed)


# ------------------------------------------------------------------ confidence levels and intervals

R = dptree.range_tree(X, lower=0, upper=1000, epsilon=1.0, rng=1)
RG = dptree.range_tree(X, lower=0, upper=1000, epsilon=1.0, delta=1e-6, noise="gaussian", rng=1)


@pytest.mark.parametrize("level", [0.005, 1e-9, 0.9999999999999999])
def test_valid_confidence_levels_give_intervals(level):
    for rel in (R, RG):
        for lo, hi in (rel.ci(0, 10, level=level), rel.cdf_ci(10, level=level), rel.total_ci(level=level)):
            assert np.isfinite(lo) and np.isfinite(hi) and lo <= hi
    hr = dptree.hierarchy_counts([("US", "CA")], H, epsilon=1.0, rng=1)
    lo, hi = hr.ci("US", level=level)
    assert lo <= hi


@pytest.mark.parametrize("level", ["x", None, 1.0, 0.0, True])
def test_invalid_confidence_levels_are_typed_errors(level):
    hr = dptree.hierarchy_counts([("US", "CA")], H, epsilon=1.0, rng=1)
    with pytest.raises(InvalidParameterError, match="confidence level"):
        hr.ci("US", level=level)
    with pytest.raises(InvalidParameterError, match="confidence level"):
        R.ci(0, 10, level=level)


def test_hierarchy_ci_is_never_reversed_for_very_negative_estimates():
    for seed in range(30):
        hr = dptree.hierarchy_counts([("US", "CA")], H, epsilon=1e-3, rng=seed)
        for node in ("", "US", "US/CA", "US/NY", "FR", "FR/IDF"):
            lo, hi = hr.ci(node)
            assert 0.0 <= lo <= hi


def test_ranges_of_different_lengths_are_a_typed_error():
    for f in (R.count, R.stderr, R.ci):
        with pytest.raises(InvalidParameterError, match="same length"):
            f([0, 1], [5, 6, 7])


# ------------------------------------------------------------------ silent drops and raw crashes in the API


def test_hierarchy_counts_refuses_a_weight_it_cannot_use():
    with pytest.raises(InvalidParameterError, match="weight"):
        dptree.hierarchy_counts([("US", "CA")], H, epsilon=1.0, weight="w")


def test_from_paths_none_label_ends_the_path_and_none_paths_are_refused():
    h = dptree.Hierarchy.from_paths([("US", None), ("FR", "IDF")])
    assert "US/None" not in h.all_paths() and "US" in h.all_paths()
    with pytest.raises(DPTreeError):
        dptree.Hierarchy.from_paths([("US", None, "x")])
    with pytest.raises(InvalidParameterError, match="paths"):
        dptree.Hierarchy.from_paths(None)


def test_from_frame_refuses_lists_and_duplicate_columns_and_reads_polars():
    pd = pytest.importorskip("pandas")
    with pytest.raises(InvalidParameterError, match="DataFrame"):
        dptree.Hierarchy.from_frame([1, 2], ["a"])
    with pytest.raises(DPTreeError, match="duplicate"):
        dptree.Hierarchy.from_frame(pd.DataFrame([["x", "y"]], columns=["a", "a"]), ["a"])
    pl = pytest.importorskip("polars")
    h = dptree.Hierarchy.from_frame(pl.DataFrame({"a": ["x", "y"], "b": ["1", "2"]}), ["a", "b"])
    assert "x/1" in h.all_paths()


def test_interior_point_refuses_two_dimensional_input_like_range_tree():
    x2 = np.arange(100).reshape(10, 10)
    for f in (dptree.interior_point, dptree.median):
        with pytest.raises(DataError, match="one-dimensional"):
            f(x2, lower=0, upper=1000, epsilon=1.0)


@pytest.mark.parametrize("fraction", [None, "0.1", True])
def test_learn_threshold_refuses_a_fraction_that_is_not_a_number(fraction):
    with pytest.raises(InvalidParameterError, match="fraction"):
        dptree.learn_threshold(X, X % 2, lower=0, upper=1000, epsilon=1.0, fraction=fraction)


# ------------------------------------------------------------------ no lost file


@pytest.fixture
def csv_and_release(tmp_path, cli_run):
    data = tmp_path / "d.csv"
    data.write_text("age\n1\n5\n30\n")
    rel = tmp_path / "r.json"
    assert cli_run(["release", data, "--column", "age", "--lower", 0, "--upper", 100, "--epsilon", 1,
                    "--out", rel]).code == 0
    return data, rel


def test_no_command_overwrites_its_input(csv_and_release, cli_run):
    data, rel = csv_and_release
    before = data.read_bytes(), rel.read_bytes()
    for argv in (["release", data, "--column", "age", "--lower", 0, "--upper", 100, "--epsilon", 1, "--out", data],
                 ["report", rel, "--out", rel], ["plot", rel, "--out", rel]):
        code, _, err = cli_run(argv + ["--force"])
        assert code == 2 and "input" in err, err
    assert (data.read_bytes(), rel.read_bytes()) == before


def test_a_file_that_is_not_a_dptree_artefact_needs_force(csv_and_release, cli_run):
    data, rel = csv_and_release
    notes = data.parent / "notes.txt"
    notes.write_text("my notes")
    args = ["release", data, "--column", "age", "--lower", 0, "--upper", 100, "--epsilon", 1, "--out", notes]
    code, _, err = cli_run(args)
    assert code == 2 and "--force" in err
    assert notes.read_text() == "my notes"
    assert cli_run(["report", rel, "--out", notes]).code == 2 and cli_run(["plot", rel, "--out", notes]).code == 2
    assert notes.read_text() == "my notes"
    assert cli_run(args + ["--force"]).code == 0
    assert dptree.load(notes).total() is not None
    # an existing release is never replaced without --force (it spent budget); a report or a plot is
    before = rel.read_bytes()
    code, _, err = cli_run(args[:-1] + [rel])
    assert code == 2 and "already holds a dptree range_tree release" in err and "--force" in err, err
    assert rel.read_bytes() == before
    assert cli_run(args[:-1] + [rel, "--force"]).code == 0 and rel.read_bytes() != before
    for cmd, name in (("report", "r.html"), ("plot", "r.png")):
        assert cli_run([cmd, rel, "--out", data.parent / name]).code == 0
        assert cli_run([cmd, rel, "--out", data.parent / name]).code == 0
    with pytest.raises(DPTreeError, match="force=True"):
        R.save(data, allow_nonprivate=True)
    assert data.read_text().startswith("age")


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs FIFOs and symlinks")
def test_links_pipes_and_devices_are_never_replaced(csv_and_release, cli_run):
    import os

    data, rel = csv_and_release
    link = data.parent / "link.json"
    link.symlink_to(rel)
    fifo = data.parent / "fifo"
    os.mkfifo(fifo)
    for target in (link, fifo, "/dev/null"):
        assert cli_run(["plot", rel, "--out", target, "--force"]).code == 2
        with pytest.raises(DPTreeError, match="not a regular file"):
            dptree.load(rel).save(target, force=True)
    assert link.is_symlink() and fifo.is_fifo()


def test_a_failed_save_leaves_no_temporary_file(tmp_path, monkeypatch):
    import os

    def fail(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(DPTreeError, match="No space left"):
        R.save(tmp_path / "r.json", allow_nonprivate=True)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", [".", "", "a\0b"])
def test_bad_release_paths_are_typed_errors(path):
    with pytest.raises(DPTreeError):
        R.save(path, allow_nonprivate=True)
    with pytest.raises(DPTreeError):
        dptree.load(path)


# ------------------------------------------------------------------ dates, floats and huge values


def test_dates_outside_1678_2262_are_clamped_not_wrapped():
    plan = dptree.plan_range_tree(lower="2024-01-01", upper="2024-12-31", epsilon=1.0)
    import datetime as dt

    for values in (
        np.array(["9999-12-31", "9999-12-31", "1000-01-01"], dtype="datetime64[D]"),
        ["9999-12-31", "9999-12-31", "1000-01-01"],
        np.array([dt.datetime(9999, 12, 31, 5), dt.date(9999, 12, 31), dt.date(1, 1, 1)], dtype=object),
    ):
        hist = dptree.leaf_histogram(values, plan)
        assert hist[0] == 1 and hist[plan.domain.size - 1] == 2
    r = dptree.range_tree(np.array(["2024-06-01"], dtype="datetime64[D]"), lower="2024-01-01",
                          upper="2024-12-31", epsilon=1e9, rng=1)
    assert r.cdf("9999-12-31") == pytest.approx(r.total()) and r.cdf("1000-01-01") == pytest.approx(0.0)


@pytest.mark.parametrize("bounds", [("1000-01-01", "2024-12-31"), ("2024-01-01", "9999-12-31")])
def test_date_bounds_outside_the_representable_range_say_so(bounds):
    with pytest.raises(DPTreeError, match="outside the dates dptree can bound"):
        dptree.range_tree(["2024-06-01"], lower=bounds[0], upper=bounds[1], epsilon=1.0)


def test_float_data_with_integer_bounds_is_refused_with_the_fix():
    for values in (np.array([1.2, 1000.9]), [1.2, 3]):
        with pytest.raises(DataError, match="width") as info:
            dptree.range_tree(values, lower=0, upper=2000, epsilon=1.0)
        assert "1.2" not in str(info.value)
    # whole numbers stored as floats are fine, and so are float bounds with a width
    dptree.range_tree(np.array([1.0, 1000.0]), lower=0, upper=2000, epsilon=1.0)
    dptree.range_tree(np.array([1.2, 1000.9]), lower=0.0, upper=2000.0, width=1.0, epsilon=1.0)


def test_integers_beyond_int64_are_clamped_like_any_value_outside_the_bounds():
    plan = dptree.plan_range_tree(lower=0, upper=10, epsilon=1.0)
    hist = dptree.leaf_histogram(np.array([2**70, -(2**80), 5], dtype=object), plan)
    assert hist[10] == 1 and hist[0] == 1 and hist[5] == 1


def test_files_with_out_of_range_values_are_clamped_like_in_memory_data(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    pq = tmp_path / "p.parquet"
    duckdb.connect().execute(
        "COPY (SELECT * FROM (VALUES (18446744073709551615::UBIGINT, DATE '9999-12-31', 1.2e29::DOUBLE, 1.5),"
        " (5::UBIGINT, DATE '0001-01-01', 5.0, 2.0)) t(u, d, x, f)) TO '" + str(pq) + "' (FORMAT PARQUET)"
    )
    csv = tmp_path / "c.csv"
    csv.write_text("u,d,x,f\n18446744073709551615,9999-12-31,1.2e29,1.5\n5,0001-01-01,5,2\n")
    ints = dptree.plan_range_tree(lower=0, upper=100, epsilon=1.0)
    days = dptree.plan_range_tree(lower="2024-01-01", upper="2024-12-31", epsilon=1.0)
    for path in (pq, csv):
        for col in ("u", "x"):
            hist = dptree.leaf_histogram(str(path), ints, column=col)
            assert hist[100] == 1 and hist[5] == 1
        hist = dptree.leaf_histogram(str(path), days, column="d")
        assert hist[0] == 1 and hist[days.domain.size - 1] == 1
        with pytest.raises(DataError, match="width"):
            dptree.leaf_histogram(str(path), ints, column="f")


# ------------------------------------------------------------------ the ledger


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_ledger_killed_during_creation_is_not_left_half_made(tmp_path):
    import os
    import signal
    import time

    from dptree.privacy.ledger import Ledger

    path = tmp_path / "b.ledger"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child: creation stops after the tables, then waits to be killed
        os.close(r)
        try:
            orig = Ledger._create

            def slow(self, requested):
                orig(self, requested)
                os.write(w, b"T")
                time.sleep(30)

            Ledger._create = slow
            Ledger(path, total_epsilon=1.0)
        finally:
            os._exit(1)
    os.close(w)
    assert os.read(r, 1) == b"T"
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(r)
    assert not path.exists()  # not a half-made ledger that is then "corrupt", "new" or "already exists"
    with Ledger(path, total_epsilon=1.0) as led:
        assert led.total_epsilon == 1.0
    with Ledger(path, read_only=True) as led:
        assert led.spent().charges == 0


# ------------------------------------------------------------------ CLI answers, files and memory


def test_query_refuses_range_options_on_a_hierarchy_release(tmp_path, cli_run):
    rows, structure, out = tmp_path / "h.csv", tmp_path / "s.csv", tmp_path / "h.json"
    rows.write_text("country,state\nUS,CA\nFR,IDF\n")
    structure.write_text("country,state\nUS,CA\nUS,NY\nFR,IDF\n")
    assert cli_run(["hierarchy", rows, "--levels", "country,state", "--structure", structure, "--epsilon", 1,
                    "--out", out]).code == 0
    code, _, err = cli_run(["query", out, "--count", "1:2"])
    assert code == 2 and "--node" in err
    assert cli_run(["query", out, "--node", "US"]).code == 0


def test_json_quantiles_are_numbers(csv_and_release, cli_run):
    import json

    _, rel = csv_and_release
    code, out, _ = cli_run(["query", rel, "--quantile", 0.5, "--format", "json"])
    assert code == 0
    answers = json.loads(out)["answers"]
    assert isinstance(answers[0]["estimate"], (int, float))


def test_duckdb_relations_keep_their_weight_in_hierarchy_counts():
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql("SELECT * FROM (VALUES ('US', 'CA', 1000000)) t(country, state, w)")
    out = dptree.hierarchy_counts(rel, H, epsilon=100.0, weight="w", levels=["country", "state"], rng=1)
    assert out.count("US") > 1000


def test_a_ragged_csv_says_its_header_could_not_be_read(tmp_path):
    bad = tmp_path / "r.csv"
    bad.write_text("age,x\n1,2\n3\n")
    plan = dptree.plan_range_tree(lower=0, upper=100, epsilon=1.0)
    with pytest.raises(DPTreeError, match="same number of fields") as info:
        dptree.leaf_histogram(str(bad), plan, column="age")
    assert "available" not in str(info.value)


def test_a_tree_that_does_not_fit_in_memory_is_refused_before_allocating(monkeypatch):
    from dptree.rangetree import plan as ranges
    monkeypatch.setattr(ranges, "available_memory", lambda: 2**30)
    with pytest.raises(DPTreeError, match="memory") as info:
        dptree.plan_range_tree(lower=0, upper=2**26 - 1, epsilon=1.0)
    assert "width" in str(info.value)
    dptree.plan_range_tree(lower=0, upper=1000, epsilon=1.0)


def test_cli_errors_name_flags_not_python_keywords(tmp_path, cli_run):
    data = tmp_path / "d.csv"
    data.write_text("age\n1\n")
    out = tmp_path / "r.json"
    code, _, err = cli_run(["release", data, "--column", "age", "--lower", 0, "--upper", 100, "--epsilon", 1,
                            "--noise", "gaussian", "--out", out])
    assert code == 2 and "--delta 1e-6" in err and "delta=" not in err
    code, _, err = cli_run(["interior-point", data, "--column", "age", "--lower", 0, "--upper", 100, "--epsilon", 1,
                            "--delta", 1e-6, "--method", "treelog"])
    assert code == 2 and "--n " in err and "n=" not in err


def test_report_with_as_many_bins_as_buckets(csv_and_release, cli_run):
    _, rel = csv_and_release
    assert cli_run(["report", rel, "--out", rel.parent / "r.html", "--bins", 10**9]).code == 0


def test_nul_bytes_in_ledger_and_input_paths_are_typed_errors():
    from dptree.privacy.ledger import Ledger

    with pytest.raises(DPTreeError, match="NUL"):
        Ledger("a\0b", total_epsilon=1.0)
    plan = dptree.plan_range_tree(lower=0, upper=10, epsilon=1.0)
    with pytest.raises(DPTreeError):
        dptree.leaf_histogram("a\0b.csv", plan, column="x")
