"""What analysts expect to find: tables, CLI queries and commands, what a
release remembers, plots and reports that use it, progress on stderr, docs that match the code."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.io import release_file as serialize

ROOT = Path(__file__).resolve().parents[2]


def _ages(n: int = 5000) -> np.ndarray:
    return np.random.default_rng(0).integers(18, 90, n)


def _rel(**kw: Any) -> dptree.RangeTree:
    args: dict[str, Any] = dict(lower=0, upper=120, epsilon=1.0, rng=3)
    args.update(kw)
    return dptree.range_tree(_ages(), **args)


def _people(tmp: Path, n: int = 400) -> Path:
    f = tmp / "people.csv"
    ages = _ages(n)
    f.write_text("age,person\n" + "".join(f"{a},{i % 50}\n" for i, a in enumerate(ages)))
    return f


# --------------------------------------------------------------------------- to_frame


def test_range_tree_to_frame_is_one_row_per_bucket_with_the_query_answers() -> None:
    rel = _rel()
    f = rel.to_frame(level=0.9)
    assert list(f.columns) == ["bucket_low", "bucket_high", "estimate", "stderr", "ci_low", "ci_high"]
    assert len(f) == 121 and f.attrs["ci_level"] == 0.9
    for v in (0, 17, 40, 120):
        row = f.iloc[v]
        assert row.bucket_low == v and row.bucket_high == v
        assert row.estimate == pytest.approx(rel.count(v, v))
        assert row.stderr == pytest.approx(rel.stderr(v, v))
        assert (row.ci_low, row.ci_high) == pytest.approx(rel.ci(v, v, level=0.9))
    assert f.estimate.sum() == pytest.approx(rel.total())


def test_float_bucket_edges_in_to_frame() -> None:
    rel = dptree.range_tree(np.linspace(0, 9.9, 200), lower=0.0, upper=10.0, width=0.5, epsilon=1.0, rng=1)
    f = rel.to_frame()
    assert f.bucket_low.iloc[3] == 1.5 and f.bucket_high.iloc[3] == 2.0 and f.bucket_high.iloc[-1] == 10.0


def test_histogram_to_frame_has_intervals_that_match_ci() -> None:
    rel = _rel()
    h = rel.histogram([0, 18, 65, 120], level=0.99)
    f = h.to_frame()
    assert list(f.columns) == ["bin_low", "bin_high", "estimate", "stderr", "ci_low", "ci_high"]
    assert list(f.bin_low) == [0, 18, 65] and list(f.bin_high) == [18, 65, 120]
    assert f.estimate.iloc[1] == pytest.approx(rel.count(18, 64))
    assert (f.ci_low.iloc[1], f.ci_high.iloc[1]) == pytest.approx(rel.ci(18, 64, level=0.99))
    assert (f.ci_low.iloc[2], f.ci_high.iloc[2]) == pytest.approx(rel.ci(65, 120, level=0.99))  # last bin closed


def test_quantiles_have_intervals_that_contain_them_and_grow_with_the_level() -> None:
    rel = _rel(epsilon=0.05)
    qs = [0.1, 0.5, 0.9]
    f = rel.quantiles(qs, level=0.95).to_frame()
    assert list(f.columns) == ["q", "estimate", "ci_low", "ci_high"]
    assert list(f.q) == qs
    assert list(f.estimate) == list(rel.quantile(qs))
    assert (f.ci_low <= f.estimate).all() and (f.estimate <= f.ci_high).all()
    wide = rel.quantiles(qs, level=0.999).to_frame()
    assert (wide.ci_low <= f.ci_low).all() and (wide.ci_high >= f.ci_high).all()
    assert (wide.ci_high - wide.ci_low).sum() > (f.ci_high - f.ci_low).sum()
    true = np.quantile(_ages(), qs)
    assert ((f.ci_low - 1 <= true) & (true <= f.ci_high + 1)).all()


def test_quantile_interval_on_a_date_domain_is_made_of_dates() -> None:
    days = np.datetime64("2024-01-01") + np.random.default_rng(1).integers(0, 300, 3000).astype("timedelta64[D]")
    rel = dptree.range_tree(days.astype("datetime64[ns]"), lower="2024-01-01", upper="2024-12-31", width=dt.timedelta(days=1),
                            epsilon=1.0, rng=2)
    lo, hi = rel.quantile_ci(0.5)
    assert lo.dtype.kind == "M" and lo <= rel.quantile(0.5) <= hi
    assert hi.astype("datetime64[D]") == hi  # a day (a bucket's start), not its last nanosecond
    f = rel.to_frame()
    assert str(f.bucket_low.iloc[0])[:10] == "2024-01-01" and str(f.bucket_high.iloc[0])[:10] == "2024-01-02"


def test_answers_to_frame_and_json_numbers() -> None:
    rel = _rel()
    ans = rel.answer(count=[(18, 29)], cdf=[40], quantile=[0.5], total=True, level=0.95)
    f = ans.to_frame()
    assert list(f["query"]) == ["count[18, 29]", "cdf(40)", "quantile(0.5)", "total"]
    assert f.estimate.iloc[0] == pytest.approx(rel.count(18, 29))
    assert (f.ci_low.iloc[1], f.ci_high.iloc[1]) == pytest.approx(rel.cdf_ci(40))
    q = ans.rows[2]
    assert isinstance(q["estimate"], int) and q["estimate"] == int(rel.quantile(0.5))
    assert isinstance(q["ci_low"], int) and q["ci_low"] <= q["estimate"] <= q["ci_high"]
    json.dumps(ans.rows)
    far = rel.answer(cdf=[1e300], count=[(-1e20, 29)]).to_frame()  # beyond the domain: a short label
    assert list(far["query"]) == ["count[-1e+20, 29]", "cdf(1e+300)"]
    assert far.estimate.iloc[1] == pytest.approx(rel.total())


def test_hierarchy_grouped_and_single_value_results_have_frames() -> None:
    h = dptree.Hierarchy.from_paths([("US", "CA"), ("US", "NY"), ("FR", "IDF")])
    rel = dptree.hierarchy_counts([("US", "CA")] * 30 + [("FR", "IDF")] * 5, h, epsilon=1.0, rng=0)
    f = rel.to_frame(level=0.9)
    assert {"path", "estimate", "stderr", "ci_low", "ci_high"} <= set(f.columns)
    row = f[f.path == "US"].iloc[0]
    assert (row.ci_low, row.ci_high) == pytest.approx(rel.ci("US", level=0.9))
    assert row.stderr == pytest.approx(rel.stderr("US"))

    vals = np.arange(200) % 50
    g = dptree.range_tree_by(vals, by=np.where(vals < 25, "a", "b"), groups=["a", "b"], lower=0, upper=49,
                             epsilon=1.0, rng=1)
    gf = g.to_frame()
    assert list(gf.columns[:3]) == ["group", "bucket_low", "bucket_high"] and len(gf) == 100
    assert gf[gf.group == "b"].estimate.to_numpy() == pytest.approx(g["b"].leaf_estimates)

    ip = dptree.interior_point(vals, lower=0, upper=100, epsilon=1.0, rng=1)
    assert ip.to_frame().estimate.iloc[0] == ip.value and ip.to_frame().method.iloc[0] == ip.method
    med = dptree.median(vals, lower=0, upper=100, epsilon=1.0, rng=1)
    mf = med.to_frame()
    assert list(mf.columns[:2]) == ["q", "estimate"] and mf.estimate.iloc[0] == med.value
    th = dptree.learn_threshold(vals, (vals < 20).astype(int), lower=0, upper=100, epsilon=1.0, delta=1e-6, rng=1)
    assert th.to_frame().estimate.iloc[0] == th.threshold or th.to_frame().constant.iloc[0] == th.constant


# --------------------------------------------------------------------------- CLI


def test_query_json_gives_numbers_and_quantile_intervals(tmp_path: Path, cli_run: Any) -> None:
    rel = _rel()
    rel.save(tmp_path / "r.json", allow_nonprivate=True)
    code, out, err = cli_run(["query", str(tmp_path / "r.json"), "--quantile", "0.5", "--quantile", "0.9",
                              "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)["answers"]
    assert [r["query"] for r in rows] == ["quantile(0.5)", "quantile(0.9)"]
    for r, q in zip(rows, (0.5, 0.9)):
        assert isinstance(r["estimate"], int) and r["estimate"] == int(rel.quantile(q))
        assert isinstance(r["ci_low"], int) and r["ci_low"] <= r["estimate"] <= r["ci_high"]
    code, out, _ = cli_run(["query", str(tmp_path / "r.json"), "--quantile", "0.5"])
    assert re.search(r"quantile\(0\.5\)\s+\d+\s+\[\d+, \d+\]", out), out
    floats = dptree.range_tree(np.linspace(1, 9, 500), lower=0.0, upper=10.0, width=0.01, epsilon=1.0, rng=1)
    floats.save(tmp_path / "f.json", allow_nonprivate=True)
    code, out, _ = cli_run(["query", str(tmp_path / "f.json"), "--quantile", "0.5", "--format", "json"])
    assert isinstance(json.loads(out)["answers"][0]["estimate"], float)


def test_query_histogram_edges_and_round_bins(tmp_path: Path, cli_run: Any) -> None:
    rel = _rel()
    rel.save(tmp_path / "r.json", allow_nonprivate=True)
    code, out, err = cli_run(["query", str(tmp_path / "r.json"), "--histogram", "0,18,65,120", "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)["answers"]
    h = rel.histogram([0, 18, 65, 120])
    assert [r["query"] for r in rows] == ["bin[0, 18)", "bin[18, 65)", "bin[65, 120]"]
    assert [r["estimate"] for r in rows] == pytest.approx(list(h.counts))
    assert [r["ci_low"] for r in rows] == pytest.approx(list(h.ci_low))
    code, out, _ = cli_run(["query", str(tmp_path / "r.json"), "--bins", "6", "--format", "json"])
    names = [r["query"] for r in json.loads(out)["answers"]]
    assert names == ["bin[0, 20)", "bin[20, 40)", "bin[40, 60)", "bin[60, 80)", "bin[80, 100)", "bin[100, 120]"]
    code, _, err = cli_run(["query", str(tmp_path / "r.json"), "--bins", "6", "--histogram", "0,1"])
    assert code == 2 and "not both" in err


def test_nice_edges_are_round() -> None:
    from dptree.data.domain import make_domain
    from dptree.reporting.plot import nice_edges

    assert list(nice_edges(make_domain(0, 120), 30)) == list(range(0, 121, 5))
    assert list(nice_edges(make_domain(17, 93), 8)) == [17, 20, 30, 40, 50, 60, 70, 80, 90, 93]
    assert list(nice_edges(make_domain(0.0, 1.0, 0.001), 10)) == pytest.approx(np.linspace(0, 1, 11))
    assert list(nice_edges(make_domain(1, 5000), 10, log=True)) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000,
                                                                     5000]
    assert list(nice_edges(make_domain(0, 5000), 10, log=True)) == list(range(0, 5001, 500))  # 0: linear
    days = nice_edges(make_domain("2024-01-01", "2024-12-31", dt.timedelta(days=1)), 12)
    assert days[0] == np.datetime64("2024-01-01") and days[-1] == np.datetime64("2024-12-31")
    assert [str(d)[:10] for d in days[1:-1]] == [f"2024-{m:02d}-01" for m in range(2, 13)]  # calendar months
    quarters = nice_edges(make_domain("2024-01-01", "2024-12-31", dt.timedelta(days=1)), 4)
    assert [str(d)[:10] for d in quarters] == ["2024-01-01", "2024-04-01", "2024-07-01", "2024-10-01", "2024-12-31"]
    weeks = nice_edges(make_domain("2024-01-01", "2024-03-31", dt.timedelta(days=1)), 12)
    assert set(np.diff(weeks[1:-1]).astype("timedelta64[D]").astype(int)) == {7}


def test_release_says_where_it_wrote_and_remembers_column_and_source(tmp_path: Path, cli_run: Any) -> None:
    data = _people(tmp_path)
    out_path = tmp_path / "age.json"
    code, out, err = cli_run(["release", str(data), "--column", "age", "--lower", "0", "--upper", "120",
                              "--epsilon", "1", "--out", str(out_path)])
    assert code == 0, err
    assert out.startswith("RangeTree of 'age'") and "wrote" not in out  # the result on stdout
    assert err.strip().splitlines()[-1] == f"wrote {out_path}"  # the diagnostic on stderr
    rel = dptree.load(out_path)
    assert rel.metadata["column"] == "age" and rel.metadata["source"] == str(data) and rel.column == "age"
    created = dt.datetime.strptime(rel.metadata["created_utc"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    assert abs((dt.datetime.now(dt.timezone.utc) - created).total_seconds()) < 600
    # bounded and grouped releases say it too
    code, out, err = cli_run(["release", str(data), "--column", "age", "--lower", "0", "--upper", "120",
                              "--epsilon", "1", "--user-id", "person", "--out", str(tmp_path / "b.json")])
    assert code == 0 and err.strip().splitlines()[-1] == f"wrote {tmp_path / 'b.json'}", err


def test_the_ledger_charge_is_kept_and_shown_in_the_report(tmp_path: Path, cli_run: Any) -> None:
    data = _people(tmp_path)
    led = tmp_path / "budget.sqlite"
    assert cli_run(["budget", str(led), "--create", "--total-epsilon", "2"]).code == 0
    code, out, err = cli_run(["release", str(data), "--column", "age", "--lower", "0", "--upper", "120",
                              "--epsilon", "0.5", "--ledger", str(led), "--ledger-label", "ages-q1",
                              "--out", str(tmp_path / "r.json")])
    assert code == 0, err
    meta = dptree.load(tmp_path / "r.json").metadata["ledger"]
    assert meta["label"] == "ages-q1" and meta["epsilon"] == 0.5 and meta["path"] == str(led)
    assert cli_run(["report", str(tmp_path / "r.json"), "--out", str(tmp_path / "r.html")]).code == 0
    text = (tmp_path / "r.html").read_text()
    assert "Ledger charge" in text and "ages-q1" in text and "epsilon = 0.5" in text
    _rel().save(tmp_path / "plain.json", allow_nonprivate=True)
    assert cli_run(["report", str(tmp_path / "plain.json"), "--out", str(tmp_path / "p.html")]).code == 0
    assert "Ledger charge" not in (tmp_path / "p.html").read_text()


def test_median_and_quantile_commands(tmp_path: Path, cli_run: Any, monkeypatch: Any) -> None:
    data = _people(tmp_path)
    code, out, err = cli_run(["median", str(data), "--column", "age", "--lower", "0", "--upper", "1000",
                              "--epsilon", "2", "--seed", "1", "--allow-nonprivate"])
    assert code == 0, err
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert 40 <= int(lines["median"]) <= 65  # ages are uniform on 18..89
    code, out, err = cli_run(["quantile", str(data), "--column", "age", "--q", "0.9", "--lower", "0", "--upper", "1000",
                              "--epsilon", "2", "--seed", "1", "--allow-nonprivate"])
    assert code == 0, err
    value = int(dict(line.split(": ", 1) for line in out.strip().splitlines())["quantile(0.9)"])
    assert 75 <= value <= 89
    monkeypatch.setattr("sys.stdin", io.StringIO("v\n" + "".join(f"{v}\n" for v in range(1, 201))))
    code, out, err = cli_run(["median", "-", "--column", "v", "--lower", "0", "--upper", "200", "--epsilon", "1",
                              "--seed", "1", "--allow-nonprivate"])
    assert code == 0, err
    assert 70 <= int(out.split("median: ", 1)[1].split()[0]) <= 130
    code, out, err = cli_run(["median", str(data), "--column", "age", "--lower", "0", "--upper", "1000"])
    assert code == 2 and out == "" and "usage" in err  # --epsilon is required
    assert err.splitlines()[-1].startswith("dptree: error: the following arguments are required: --epsilon")


def test_interior_point_and_median_read_parquet(tmp_path: Path, cli_run: Any) -> None:
    pq = tmp_path / "lat.parquet"
    pd.DataFrame({"latency": np.arange(400, 700, dtype=np.int64)}).to_parquet(pq)
    for cmd in ("interior-point", "median"):
        code, out, err = cli_run([cmd, str(pq), "--column", "latency", "--lower", "0", "--upper", "1000",
                                  "--epsilon", "1", "--seed", "3", "--allow-nonprivate"])
        assert code == 0, err
        key = "interior_point" if cmd == "interior-point" else "median"
        value = int(out.split(f"{key}: ", 1)[1].split()[0])
        assert 400 <= value <= 699 and (cmd != "median" or 500 <= value <= 600)
    noext = tmp_path / "lat.data"
    noext.write_bytes(pq.read_bytes())  # detected from the file's first bytes, like release
    code, out, err = cli_run(["interior-point", str(noext), "--column", "latency", "--lower", "0", "--upper", "1000",
                              "--epsilon", "1", "--seed", "3", "--allow-nonprivate"])
    assert code == 0 and 400 <= int(out.split("interior_point: ", 1)[1].split()[0]) <= 699, err


# --------------------------------------------------------------------------- release files


def test_metadata_round_trips_and_old_files_without_it_still_load(tmp_path: Path) -> None:
    csv = tmp_path / "a.csv"
    csv.write_text("age\n" + "\n".join(map(str, _ages(300))) + "\n")
    rel = dptree.range_tree(str(csv), column="age", lower=0, upper=120, epsilon=1.0)
    assert rel.metadata["column"] == "age" and rel.metadata["source"] == str(csv)
    rel.save(tmp_path / "r.json")
    back = dptree.load(tmp_path / "r.json")
    assert back.metadata == rel.metadata and "'age'" in back.summary()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["metadata"]["column"] == "age"
    old = {k: v for k, v in doc.items() if k not in ("metadata", "checksum")}
    old["checksum"] = serialize.canonical_checksum(old)
    (tmp_path / "old.json").write_text(json.dumps(old))
    legacy = dptree.load(tmp_path / "old.json")
    assert legacy.metadata == {} and legacy.column is None and legacy.count(18, 29) == rel.count(18, 29)
    bad = dict(old, metadata={"column": 5})
    bad["checksum"] = serialize.canonical_checksum(bad)
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ReleaseFileError, match="metadata"):
        dptree.load(tmp_path / "bad.json")


def test_metadata_is_declared_public_and_holds_nothing_from_the_rows() -> None:
    from dptree.privacy.boundary import undeclared_fields

    rel = _rel()
    assert set(rel.metadata) == {"column", "source", "created_utc"} and not undeclared_fields(rel)
    other = dptree.range_tree(_ages(10), lower=0, upper=120, epsilon=1.0, rng=3)
    assert {k: v for k, v in other.metadata.items() if k != "created_utc"} == \
        {k: v for k, v in rel.metadata.items() if k != "created_utc"}
    h = dptree.Hierarchy.from_paths([("US", "CA"), ("FR", "IDF")])
    hr = dptree.hierarchy_counts([("US", "CA")], h, epsilon=1.0, levels=["country", "state"], rng=0)
    assert hr.column == "country,state" and not undeclared_fields(hr)
    assert dptree.HierarchyRelease.from_dict(json.loads(json.dumps(hr.to_dict()))).metadata == hr.metadata


# --------------------------------------------------------------------------- plots and reports


class _Captured:
    def __init__(self, monkeypatch: Any) -> None:
        import dptree.reporting.plot as plot

        self.figs: list[Any] = []
        real = plot._save

        def keep(fig: Any, path: Any) -> None:
            ax = fig.axes[0]
            self.figs.append({"xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(), "title": ax.get_title(),
                              "xscale": ax.get_xscale(), "ylim": ax.get_ylim(),
                              "heights": [p.get_height() for p in ax.patches],
                              "widths": [p.get_width() for p in ax.patches]})
            real(fig, path)

        monkeypatch.setattr(plot, "_save", keep)


def test_plots_label_the_column_use_log_scale_and_show_negatives(tmp_path: Path, monkeypatch: Any) -> None:
    from dptree.reporting.plot import plot_cdf, plot_hierarchy, plot_histogram

    cap = _Captured(monkeypatch)
    vals = np.concatenate([np.full(3000, 5), np.arange(1, 1000)])
    rel = dptree.range_tree(vals, lower=1, upper=1000, epsilon=0.05, rng=4, column=None)
    rel.metadata["column"] = "latency"
    plot_cdf(rel, tmp_path / "c.png", log=True)
    plot_histogram(rel, tmp_path / "h.png", bins=50)
    plot_histogram(rel, tmp_path / "k.png", bins=50, clip_negative=True)
    cdf, hist, clipped = cap.figs
    assert cdf["xlabel"] == "latency" and cdf["xscale"] == "log" and "latency" in cdf["title"]
    h = rel.histogram(__import__("dptree.reporting.plot", fromlist=["x"]).nice_edges(rel.domain, 50))
    assert h.counts.min() < 0  # this noisy release has negative bins ...
    assert min(hist["heights"]) == pytest.approx(h.counts.min())  # ... drawn as released
    assert hist["ylim"][0] < h.counts.min()
    assert min(clipped["heights"]) == 0.0 and "post-processed" in clipped["title"]
    hr = dptree.hierarchy_counts([("US", "CA")] * 3, dptree.Hierarchy.from_paths([("US", "CA"), ("FR", "IDF")]),
                                 epsilon=0.1, levels=["country", "state"], rng=2)
    plot_hierarchy(hr, tmp_path / "hh.png")
    assert cap.figs[-1]["ylabel"] == "country"
    assert sorted(cap.figs[-1]["widths"]) == pytest.approx(sorted(hr.to_frame().query("depth == 1")["count"]))


def test_report_has_csv_downloads_metadata_and_works_for_hierarchies(tmp_path: Path, cli_run: Any) -> None:
    from dptree.reporting.report import render_report

    data = _people(tmp_path)
    assert cli_run(["release", str(data), "--column", "age", "--lower", "0", "--upper", "120", "--epsilon", "1",
                    "--out", str(tmp_path / "r.json")]).code == 0
    rel = dptree.load(tmp_path / "r.json")
    text = render_report(rel, bins=6)
    assert "<th>Column</th><td>age</td>" in text and f"<th>Source</th><td>{data}</td>" in text
    assert "Created (UTC)" in text and "histogram of age" in text
    links = dict(re.findall(r'download="([^"]+)" href="data:text/csv;charset=utf-8;base64,([A-Za-z0-9+/=]+)"', text))
    assert set(links) == {"age-histogram.csv", "age-quantiles.csv"}
    hist = pd.read_csv(io.BytesIO(base64.b64decode(links["age-histogram.csv"])))
    expected = rel.histogram([0, 20, 40, 60, 80, 100, 120])
    assert list(hist.bin_low) == [0, 20, 40, 60, 80, 100]
    assert hist.estimate.to_numpy() == pytest.approx(expected.counts)
    assert hist.ci_high.to_numpy() == pytest.approx(expected.ci_high)
    quant = pd.read_csv(io.BytesIO(base64.b64decode(links["age-quantiles.csv"])))
    assert list(quant.estimate) == [int(v) for v in rel.quantile(list(quant.q))]

    rows = tmp_path / "rows.csv"
    rows.write_text("country,state\n" + "US,CA\n" * 20 + "FR,IDF\n" * 4)
    structure = tmp_path / "s.csv"
    structure.write_text("country,state\nUS,CA\nUS,NY\nFR,IDF\n")
    assert cli_run(["hierarchy", str(rows), "--levels", "country,state", "--structure", str(structure),
                    "--epsilon", "1", "--out", str(tmp_path / "h.json")]).code == 0
    code, out, err = cli_run(["report", str(tmp_path / "h.json"), "--out", str(tmp_path / "h.html")])
    assert code == 0, err
    page = (tmp_path / "h.html").read_text()
    assert "by country, state" in page and "data:image/png;base64," in page and f"{rows}" in page
    nodes = re.search(r'download="country_state-nodes.csv" href="data:text/csv;charset=utf-8;base64,([^"]+)"', page)
    assert nodes is not None
    frame = pd.read_csv(io.BytesIO(base64.b64decode(nodes.group(1))), keep_default_na=False)
    hrel = dptree.load(tmp_path / "h.json")
    assert frame.set_index("path").loc["US", "estimate"] == pytest.approx(hrel.to_frame().set_index("path")
                                                                        .loc["US", "estimate"])
    code, _, err = cli_run(["query", str(tmp_path / "h.json"), "--bins", "4"])
    assert code == 2 and "--node" in err
    code, out, err = cli_run(["plot", str(tmp_path / "h.json"), "--out", str(tmp_path / "h.png")])
    assert code == 0 and (tmp_path / "h.png").read_bytes()[:4] == b"\x89PNG", err


def test_plot_kind_histogram_and_log_from_the_cli(tmp_path: Path, cli_run: Any) -> None:
    rel = dptree.range_tree(np.arange(1, 500), lower=1, upper=1000, epsilon=1.0, rng=1)
    rel.save(tmp_path / "r.json", allow_nonprivate=True)
    code, out, err = cli_run(["plot", str(tmp_path / "r.json"), "--kind", "histogram", "--log", "--clip-negative",
                              "--out", str(tmp_path / "h.png")])
    assert code == 0 and out == "" and err.strip() == f"wrote {tmp_path / 'h.png'}", err


# --------------------------------------------------------------------------- progress


def test_duckdb_progress_goes_to_stderr_never_stdout(tmp_path: Path, monkeypatch: Any) -> None:
    from dptree.data.engines import duckdb as db
    from dptree.data.engines import duckdb_progress

    data = _people(tmp_path)
    with db.open_table(str(data)) as (con, _):
        assert con.execute("SELECT current_setting('enable_progress_bar_print')").fetchone()[0] is False
    monkeypatch.setattr(duckdb_progress, "PROGRESS_INTERVAL", 0.02)
    seen: list[str] = []
    with db.open_table(str(data), progress=seen.append) as (con, _):
        assert con.execute("SELECT current_setting('enable_progress_bar_print')").fetchone()[0] is False
        con.execute("SELECT count(*) FROM range(300000000) t(x) WHERE x % 7 = 3").fetchall()
    assert seen and all(re.fullmatch(r"reading .*: (DuckDB query \d+% done|still working)", m) for m in seen)
    assert any("% done" in m for m in seen)


def test_bounded_release_reports_its_stages_on_stderr(tmp_path: Path) -> None:
    data = _people(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "dptree.cli.main", "release", str(data), "--column", "age", "--lower", "0", "--upper", "120",
         "--epsilon", "1", "--user-id", "person", "--max-contributions", "2", "--progress",
         "--out", str(tmp_path / "b.json")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for stage in ("keeping at most 2 record(s) per user", "counting records per user",
                  "drawing which 2 record(s) each user keeps", "histogram computed"):
        assert stage in proc.stderr
    assert "dptree:" not in proc.stdout and "%" not in proc.stdout
    assert proc.stdout.startswith("RangeTree of 'age'") and "wrote" not in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == f"wrote {tmp_path / 'b.json'}"


def test_median_command_rejects_a_bad_level(tmp_path: Path, cli_run: Any) -> None:
    data = _people(tmp_path)
    code, _, err = cli_run(["quantile", str(data), "--column", "age", "--q", "1.5", "--lower", "0", "--upper", "100",
                            "--epsilon", "1"])
    assert code == 2 and "q must be a finite number >= 0 and <= 1" in err


def test_quantile_levels_are_checked_once() -> None:
    with pytest.raises(InvalidParameterError):
        _rel().quantiles([1.5])


def test_the_creation_time_is_read_before_the_data(tmp_path: Path, cli_run: Any, monkeypatch: Any) -> None:
    """A time taken after reading would tell how long the reading took (about the number of rows)."""
    import dptree.data.engines.duckdb as db
    import dptree.data.histograms as hist

    read = {"done": False}
    monkeypatch.setattr(serialize, "utc_now", lambda: "AFTER" if read["done"] else "BEFORE")
    for module, name in ((hist, "leaf_histogram"), (db.DuckDBEngine, "counts")):
        real = getattr(module, name)

        def reading(*a: Any, _real: Any = real, **k: Any) -> Any:
            out = _real(*a, **k)
            read["done"] = True
            return out

        monkeypatch.setattr(module, name, reading)
    assert dptree.range_tree(_ages(50), lower=0, upper=120, epsilon=1.0).metadata["created_utc"] == "BEFORE"
    read["done"] = False
    data = _people(tmp_path)
    assert cli_run(["release", str(data), "--column", "age", "--lower", "0", "--upper", "120", "--epsilon", "1",
                    "--out", str(tmp_path / "r.json")]).code == 0
    assert read["done"] and dptree.load(tmp_path / "r.json").metadata["created_utc"] == "BEFORE"
