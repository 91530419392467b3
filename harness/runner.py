"""Running cells: one bounded adapter process per cell, in parallel, recorded as they finish.

A cell's record holds facts only (how the process ended, the validated observation, the server's
journal); the outcome is derived later by :mod:`harness.classify`. A failure of one cell (an
adapter that crashes, hangs or writes garbage, or a bug of ours) becomes that cell's record and
never stops the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from pathlib import Path

from . import process
from .backends import Backend
from .cells import Cell
from .observation import ObservationError, read
from .records import CellRecord, JournalEvent
from .store import RunStore, trim_log


def read_journal(path: Path) -> list[JournalEvent]:
    """The server's journal events; unreadable lines are kept as ``{"event": "unreadable"}``."""
    if not path.exists():
        return []
    events: list[JournalEvent] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            events.append({"event": "unreadable", "line": line[:200]})
    return events


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _base_record(cell: Cell) -> CellRecord:
    return {
        "key": cell.key,
        "column": cell.column,
        "adapter": cell.adapter.name,
        "kind": cell.adapter.kind,
        "variant": cell.variant.id,
        "case": cell.case.id,
        "family": cell.case.family,
        "schema": cell.schema,
        "transport": cell.transport,
        "budget_ms": int(cell.budget_s * 1000),
        "harness_error": None,
        "process": None,
        "observation": None,
        "journal": [],
        "finished_at": "",
    }


def run_cell(backend: Backend, store: RunStore, cell: Cell) -> CellRecord:
    """Run one cell to completion on ``backend`` and return its record (never raises for the cell's faults)."""
    record = _base_record(cell)
    files = store.cell_files(cell.key)
    try:
        files.directory.mkdir(parents=True, exist_ok=True)
        files.journal.unlink(missing_ok=True)
        files.raw_observation.unlink(missing_ok=True)
        finished = backend.run(cell, files)
        record["process"] = {
            "exit_code": finished.exit_code,
            "timed_out": finished.timed_out,
            "wall_ms": finished.wall_ms,
            "stragglers_killed": finished.stragglers_killed,
            "stdout_bytes": trim_log(files.stdout),
            "stderr_bytes": trim_log(files.stderr),
        }
        record["journal"] = read_journal(files.journal)
        raw = files.raw_observation
        if raw.exists() and not finished.timed_out:
            try:
                record["observation"] = read(raw, label=Path(raw.name), framework=cell.adapter.kind == "framework")
            except ObservationError as exc:  # the invalid file stays in the cell directory as evidence
                record["harness_error"] = f"invalid observation: {exc}"
            else:
                files.observation.write_text(json.dumps(record["observation"], indent=2, ensure_ascii=False))
                raw.unlink()
    except Exception as exc:  # our own fault: recorded on the cell, the run goes on
        record["harness_error"] = f"{type(exc).__name__}: {exc}"
    record["finished_at"] = _now()
    return record


def unrunnable_record(cell: Cell, why: str) -> CellRecord:
    """The record of a cell whose adapter cannot run (its manifest is broken, its environment failed)."""
    record = _base_record(cell)
    record["harness_error"] = why
    record["finished_at"] = _now()
    return record


class Interrupted(Exception):
    """The run was stopped by SIGINT or SIGTERM; finished cells are recorded."""


def run_all(
    backend: Backend,
    store: RunStore,
    cells: list[Cell],
    *,
    jobs: int,
    broken: dict[str, str],
    on_record: Callable[[CellRecord], None],
) -> None:
    """Run ``cells`` with ``jobs`` workers, appending each record to ``store`` as it finishes.

    Cells of adapters in ``broken`` (name -> why, the harness error) are recorded without running.
    On SIGINT/SIGTERM the running process groups are killed and :class:`Interrupted` is raised.
    """
    with process.interruptible(backend.kill_all) as stop, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        pending: set[Future[CellRecord]] = set()
        queue = list(reversed(cells))
        while queue or pending:
            while queue and len(pending) < jobs and not stop.is_set():
                cell = queue.pop()
                if cell.adapter.name in broken:
                    record = unrunnable_record(cell, broken[cell.adapter.name])
                    store.append(record)
                    on_record(record)
                    continue
                pending.add(pool.submit(run_cell, backend, store, cell))
            if stop.is_set():
                backend.kill_all()
                for future in pending:
                    future.cancel()
                raise Interrupted(f"interrupted; {len(queue) + len(pending)} cells not recorded")
            if not pending:
                continue
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                record = future.result()
                if stop.is_set():  # killed by the interruption, not by its own fault
                    continue
                store.append(record)
                on_record(record)
