"""The library's source states what the code does, not how it got there.

Comments, docstrings, messages and CLI output name no issue numbers, no dates and no "seed 00N"
(a file name in the project's reference folder that means nothing to a user): papers are cited by
author and year (docs/seeds.md maps each to its document). Development history belongs in git log.

The one exception is the table that reads older release files: a loaded statement is compared
whole with the one re-derived from its parameters (:func:`dptree.privacy.statement.check_statement`),
and files that name their sources by reference-document number ("seed 001") are read through
``dptree.privacy.statement._REWORDED``. A line of that table (an old wording as a key) is the only
line allowed to carry it; nothing else is exempt.
"""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "dptree"

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*"
HISTORY = re.compile(
    r"\b[Ii]ssues? #?\d+"  # issue 12, issues 10
    r"|\b(?:[Ii]ssues?|PR|[Ff]ix(?:es|ed)?|[Ss]ee|in) #\d+"  # fixed in #12
    rf"|\b{_MONTH} \d{{1,2}}\b"  # Nov 24
    r"|\b\d{1,2}:\d{2} UTC\b"  # 14:00 UTC
    r"|\b[Ss]eeds? 00\d"  # seed 001, seeds 000, 003
    r"|\bfiles? (?:written |made |saved )?before (?:issue|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
)


def rewording_table() -> dict[str, tuple[str, ...]]:
    """{file: the lines allowed to carry an old wording}: the keys of the one table that reads it."""
    from dptree.privacy.statement import _REWORDED

    return {"privacy/statement.py": tuple(f'"{old}":' for old in _REWORDED)}


def history_lines(root: Path = SRC, allowed_lines: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """``path:line: text`` of every line under ``root`` that tells history, outside the lines that
    start with one of ``allowed_lines`` (default: :func:`rewording_table`)."""
    table = rewording_table() if allowed_lines is None else allowed_lines
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        allowed = table.get(rel, ())
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if HISTORY.search(line) and not line.strip().startswith(allowed):
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


def test_only_the_rewording_table_may_carry_old_wording(tmp_path: Path) -> None:
    """The exemption covers a key of the table, not the rest of the file or of its line's kind."""
    (tmp_path / "privacy").mkdir()
    (tmp_path / "privacy" / "statement.py").write_text(
        '_REWORDED = {\n    "seed 001 ": "Ghazi et al. 2023, ",\n}\n'
        'MECHANISM = "Laplace (seed 001 Lemma 2.5)"\n# seed 002 says so\n')
    (tmp_path / "other.py").write_text('    "seed 001 ": "Ghazi et al. 2023, ",\n')
    allowed = {"privacy/statement.py": ('"seed 001 ":',)}
    assert history_lines(tmp_path, allowed) == [
        'other.py:1: "seed 001 ": "Ghazi et al. 2023, ",',
        'privacy/statement.py:4: MECHANISM = "Laplace (seed 001 Lemma 2.5)"',
        "privacy/statement.py:5: # seed 002 says so"]
    assert rewording_table()["privacy/statement.py"]  # the table is there and read
