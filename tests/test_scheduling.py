"""The runner's slots: cells that mostly wait run beside the CPU-bound ones, never in their slots.

A stand-in backend records when each cell ran (the scheduling is the runner's, whatever runs the
cells); end-to-end runs of real clients in both isolations are ``nox -s isolation-parity``'s. The
idle cells' test runs real processes, since idleness is measured from ``/proc``.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from pathlib import Path

from harness.layout import CellFiles, Layout
from harness.matrix import cells, manifest
from harness.run import cpu_slots, runner
from harness.run.store import RunStore
from harness.system import process
from harness.system.process import Finished

from .conftest import REPO


class Recorder:
    """A backend whose cells sleep (waiting ones longer) and that records what ran at once.

    With ``together`` set, the waiting cells instead wait for each other (a barrier: it opens only
    if all of them run at once) and the CPU-bound ones wait until every waiting cell has started
    (whether they had to give up waiting is kept): events, not durations, say what ran beside what."""

    name = "local"

    def __init__(self, layout: Layout, isolation: str, together: int = 0) -> None:
        self.layout = layout
        self.isolation = isolation
        self.lock = threading.Lock()
        self.running: dict[str, bool] = {}
        self.peaks = {True: 0, False: 0}
        self.started: list[str] = []
        self.spans: list[tuple[float, float, bool]] = []  # (start, end, waiting) of every cell
        self.barrier = threading.Barrier(together, timeout=30) if together else None
        self.all_waiting_started = threading.Event()
        self.waiting_started = 0
        self.together = together
        self.gave_up: list[str] = []  # cells whose event never came

    def isolation_of(self, adapter: manifest.Adapter) -> str:
        return self.isolation

    def run(self, cell: cells.Cell, files: CellFiles) -> Finished:
        waiting = cell.case.waits is not None
        with self.lock:
            self.started.append(cell.case.id)
            self.running[cell.key] = waiting
            for kind in (True, False):
                self.peaks[kind] = max(self.peaks[kind], sum(1 for w in self.running.values() if w is kind))
            if waiting:
                self.waiting_started += 1
                if self.waiting_started == self.together:
                    self.all_waiting_started.set()
        began = time.monotonic()
        if self.barrier is None:
            time.sleep(0.6 if waiting else 0.05)
        elif waiting:
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                self.gave_up.append(cell.key)
        elif not self.all_waiting_started.wait(30):
            self.gave_up.append(cell.key)
        with self.lock:
            del self.running[cell.key]
            self.spans.append((began, time.monotonic(), waiting))
        return Finished(exit_code=1, timed_out=False, wall_ms=1.0, stragglers_killed=0)

    def kill_all(self) -> None:
        return None


def _cells() -> list[cells.Cell]:
    adapters = [a for a in manifest.discover(REPO / "clients") if a.name == "raw-jsonrpc"]
    cases = ("ok", "type-swap", "no-response", "wrong-id", "malformed-frame", "latency")
    selection = cells.Selection(cases=cases, transports=("stdio",), protocols=("2025-11-25",))
    return cells.build(adapters, selection)


def _run(tmp_path: Path, isolation: str, wait_jobs: int, together: int = 0) -> tuple[Recorder, int]:
    backend = Recorder(Layout(REPO), isolation, together)
    store = RunStore(tmp_path / isolation)
    store.create()
    selected = _cells()
    runner.run_all(backend, store, selected, jobs=1, wait_jobs=wait_jobs, broken={}, on_record=lambda _: None)  # type: ignore[arg-type]
    return backend, len(list(store.records()))


def test_waiting_cells_of_forked_adapters_run_beside_the_cpu_slots(tmp_path):
    selected = _cells()
    waiting = [cell for cell in selected if cell.case.waits is not None]
    assert len(waiting) >= 4 and len(selected) - len(waiting) >= 4
    backend, recorded = _run(tmp_path, "worker", wait_jobs=8, together=len(waiting))
    assert recorded == len(selected)
    assert backend.gave_up == [], "every waiting cell ran beside the others, and all had started while CPU work ran"
    assert backend.peaks[False] == 1, "never more CPU-bound cells at once than --jobs"
    assert backend.peaks[True] == len(waiting), "the waiting cells ran at once, beside them"


def test_a_fresh_process_holds_a_cpu_slot_for_its_start_up(tmp_path, monkeypatch):
    """A waiting cell that is a fresh process (not forked) does CPU work while it starts: no other
    cell's CPU work overlaps its first STARTUP_S; then it waits beside the CPU-bound cells."""
    monkeypatch.setattr(runner, "STARTUP_S", 0.2)
    backend, recorded = _run(tmp_path, "process (--isolation process)", wait_jobs=8)
    assert recorded == len(_cells())
    cpu = sorted((start, end if not waiting else start + 0.2) for start, end, waiting in backend.spans)
    for (_, end), (start, _) in itertools.pairwise(cpu):
        assert start >= end - 0.05, "with --jobs 1, one cell's CPU work at a time"
    assert backend.peaks[True] > 1, "after their start-up the waiting cells wait side by side"


