"""Running cells: one bounded adapter run per cell, in parallel, recorded as they finish.

A cell's record holds facts only (how the process ended, the validated observation, the server's
journal); the outcome is derived later by :mod:`harness.classify.outcomes`. A failure of one cell (an
adapter that crashes, hangs or writes garbage, or a bug of ours) becomes that cell's record and
never stops the others.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.matrix.cells import Cell, Live, Replayed
from harness.matrix.manifest import MODEL_VIEW_KINDS
from harness.records import CellInputs, CellRecord, JournalEvent
from harness.system import process, workers

from .backends import Backend
from .cpu_slots import IdleWatch
from .observation import ObservationError, read
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
        "protocol": cell.protocol,
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
        if files.directory.exists():  # a killed attempt's leftovers (a FIFO, a journal) are not this run's
            shutil.rmtree(files.directory)
        files.directory.mkdir(parents=True)
        if isinstance(cell.source, Replayed):
            files.replay.write_text(cell.source.case_file, encoding="utf-8")
        if isinstance(cell.source, Live):
            files.live.write_text(cell.source.server.file(), encoding="utf-8")
        try:
            finished = backend.run(cell, files)
        finally:
            files.live.unlink(missing_ok=True)
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
                record["observation"] = read(raw, label=Path(raw.name), framework=cell.adapter.kind in MODEL_VIEW_KINDS)
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


STARTUP_S = 2.0
"""How long a cold adapter process (neither forked from a warm worker nor started from a snapshot)
counts as CPU work: its runtime's start and its client's imports (a Python SDK about 1 s, Node
0.5 s, on two cores)."""


def waits(cell: Cell) -> bool:
    """Whether the cell spends its time waiting rather than computing (its case says why: ``Case.waits``)."""
    return cell.case.waits is not None


@dataclass(frozen=True)
class _Slot:
    """A running cell: a waiting one or not, and until when it counts against the CPU slots."""

    owner: int
    """Whose process groups are this cell's (:func:`process.owned_by`, :class:`IdleWatch`)."""
    waiting: bool
    cpu_until: float
    """``time.monotonic()`` until which it is CPU work: forever for a CPU-bound cell (while it is
    not idle), its start-up for a waiting cell that is a fresh process, nothing for a forked waiting one."""


def _run_owned(owner: int, backend: Backend, store: RunStore, cell: Cell) -> CellRecord:
    with process.owned_by(owner):
        return run_cell(backend, store, cell)


def run_all(
    backend: Backend,
    store: RunStore,
    cells: list[Cell],
    *,
    jobs: int,
    wait_jobs: int,
    broken: dict[str, str],
    on_record: Callable[[CellRecord], None],
    inputs: Mapping[str, CellInputs | None] | None = None,
) -> None:
    """Run ``cells``, appending each record to ``store`` as it finishes, with its ``inputs`` (by key:
    :mod:`harness.run.inputs`) where given.

    At most ``jobs`` cells do CPU work at once, and at most ``jobs + wait_jobs`` run at all. Cells
    that mostly wait (:func:`waits`) run first (they are the long ones), at most ``wait_jobs`` of
    them, beside the CPU slots, so that a cell waiting for a late answer or a timeout never holds a
    CPU slot; one that starts cold (not forked from a warm worker, not from a snapshot:
    :data:`workers.WARM`) holds a CPU slot for its start-up (:data:`STARTUP_S`) before it waits. A
    cell in a CPU slot whose processes do next to no CPU work (:class:`IdleWatch`: a client waiting
    for its own timeout in a case not declared as waiting) does not count against the slots until
    it works again. ``wait_jobs`` 0: every cell takes a CPU slot for its whole run, in the given
    order. Cells of adapters in ``broken`` (name -> why, the harness error) are recorded without
    running. On SIGINT/SIGTERM the running process groups are killed and :class:`Interrupted` is raised.
    """
    known = inputs or {}
    queues: dict[bool, list[Cell]] = {True: [], False: []}
    for queued in reversed(cells):
        queues[wait_jobs > 0 and waits(queued)].append(queued)
    limits = {True: wait_jobs, False: max(1, jobs)}
    most = limits[True] + limits[False]
    watch = IdleWatch()
    owners = itertools.count()
    with (
        process.interruptible(backend.kill_all) as stop,
        ThreadPoolExecutor(max_workers=most) as pool,
    ):
        pending: dict[Future[CellRecord], _Slot] = {}

        def forked(cell: Cell) -> bool:
            """Whether the cell starts warm; asked when it starts: a worker that refused to start is
            known only then."""
            return backend.isolation_of(cell.adapter) in workers.WARM

        def admit(waiting: bool) -> Cell | None:
            """The next cell of a queue when a slot is free for it now, else None."""
            queue = queues[waiting]
            if not queue or stop.is_set() or len(pending) >= most:
                return None
            now = time.monotonic()
            cpu_busy = sum(1 for slot in pending.values() if now < slot.cpu_until and not watch.idle(slot.owner))
            if waiting:
                full = sum(1 for slot in pending.values() if slot.waiting) >= limits[True]
                needs_cpu = not forked(queue[-1])
                if full or (needs_cpu and cpu_busy >= limits[False]):
                    return None
            elif cpu_busy >= limits[False]:
                return None
            return queue.pop()

        while queues[True] or queues[False] or pending:
            if queues[False] and len(pending) < most:  # a CPU-bound cell could start in an idle one's slot
                watch.update((slot.owner for slot in pending.values() if not slot.waiting), time.monotonic())
            for waiting in (True, False):
                while (cell := admit(waiting)) is not None:
                    if cell.adapter.name in broken:
                        record = unrunnable_record(cell, broken[cell.adapter.name])
                        record["inputs"] = known.get(cell.key)
                        store.append(record)
                        on_record(record)
                        continue
                    now = time.monotonic()
                    if not waiting:
                        until = math.inf
                    else:
                        until = now if forked(cell) else now + STARTUP_S
                    slot = _Slot(next(owners), waiting, until)
                    pending[pool.submit(_run_owned, slot.owner, backend, store, cell)] = slot
            if stop.is_set():
                backend.kill_all()
                for future in pending:
                    future.cancel()
                left = len(queues[True]) + len(queues[False]) + len(pending)
                raise Interrupted(f"interrupted; {left} cells not recorded")
            if not pending:
                continue
            done, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for future in done:
                del pending[future]
                record = future.result()
                if stop.is_set():  # killed by the interruption, not by its own fault
                    continue
                record["inputs"] = known.get(record["key"])
                store.append(record)
                on_record(record)
