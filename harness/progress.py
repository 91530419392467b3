"""Run progress: a one-line bar with counts and an ETA on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import TextIO

BAR = 28


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


class Progress:
    """Reports finished cells; ``outcome`` is the cell's classified outcome."""

    def __init__(self, total: int, done: int = 0, stream: TextIO | None = None) -> None:
        self.total = total
        self.done = done
        self._resumed = done
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()

    def _eta(self) -> str:
        finished_here = self.done - self._resumed
        if finished_here == 0:
            return "?"
        rate = (time.monotonic() - self.started) / finished_here
        return _clock(rate * (self.total - self.done))

    def update(self, label: str, outcome: str, seconds: float | None) -> None:
        self.done += 1
        self.counts[outcome] += 1
        if self.tty:
            filled = int(BAR * self.done / max(1, self.total))
            counts = " ".join(f"{name} {count}" for name, count in sorted(self.counts.items()))
            line = f"\r[{'#' * filled}{'.' * (BAR - filled)}] {self.done}/{self.total} ETA {self._eta()}  {counts}"
            self.stream.write(line[:200].ljust(120))
        else:
            took = f" ({seconds:.1f}s)" if seconds is not None else ""
            self.stream.write(f"[{self.done:>{len(str(self.total))}}/{self.total}] {label} -> {outcome}{took}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
        elapsed = _clock(time.monotonic() - self.started)
        counts = ", ".join(f"{count} {name}" for name, count in sorted(self.counts.items()))
        self.stream.write(f"{self.done - self._resumed} cells in {elapsed}: {counts or 'nothing to run'}\n")
        self.stream.flush()