def test_wait_jobs_0_runs_every_cell_in_the_cpu_slots(tmp_path):
    backend, recorded = _run(tmp_path, "worker", wait_jobs=0)
    assert recorded == len(_cells())
    assert backend.peaks[True] + backend.peaks[False] <= 2 and max(backend.peaks.values()) == 1
    assert backend.started == [cell.case.id for cell in _cells()], "in the order given"


SPIN = "import time\nstart = time.process_time()\nwhile time.process_time() - start < 1.0: pass"


class ProcessRecorder:
    """A backend whose cells are real processes: ``ok`` spins for 1 s of CPU time, the others sleep
    for 3 s; it records when each ran."""

    name = "local"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: list[tuple[float, float, bool]] = []  # (start, end, spins)
        self.peak = 0
        self.running = 0

    def isolation_of(self, adapter: manifest.Adapter) -> str:
        return "worker"

    def run(self, cell: cells.Cell, files: CellFiles) -> Finished:
        spins = cell.case.id == "ok"
        command = [sys.executable, "-c", SPIN] if spins else ["sleep", "3"]
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        began = time.monotonic()
        finished = process.run_bounded(
            command, cwd=files.directory, env={}, timeout_s=10, stdout=files.stdout, stderr=files.stderr,
            marker=str(files.directory),
        )  # fmt: skip
        with self.lock:
            self.running -= 1
            self.spans.append((began, time.monotonic(), spins))
        return finished

    def kill_all(self) -> None:
        process.kill_all_running()


def test_an_idle_cell_gives_its_cpu_slot_back(tmp_path):
    """Cells not declared as waiting whose processes sleep stop counting against --jobs once they
    have done next to nothing for a second; cells that spin never share the one CPU slot."""
    adapters = [a for a in manifest.discover(REPO / "clients") if a.name == "raw-jsonrpc"]
    cases = ("ok", "drop-required", "extra-field")  # each with the schema advertised and hidden
    selected = cells.build(adapters, cells.Selection(cases=cases, transports=("stdio",), protocols=("2025-11-25",)))
    assert len(selected) == 2 * len(cases) and not any(runner.waits(cell) for cell in selected)
    backend = ProcessRecorder()
    store = RunStore(tmp_path / "run")
    store.create()
    runner.run_all(backend, store, selected, jobs=1, wait_jobs=2, broken={}, on_record=lambda _: None)  # type: ignore[arg-type]
    assert len(list(store.records())) == len(selected)
    spinning = sorted((start, end) for start, end, spins in backend.spans if spins)
    for (_, end), (start, _) in itertools.pairwise(spinning):
        assert start >= end - 0.05, "two cells that work never share the one CPU slot"
    sleeping = [(start, end) for start, end, spins in backend.spans if not spins]
    overlaps = sum(1 for a, b in itertools.combinations(sleeping, 2) if a[0] < b[1] and b[0] < a[1])
    assert overlaps >= 1, "idle cells ran side by side"
    assert backend.peak <= 3, "never more cells at once than jobs + wait_jobs"


def test_a_gate_lets_a_thread_work_while_another_holder_waits(tmp_path):
    """The probe's gate: with one slot, a holder whose process sleeps lets the next thread in once it
    has been idle for a second; two holders whose processes spin never overlap."""
    gate = cpu_slots.Gate(1)
    spans: dict[str, tuple[float, float]] = {}
    holding = threading.Event()

    def hold(name: str, command: list[str]) -> None:
        with gate.slot():
            holding.set()
            began = time.monotonic()
            process.run_bounded(
                command, cwd=tmp_path, env={}, timeout_s=10, stdout=tmp_path / f"{name}.out",
                stderr=tmp_path / f"{name}.err", marker=f"{tmp_path}-{name}",
            )  # fmt: skip
            spans[name] = (began, time.monotonic())

    threads = [threading.Thread(target=hold, args=("sleep", ["sleep", "3"]))]
    threads += [threading.Thread(target=hold, args=(f"spin{i}", [sys.executable, "-c", SPIN])) for i in range(2)]
    threads[0].start()
    assert holding.wait(30), "the sleeping holder got the slot"
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(30)
    first, second = sorted((spans["spin0"], spans["spin1"]))
    assert first[0] < spans["sleep"][1], "a spinning holder started in the sleeping one's slot"
    assert second[0] >= first[1] - 0.05, "two holders that work never share the one slot"
