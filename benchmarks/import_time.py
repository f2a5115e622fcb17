"""Start-up time: ``import numpy``, ``import dptree`` and ``dptree --help``, each timed in a fresh
process, interleaved round by round; prints a table of medians with the ratio to ``import numpy``
(target: ``import dptree`` at most 3x ``import numpy``).

    PYTHONPATH=src python benchmarks/import_time.py --rounds 15

The child times its import before it imports anything else (the harness itself imports json,
statistics and pathlib, which dptree would otherwise get for free), then reports through
:func:`fresh_process.emit`. The children read byte code from caches in a temporary folder, as an
installed package does; one warm-up round writes them and is dropped.
"""

import os  # already loaded by the interpreter at start-up, like sys and time
import sys
import time

HELP = """
import contextlib, io
from dptree.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(["--help"])
    except SystemExit:
        pass
"""
TASKS = {"import numpy": "import numpy", "import dptree": "import dptree", "dptree --help": HELP}
TARGET = 3.0


def _child(task: str) -> None:
    t0 = time.perf_counter()
    exec(TASKS[task], {})
    seconds = time.perf_counter() - t0
    from fresh_process import emit

    emit(seconds)


def main() -> None:
    import argparse
    import statistics
    import tempfile

    from fresh_process import rounds, table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="timed rounds (each task once per round)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        # Byte code cached as an installed package has it (pip compiles on install), in one folder for
        # numpy and dptree alike: PYTHONDONTWRITEBYTECODE would recompile every dptree module per run.
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = cache
        rounds(__file__, list(TASKS), [], 1)  # warm-up: writes the byte-code caches, fills the page cache
        runs = rounds(__file__, list(TASKS), [], args.rounds)
    print(f"# {args.rounds} rounds, python {sys.version.split()[0]}, load average at end "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; medians of fresh processes")
    print(table(runs, "import numpy", "import numpy"))
    ratio = statistics.median(r["seconds"] for r in runs["import dptree"]) / statistics.median(
        r["seconds"] for r in runs["import numpy"])
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"\nimport dptree / import numpy = {ratio:.2f} (target <= {TARGET:g}: {verdict})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2])
    else:
        main()
