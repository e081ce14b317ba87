"""A progress bar on stderr for long work over documents (``roi batch``, ``roi eval``)."""

from __future__ import annotations

import time
from typing import Any


class DocumentsProgress:
    """A rich progress bar on stderr: documents done of all, pages, pages/s, elapsed and ETA.
    Silent when ``quiet`` or when there is nothing to do; stdout is left to the results."""

    def __init__(self, total: int, verb: str, quiet: bool = False) -> None:
        self.total = total
        self.verb = verb
        self.enabled = not quiet and total > 0
        self.pages = 0
        self.progress: Any = None

    def __enter__(self) -> DocumentsProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn(self.verb),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("docs · {task.fields[pages]} pages · {task.fields[rate]} pages/s"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self.progress.start()
            self.task = self.progress.add_task(self.verb, total=self.total, pages=0, rate="-")
            self.start = time.perf_counter()
        return self

    def advance(self, pages: int) -> None:
        """One document more done, of ``pages`` pages."""
        self.pages += pages
        if self.progress is not None:
            seconds = time.perf_counter() - self.start
            rate = f"{self.pages / seconds:.2f}" if seconds else "-"
            self.progress.update(self.task, advance=1, pages=self.pages, rate=rate)

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()
