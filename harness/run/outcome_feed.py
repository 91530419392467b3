"""Finished cells to the progress display, classified in batches on a thread of their own.

The progress line names each cell's classified outcome (:func:`~harness.classify.outcomes.cells_frame`).
A pandas frame costs about 20 ms to classify whether it holds one cell or a hundred, and classified
cell by cell on the scheduler's thread it held up the next cell's start by that much every time (a
Go or Rust cell takes 40 to 120 ms). The feed classifies, in one frame, whatever has finished since
its last batch, at most every :data:`BATCH_S`, and prints the cells in the order they finished.
"""

from __future__ import annotations

import queue
import threading

from harness.classify.outcomes import cells_frame
from harness.records import CellRecord, RunMeta

from .progress import Progress

BATCH_S = 0.5
"""The least time between two batches: at most two frames a second, however fast cells finish."""
_END = None
"""Put by :meth:`OutcomeFeed.close`: report what is queued, then stop."""


class OutcomeFeed:
    """Takes finished cells (:meth:`put`, from any thread) and reports them to ``progress``."""

    def __init__(self, progress: Progress, meta: RunMeta) -> None:
        self._progress = progress
        self._meta = meta
        self._queue: queue.SimpleQueue[CellRecord | None] = queue.SimpleQueue()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="outcome-feed", daemon=True)
        self._thread.start()

    def put(self, record: CellRecord) -> None:
        self._queue.put(record)

    def close(self) -> None:
        """Report every cell put so far, then stop the thread."""
        self._queue.put(_END)
        self._closing.set()
        self._thread.join()

    def _run(self) -> None:
        ended = False
        while not ended:
            batch = [self._queue.get()]
            self._closing.wait(BATCH_S)  # let the cells finishing meanwhile join this batch
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            ended = _END in batch
            self._report([record for record in batch if record is not _END])

    def _outcomes(self, records: list[CellRecord]) -> dict[str, str]:
        """Each record's outcome by its key; a record that does not classify is named so, alone (the
        record is stored either way: a classification bug must not stop the run or hide the others)."""
        try:
            frame = cells_frame(records, self._meta)
            return dict(zip(frame["key"], frame["outcome"].astype(str), strict=True))
        except Exception as exc:
            if len(records) == 1:
                return {records[0]["key"]: f"unclassified ({type(exc).__name__}: {exc})"}
        return {key: outcome for record in records for key, outcome in self._outcomes([record]).items()}

    def _report(self, records: list[CellRecord]) -> None:
        if not records:
            return
        outcomes = self._outcomes(records)
        for record in records:
            process = record["process"]
            seconds = process["wall_ms"] / 1000 if process else None
            label = (
                f"{record['column']} {record['case']} {record['schema']} {record['transport']} {record.get('protocol')}"
            )
            self._progress.update(label, outcomes[record["key"]], seconds)
