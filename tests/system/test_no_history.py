"""The library's source states what the code does, not how it got there.

Comments, docstrings, messages and CLI output name no issue numbers, no dates and no "seed 00N"
(a file name in the project's reference folder that means nothing to a user): papers are cited by
author and year (docs/notes/seeds.md maps each to its document). Development history belongs in git log.

The one exception is text that saved release files already contain: a release's privacy statement
(its ``mechanism`` field) is re-derived by the loader and compared whole
(:func:`dptree.privacy.statement.check_statement`), so rewording it would refuse every file saved
so far. :data:`STORED` lists those literals, file by file.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "dptree"
#: what a user reads: the README, the user guide and the API reference's pages (the notes in
#: docs/notes/ are measurement records, whose dates and commands belong to them)
USER_DOCS = ["README.md", "docs/index.md", "docs/guide/*.md", "docs/api/*.rst"]

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*"
HISTORY = re.compile(
    r"\b[Ii]ssues? #?\d+"  # issue 12, issues 10
    r"|\b(?:[Ii]ssues?|PR|[Ff]ix(?:es|ed)?|[Ss]ee|in) #\d+"  # fixed in #12
    rf"|\b{_MONTH} \d{{1,2}}\b"  # Nov 24
    r"|\b\d{1,2}:\d{2} UTC\b"  # 14:00 UTC
    r"|\b[Ss]eeds? 00\d"  # seed 001, seeds 000, 003
    r"|\bfiles? (?:written |made |saved )?before (?:issue|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
)

#: statement literals stored in saved release files (file -> substrings of the allowed lines)
STORED: dict[str, tuple[str, ...]] = {
    "hierarchy/document.py": ('_ZCDP_ONLY = ("discrete Gaussian on every node (seed 001',),
    "hierarchy/measure.py": ('"discrete Laplace on every node (seed 001', '"discrete Gaussian on every node (seed 001',
                             '"multiplicative-error algorithm of seed 001 Theorem 4.1'),
    "quantiles/release.py": ('" (seeds 000, 003, 004)"', "(one per level, seed 002 Lemma 2.2)"),
    "interior/calibration.py": ('(seed 002, Lemma 2.2 and Algorithm 1 step 1)",', '"TreeLog (seed 002,',
                                '"HeavyPaths (seed 002,'),
    "interior/thresholds.py": ('interior-point reduction (seed 002, section 1): label counts "',),
    "interior/quantiles.py": ('(sensitivity b; seed 002, Lemma 2.2)")',),
}


def history_lines(root: Path = SRC, stored: dict[str, tuple[str, ...]] = STORED) -> list[str]:
    """``path:line: text`` of every line under ``root`` that tells history, outside ``stored``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        allowed = stored.get(rel, ())
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if HISTORY.search(line) and not any(s in line for s in allowed):
                out.append(f"{rel}:{no}: {line.strip()}")
    return out


def test_the_pattern_catches_each_kind_of_history() -> None:
    caught = ["see issue 12", "(issues 10, 16)", "fixed in #42", "as before Nov 24, 14:00 UTC",
              "until Dec 7 it was", "at 13:00 UTC", "(seed 001)", "Seeds 000 and 003 use b = 2",
              "files before issue 16", "files written before Nov 25"]
    assert [s for s in caught if not HISTORY.search(s)] == []
    passed = ["Ghazi et al. 2023, Corollary 2.7", "Kaplan et al. 2020, Lemma 2.2", "seed=7",
              "a test seed draws the noise", "``001_4ad1135f2c911f1b.txt``", "rows 0-12 of 2^20",
              "the 12 months", "x[#] 3", "issued by the ledger"]
    assert [s for s in passed if HISTORY.search(s)] == []


def test_source_tells_no_history() -> None:
    found = history_lines()
    assert found == [], "history in src/dptree (state the current fact; cite papers by author and year):\n" + \
        "\n".join(found)


def test_every_stored_exception_is_still_there() -> None:
    """An allow-list entry whose line is gone is stale: drop it so it cannot hide new history."""
    stale = []
    for rel, subs in STORED.items():
        text = (SRC / rel).read_text(encoding="utf-8")
        stale += [f"{rel}: {s}" for s in subs if s not in text]
    assert stale == []


def doc_history_lines(root: Path = ROOT, patterns: list[str] = USER_DOCS) -> list[str]:
    """``path:line: text`` of every line of the user-facing docs that tells history."""
    out = []
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if HISTORY.search(line):
                    out.append(f"{path.relative_to(root).as_posix()}:{no}: {line.strip()}")
    return out


def test_readme_and_guide_tell_no_history() -> None:
    assert len([p for pattern in USER_DOCS for p in ROOT.glob(pattern)]) >= 12, "the user docs were not found"
    found = doc_history_lines()
    assert found == [], "history in the README or the guide (state the current fact):\n" + "\n".join(found)


def test_doc_history_check_finds_history(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# x\n\nFixed in issue 12 (Nov 24).\n", encoding="utf-8")
    assert doc_history_lines(tmp_path, ["README.md"]) == ["README.md:3: Fixed in issue 12 (Nov 24)."]
