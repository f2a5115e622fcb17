"""The library's source states what the code does, not how it got there.

Comments, docstrings, messages and CLI output name no issue numbers, no dates and no "seed 00N"
(a file name in the project's reference folder that means nothing to a user): papers are cited by
author and year (docs/notes/seeds.md maps each to its document). Development history belongs in git log.
The benchmarks, scripts and examples are read the same way: their docstrings, comments, help and
output state what they measure or show, not which issue or day asked for it.

The one exception is the table that reads older release files: a loaded statement is compared
whole with the one re-derived from its parameters (:func:`dptree.privacy.statement.check_statement`),
and files that name their sources by reference-document number ("seed 001") are read through
``dptree.privacy.statement._REWORDED``. A line of that table (an old wording as a key) is the only
line allowed to carry it; nothing else is exempt.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "dptree"
#: what a user reads: the README, the user guide and the API reference's pages
USER_DOCS = ["README.md", "docs/index.md", "docs/guide/*.md", "docs/api/*.rst"]
#: the proofs and measurement records: they cite the seed files by name (docs/notes/seeds.md maps
#: them), but name no issue and no date; a measurement states its command, load and result
NOTES = ["docs/notes/*.md"]
#: the runnable files beside the package: what they measure or show, with no issue, date or seed file
SCRIPTS = ["benchmarks/**/*.py", "scripts/**/*.py", "scripts/**/*.sh", "examples/**/*.py", "examples/**/*.sh"]

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*"
HISTORY = re.compile(
    r"\b[Ii]ssues? #?\d+"  # issue 12, issues 10
    r"|\b(?:[Ii]ssues?|PR|[Ff]ix(?:es|ed)?|[Ss]ee|in) #\d+"  # fixed in #12
    rf"|\b{_MONTH} \d{{1,2}}\b"  # Nov 24
    r"|\b\d{1,2}:\d{2} UTC\b"  # 14:00 UTC
    r"|\b[Ss]eeds? 00\d"  # seed 001, seeds 000, 003
    r"|\bfiles? (?:written |made |saved )?before (?:issue|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
)

#: issue numbers and calendar dates, for the notes (a date that is a value, such as a bound, is code:
#: ``np.datetime64("2024-01-01")``, and code spans are not searched for dates)
NOTE_HISTORY = re.compile(
    r"\b[Ii]ssues? #?\d+"  # issue 12, issues 10
    r"|(?<![\w&])#\d+\b"  # #12
    rf"|\b{_MONTH} \d{{1,2}}\b"  # Nov 24
    r"|\b\d{1,2}:\d{2} UTC\b"  # 14:00 UTC
)
ISO_DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")  # 2026-11-24
CODE_SPAN = re.compile(r"`[^`]*`")


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


def note_history_lines(root: Path = ROOT, patterns: list[str] = NOTES) -> list[str]:
    """``path:line: text`` of every line of the notes that names an issue or a date."""
    out = []
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if NOTE_HISTORY.search(line) or ISO_DATE.search(CODE_SPAN.sub("``", line)):
                    out.append(f"{path.relative_to(root).as_posix()}:{no}: {line.strip()}")
    return out


def test_the_notes_pattern_catches_issues_and_dates() -> None:
    caught = ["Issue 12: where the targets stand", "as #12 asks", "(#7)", "until Nov 24 it was",
              "measured Mon Nov 23 2026", "Dec 7", "17:20 UTC", "in one sitting (2026-11-24,",
              "2024-01-01 outside code"]
    assert [s for s in caught if not (NOTE_HISTORY.search(s) or ISO_DATE.search(CODE_SPAN.sub("``", s)))] == []
    passed = ["Honaker 2015", "seed 003's comparison", "`np.datetime64(\"2024-01-01\")`", "x[#] 3",
              "#{x <= y}", "&#8804;", "--count 10:20", "1677-09-22 .. 2262-04-10", "the 12 months",
              "`test_treelog_issue_counterexample_is_private`", "issued by the ledger"]
    assert [s for s in passed if NOTE_HISTORY.search(s) or ISO_DATE.search(CODE_SPAN.sub("``", s))] == []


def test_the_notes_tell_no_history() -> None:
    assert len([p for pattern in NOTES for p in ROOT.glob(pattern)]) >= 15, "the notes were not found"
    found = note_history_lines()
    assert found == [], "issue numbers or dates in docs/notes (state what is measured, the command and " \
        "the result; history belongs in git log):\n" + "\n".join(found)


def test_note_history_check_finds_history(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("# x\n\nMeasured on 2026-11-24 for #12.\n`2024-01-01` is a bound.\n",
                                   encoding="utf-8")
    assert note_history_lines(tmp_path, ["n.md"]) == ["n.md:3: Measured on 2026-11-24 for #12."]


def _prose(path: Path, text: str) -> dict[int, str]:
    """A script's comments and docstrings, line number -> text: the prose, where a date is a date (in
    code, ``np.datetime64("2024-01-01")`` is a value)."""
    lines = text.splitlines()
    prose: dict[int, str] = {}
    if path.suffix == ".sh":
        for no, line in enumerate(lines, 1):
            m = re.search(r"(?:^|\s)#.*", line)
            if m:
                prose[no] = m.group(0)
        return prose
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            prose[tok.start[0]] = tok.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
                    isinstance(first.value.value, str):
                for no in range(first.lineno, (first.end_lineno or first.lineno) + 1):
                    prose[no] = lines[no - 1]
    return prose


def script_history_lines(root: Path = ROOT, patterns: list[str] = SCRIPTS) -> list[str]:
    """``path:line: text`` of every line of the benchmarks, scripts and examples that tells history:
    the source's patterns (issues, dates, times, seed files), ``#12``, and an ISO date in a comment
    or a docstring."""
    out = []
    for path in sorted({p for pattern in patterns for p in root.glob(pattern)}):
        text = path.read_text(encoding="utf-8")
        prose = _prose(path, text)
        for no, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line) or NOTE_HISTORY.search(line) or ISO_DATE.search(prose.get(no, "")):
                out.append(f"{path.relative_to(root).as_posix()}:{no}: {line.strip()}")
    return out


def test_benchmarks_scripts_and_examples_tell_no_history() -> None:
    assert len([p for pattern in SCRIPTS for p in ROOT.glob(pattern)]) >= 40, "the scripts were not found"
    found = script_history_lines()
    assert found == [], "history in benchmarks/, scripts/ or examples/ (state what is measured or shown; " \
        "cite papers by author and year; history belongs in git log):\n" + "\n".join(found)


def test_script_history_check_finds_history(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "benchmarks" / "b.py").write_text(
        '"""Speed of x (issue 13, item 3).\n\nMeasured 2026-11-24."""\n'
        'DAY = "2024-01-01"  # a value, not history\n'
        'def f():\n    """As before Dec 7."""\n'
        'print("seed 002\'s table")  # see #12\n', encoding="utf-8")
    (tmp_path / "scripts" / "s.sh").write_text("#!/bin/sh\n# run 2026-11-24\necho 2024-01-01\n", encoding="utf-8")
    assert script_history_lines(tmp_path, ["benchmarks/*.py", "scripts/*.sh"]) == [
        'benchmarks/b.py:1: """Speed of x (issue 13, item 3).',
        'benchmarks/b.py:3: Measured 2026-11-24."""',
        'benchmarks/b.py:6: """As before Dec 7."""',
        'benchmarks/b.py:7: print("seed 002\'s table")  # see #12',
        "scripts/s.sh:2: # run 2026-11-24",
    ]
