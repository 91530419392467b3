"""Run progress: a live bar (``rich``) on a terminal, one plain line per finished cell otherwise.

On a terminal the bar shows the counts per outcome, the last finished cell, done/total and an ETA,
and fits the terminal's width. Elsewhere (CI logs, a pipe) every finished cell gets one line that
names the whole cell: ``[ 12/648] ts-sdk/call-only type-swap advertised stdio 2025-11-25 -> reject (1.2s)``.
Both end with the same summary line.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar
from rich.table import Column

from .reuse import described


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


class Progress:
    """Reports finished cells; ``outcome`` is the cell's classified outcome."""

    def __init__(
        self, total: int, done: int = 0, stream: TextIO | None = None, reused: dict[str, int] | None = None
    ) -> None:
        """``done``: the cells recorded before (resumed or reused), of which ``reused`` (by the run
        they ran in) were taken from earlier runs."""
        self.total = total
        self.done = done
        self._resumed = done
        self.reused = reused or {}
        self.stream = stream or sys.stderr
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()
        self._bar: Bar | None = None
        self._task: TaskID | None = None
        if self.stream.isatty():
            console = Console(file=self.stream)
            self._bar = Bar(
                TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
                BarColumn(bar_width=20),
                MofNCompleteColumn(),
                TimeRemainingColumn(compact=True),
                console=console,
                expand=True,
                transient=False,
            )
            taken = sum(self.reused.values())
            starting = f"{taken:,} reused, starting" if taken else "starting"
            self._task = self._bar.add_task(starting, total=total, completed=done)
            self._bar.start()

    def update(self, label: str, outcome: str, seconds: float | None) -> None:
        """One cell finished: ``label`` names it (column, case, schema mode, transport)."""
        self.done += 1
        self.counts[outcome] += 1
        if self._bar is not None and self._task is not None:
            counts = " ".join(f"{name} {count}" for name, count in sorted(self.counts.items()))
            self._bar.update(self._task, advance=1, description=f"{counts} | {label} -> {outcome}")
            return
        took = f" ({seconds:.1f}s)" if seconds is not None else ""
        self.stream.write(f"[{self.done:>{len(str(self.total))}}/{self.total}] {label} -> {outcome}{took}\n")
        self.stream.flush()

    def close(self) -> None:
        """Stop the bar and print the summary line."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elapsed = _clock(time.monotonic() - self.started)
        counts = ", ".join(f"{count} {name}" for name, count in sorted(self.counts.items()))
        ran = f"{self.done - self._resumed} cells ran in {elapsed}: {counts or 'nothing to run'}"
        taken = sum(self.reused.values())
        self.stream.write(ran + (f"; {taken:,} reused from {described(self.reused)}" if taken else "") + "\n")
        self.stream.flush()
