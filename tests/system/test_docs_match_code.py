"""Issue 14: docs that match the code. The README's interval wording and its Python snippets, and
docs/notes/cdf-vs-daily.md's numbers, recomputed from the exact variance formulas."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]



def test_readme_calls_ci_variance_gamma_and_its_library_snippets_run(tmp_path: Path, monkeypatch: Any) -> None:
    readme = (ROOT / "README.md").read_text()
    assert "normal-approximation" not in readme and "normal approximation" not in readme
    assert "variance-gamma" in readme and "docs/notes/cdf-vs-daily.md" in readme
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert len(blocks) >= 2
    env: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), env)  # noqa: S102 - the README's own examples


def test_cdf_vs_daily_doc_matches_the_exact_variances() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import cdf_vs_daily as bench
    finally:
        sys.path.pop(0)
    doc = (ROOT / "docs" / "notes" / "cdf-vs-daily.md").read_text()
    assert bench.markdown() in doc
    cdf_day, window_days = bench.break_even("cdf"), bench.break_even("window")
    assert f"From day **{cdf_day}** on" in doc and f"**{window_days}** days or more" in doc
    rows = {r["k"]: r for r in bench.table()}
    assert rows[365]["cdf"] < rows[365]["daily"] and rows[1]["cdf"] > rows[1]["daily"]
    ratio = (rows[365]["daily"] / rows[365]["cdf"]) ** 2
    assert f"{ratio:.1f} times the tree's" in doc
    from dptree.noise import discrete_laplace_variance

    assert f"variance {discrete_laplace_variance(1):.3f}" in doc
