"""Progress of long DuckDB work: stage messages and DuckDB's own query progress, on stderr (or to
a callable), never on stdout, and never a count."""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Callable, Iterator, Sequence, Union

__all__ = ["Progress", "PROGRESS_INTERVAL", "Stages", "progress_reporter"]

#: ``progress=`` of the file readers: False/None (silent), True (messages on stderr) or a callable
#: that receives each message
Progress = Union[bool, None, Callable[[str], None]]

#: seconds between two progress messages while DuckDB works
PROGRESS_INTERVAL = 2.0


def _stderr_report(msg: str, _t0: list[float] = []) -> None:  # noqa: B006 - the start time, once
    if not _t0:
        _t0.append(time.perf_counter())
    print(f"dptree: {msg} [{time.perf_counter() - _t0[0]:.1f}s]", file=sys.stderr, flush=True)


def progress_reporter(progress: Progress) -> Callable[[str], None] | None:
    """The function that prints progress messages (always to stderr), or None when silent."""
    if not progress:
        return None
    return progress if callable(progress) else _stderr_report


class Stages:
    """The stage messages of one piece of work, declared before any row is read (from public
    parameters only) and announced in that order, every one of them on every path: which stages
    are printed then tells nothing about the data. Calling it with a stage that is not the next
    declared one raises, and so does leaving the ``with`` block normally before every declared
    stage was announced (a block that raises is not checked: its error is reported instead).
    ``report`` receives each stage (None: silent, the order is still checked); a :class:`Stages`
    can be the ``report`` of another, whose stages it must then declare in the same order."""

    def __init__(self, report: Callable[[str], None] | None, stages: Sequence[str]) -> None:
        self.report, self.stages, self.said = report, tuple(stages), 0

    def __call__(self, stage: str) -> None:
        if self.said == len(self.stages) or stage != self.stages[self.said]:
            raise RuntimeError(f"progress stage {stage!r} is not the next declared one of {self.stages} "
                               "(internal error)")
        self.said += 1
        if self.report is not None:
            self.report(stage)

    def done(self) -> None:
        """Raise unless every declared stage was announced."""
        if self.said != len(self.stages):
            raise RuntimeError(f"progress stages {self.stages[self.said:]} were declared but never announced "
                               "(internal error)")

    def __enter__(self) -> "Stages":
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if et is None:
            self.done()


@contextmanager
def _poll_progress(con: Any, report: Callable[[str], None] | None, what: str) -> Iterator[None]:
    """While the block runs, report DuckDB's query progress every PROGRESS_INTERVAL seconds.

    DuckDB's own progress bar prints to stdout, where it would mix with the command's output:
    it is switched off (``enable_progress_bar_print``) and its percentage is read from another
    thread (``query_progress``) and reported to stderr instead."""
    if report is None:
        yield
        return
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(PROGRESS_INTERVAL):
            try:
                pct = float(con.query_progress())
            except Exception:  # the connection closed or is between queries
                continue
            # -1: no query running (work in Python between queries); 0: no estimate (window queries)
            report(f"{what}: DuckDB query {pct:.0f}% done" if pct > 0 else f"{what}: still working")

    thread = threading.Thread(target=run, name="dptree-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
