"""The byte-exact boundary probe: the largest result frame each column accepts, in a handful of runs.

For every column (stdio) and payload kind (ASCII text, 3-byte CJK text, base64 image data), the
reference server answers one call with a frame of exactly N bytes (newline included,
``servers/reference/stdio_faults.py:probe_frame``) and the cell's outcome says whether the client
accepted it (``pass``). A limit makes that monotonic: every size up to it is accepted, every size
above rejected. ``search`` finds the largest accepted size and the smallest rejected one, one byte
apart, the numbers a bisection to the byte between ``MIN_BYTES`` and ``max_bytes`` finds in about 28
runs, but tries the sizes a configured limit is likely to be first:

1. ``max_bytes``: accepted means "no limit up to max_bytes" (1 run).
2. A binary search over the likely limits in between and the two bytes above each
   (``likely_limits``: every m * 2**e with m < 16, the powers of two and the seven steps between two
   of them, 10 MiB being 1.25 * 8 MiB; and every m * 10**e with m <= 9, such as 10,000,000; a limit
   counts the newline or not, takes < or <=, so it lands on s or s + 1 for a likely size s). It ends
   at two adjacent candidates, p accepted and c rejected, in at most 9 runs for the 449 candidates
   between 4 KiB and 64 MiB. When c = p + 1 that is the limit. ``MIN_BYTES`` is probed only when
   every candidate was rejected (rejected too: the client rejects every frame from ``MIN_BYTES`` on).
3. Otherwise the limit lies between a likely size's s + 2 and the next likely size c: c - 1 first
   (accepted: the limit is c - 1, a limit one byte short of a likely size).
4. Otherwise a bisection between the largest accepted and the smallest rejected size so far.

So a limit at a likely size s (10,485,760, 1,048,576, 33,554,432, 10,000,000, 4,194,304) or at s + 1
(16,777,217) takes at most 10 runs, one at s - 1 at most 11, any other about 32 (one more for a slow
reader, below).

A probe that ends in ``timeout`` says nothing about size (a slow client is not a size limit), so it
stops the search as inconclusive at that size (``verdict``: unless the client said out of band that
it dropped the frame). Each probe first runs with a short budget (``QUICK_BUDGET_SCALE``): most
clients accept or refuse a 64 MiB frame in seconds, and a client that drops a frame and waits for
the answer (rmcp, the Java SDK) waits only that long. A bare timeout there runs the probe again with
a generous budget (``PROBE_BUDGET_SCALE``), and so does every later probe of that search, so that
only a client that really hangs times out (a slow reader: the Python SDKs at 64 MiB, the Kotlin
SDK's quadratic read); ``probes`` counts both runs.

The searches of the column x kind pairs are independent: :data:`SEARCHES_PER_JOB` x ``jobs`` of them
run at once, at most ``jobs`` probes doing CPU work (``cpu_slots.Gate``: a probe whose client
dropped the frame and waits for its timeout gives its slot back); an adapter that
declares which options change how its client reads a frame (``frame_options``) is searched once per
setting of them rather than once per variant. Every probe is a real cell run (``runner.run_cell``)
kept in the run's ``boundary/`` directory as evidence; the summary goes to ``boundary.json``.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.classify.outcomes import cells_frame, error_text, is_client_timeout
from harness.layout import JOURNAL_FILE
from harness.matrix import catalog
from harness.matrix.cells import Cell, server_program
from harness.matrix.manifest import Adapter, Variant
from harness.records import CellInputs, ErrorInfo, RunMeta
from harness.run import cpu_slots, inputs
from harness.run.backends import Backend
from harness.run.reuse import sources
from harness.run.runner import Interrupted, run_cell
from harness.run.store import RunStore, link_tree
from harness.system import process

KINDS = ("text", "cjk", "blob")
MIN_BYTES = 4096
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
PROBE_BUDGET_SCALE = 3.0
"""A patient probe gets three times the size family's 60 s: the Python SDK 1.x takes about 58 s to
read a 64 MiB image frame while a second probe shares the two cores, so with 1.5 times (a 54 s client
timeout) "no limit" or "inconclusive" depended on the machine's load."""
QUICK_BUDGET_SCALE = 0.5
"""A probe's first run: half the size family's 60 s (an 18 s client timeout), enough for a client
that reads at network speed, short for one that dropped the frame and waits for its timeout."""
SEARCHES_PER_JOB = 3
"""Searches in flight per ``--jobs`` slot; a probe's client that reads a 64 MiB frame holds about
800 MiB, so six at once stay within a few GiB."""
PATIENT_SUFFIX = "-patient"
"""The case id's suffix of a probe run with ``PROBE_BUDGET_SCALE`` (its evidence beside the quick one's)."""


@dataclass(frozen=True)
class Boundary:
    """The result of one search (``search``) for a column and payload kind."""

    column: str
    adapter: str
    variant: str
    kind: str
    largest_accepted: int | None
    smallest_rejected: int | None
    no_limit_up_to: int | None
    probes: int
    """Real runs of the client, quick and patient (``QuickThenPatient``)."""
    rejection: str | None
    """Outcome and error of the smallest rejected frame."""
    inconclusive_at: int | None = None
    """The size whose probe timed out, when that stopped the search."""
    same_for: tuple[str, ...] = ()
    """The columns not searched because their frame options are this one's (``Adapter.probe_groups``)."""
    inputs: CellInputs | None = None
    """What decided the search (:func:`search_inputs`): the same inputs give the same entry."""
    reused_from: str | None = None
    """The run whose search this entry is, its probes' evidence linked in, when it did not run here."""


def probe_case(kind: str, frame_bytes: int, *, patient: bool = False) -> catalog.Case:
    return catalog.Case(
        f"probe-{kind}-{frame_bytes}" + (PATIENT_SUFFIX if patient else ""),
        "size",
        f"{frame_bytes}-byte {kind} frame",
        catalog.NO_LIMIT,
        "unspecified",
        ("none",),
        transports=("stdio",),
    )


@dataclass(frozen=True, kw_only=True)
class ProbeCell(Cell):
    """A cell whose server answers with a frame of exactly ``probe_bytes`` bytes."""

    probe_kind: str
    probe_bytes: int

    def server_args(self, server_dir: Path, cell_dir: Path) -> list[str]:
        return [
            *server_program(server_dir),
            "--case",
            "probe",
            "--schema",
            "none",
            "--journal",
            str(cell_dir / JOURNAL_FILE),
            "--probe-kind",
            self.probe_kind,
            "--probe-bytes",
            str(self.probe_bytes),
        ]


Verdict = tuple[bool | None, str]
"""(True: accepted, False: rejected, None: timed out, inconclusive) and the outcome in words."""


def _accepts(
    backend: Backend,
    store: RunStore,
    meta: RunMeta,
    adapter: Adapter,
    variant: Variant,
    kind: str,
    size: int,
    *,
    patient: bool,
) -> Verdict:
    case = probe_case(kind, size, patient=patient)
    scale = PROBE_BUDGET_SCALE if patient else QUICK_BUDGET_SCALE
    cell = ProbeCell(adapter, variant, case, "none", "stdio", scale, probe_kind=kind, probe_bytes=size)
    record = run_cell(backend, store, cell)
    reported = (record.get("observation") or {}).get("transport_errors") or []
    return verdict(cells_frame([record], meta).iloc[0].to_dict(), reported)


class QuickThenPatient:
    """One search's probe: the quick run first, the patient one after a bare timeout, and only the
    patient one from then on (the client is a slow reader; module docstring). ``runs`` counts both."""

    def __init__(self, run: Callable[[int, bool], Verdict]) -> None:
        self._run = run
        self.patient = False
        self.runs = 0

    def __call__(self, size: int) -> Verdict:
        if not self.patient:
            self.runs += 1
            found = self._run(size, False)
            if found[0] is not None:
                return found
            self.patient = True
        self.runs += 1
        return self._run(size, True)


def verdict(row: Mapping[str, Any], transport_errors: Sequence[ErrorInfo] = ()) -> Verdict:
    """A probe cell's classified row as a verdict. A pass accepts the frame, any other outcome
    rejects it, except a timeout: a client that is merely slow to read a large frame times out too,
    so a timeout is inconclusive, unless the client reported an error out of band before it
    (``transport_errors``: it said it dropped or refused the frame, then waited for an answer that
    had gone: rmcp, the Java SDK), which is its rejection; a report of the timeout itself (the
    Kotlin SDK logs "Request timed out") is no such error (``classify.is_client_timeout``)."""
    detail = f"{row['outcome']}: {row['error_type'] or ''} {row['error_message'] or ''}".strip()
    if row["outcome"] == "timeout":
        reported = [error_text(e) for e in transport_errors if not is_client_timeout(e)]
        if not reported:
            return None, detail[:300]
        return False, f"{detail}, after the client reported: {'; '.join(reported)}"[:300]
    return row["outcome"] == "pass", detail[:300]


@dataclass(frozen=True)
class Bisection:
    """What ``search`` found: ``probes`` counts the runs of ``accepts``, ``rejection`` is the detail
    of the smallest rejected size (of the timeout, when ``high`` or ``low`` timed out)."""

    largest_accepted: int | None
    smallest_rejected: int | None
    probes: int
    rejection: str | None
    inconclusive_at: int | None = None


class _TimedOut(Exception):
    """A probe timed out: the search stops there, inconclusive."""

    def __init__(self, size: int, detail: str) -> None:
        super().__init__(size, detail)
        self.size = size
        self.detail = detail


class _Probe:
    """Runs probes and counts them; keeps the detail of the latest rejection, the smallest one.

    ``search`` only probes sizes strictly between the largest accepted and the smallest rejected
    size known, so each rejection is smaller than the ones before it.
    """

    def __init__(self, accepts: Callable[[int], Verdict]) -> None:
        self.accepts = accepts
        self.count = 0
        self.rejection: str | None = None

    def __call__(self, size: int) -> bool:
        self.count += 1
        ok, detail = self.accepts(size)
        if ok is None:
            raise _TimedOut(size, detail)
        if not ok:
            self.rejection = detail
        return ok


def likely_limits(low: int, high: int) -> list[int]:
    """The sizes strictly between ``low`` and ``high`` a configured limit is likely to be, ascending.

    Every m * 2**e with 1 <= m < 16 (the powers of two and the seven steps between two of them:
    1 MiB, 1.125 MiB, ..., 1.875 MiB; 10 MiB is 1.25 * 8 MiB) and every m * 10**e with
    1 <= m <= 9 (10,000,000). Between 4 KiB and 64 MiB these are 149 sizes.
    """
    sizes: set[int] = set()
    for exponent in range(max(high, 1).bit_length()):
        sizes.update(m << exponent for m in range(1, 16))
    power = 1
    while power < high:
        sizes.update(m * power for m in range(1, 10))
        power *= 10
    return sorted(size for size in sizes if low < size < high)


def candidates(low: int, high: int) -> list[int]:
    """The sizes the search's first stage tries, strictly between ``low`` and ``high``, ascending: each
    likely limit s and s + 1, s + 2, so that a limit at s or s + 1 ends that stage with the limit and
    the byte above it both probed."""
    sizes = {size + delta for size in likely_limits(low - 2, high) for delta in (0, 1, 2)}
    return sorted(size for size in sizes if low < size < high)


def search(accepts: Callable[[int], Verdict], low: int, high: int) -> Bisection:
    """The largest accepted size in [low, high] and the next one up, likely limits first (module docstring).

    The numbers are those of a bisection to the byte, for any monotonic ``accepts``; ``probes``
    counts the calls of ``accepts``. A timeout stops the search, inconclusive at that size.
    """
    probe = _Probe(accepts)
    accepted: int | None = None  # the largest size known accepted (None: low is not probed yet)
    rejected = high  # the smallest size known rejected, once high is
    try:
        if probe(high):
            return Bisection(high, None, probe.count, None)
        sizes = candidates(low, high)
        below, above = -1, len(sizes)  # sizes[below] is accepted (-1: low), sizes[above] rejected (len: high)
        while above - below > 1:
            middle = (below + above) // 2
            if probe(sizes[middle]):
                below, accepted = middle, sizes[middle]
            else:
                above, rejected = middle, sizes[middle]
        if accepted is None:
            if low == high or not probe(low):
                return Bisection(None, low, probe.count, probe.rejection)
            accepted = low
        # a limit one byte short of a likely size (c - 1) before any other
        if rejected - accepted > 1:
            if probe(rejected - 1):
                accepted = rejected - 1
            else:
                rejected -= 1
        while rejected - accepted > 1:
            middle = (accepted + rejected) // 2
            if probe(middle):
                accepted = middle
            else:
                rejected = middle
        return Bisection(accepted, rejected, probe.count, probe.rejection)
    except _TimedOut as timeout:
        if timeout.size in (low, high):
            return Bisection(None, None, probe.count, timeout.detail, inconclusive_at=timeout.size)
        return Bisection(accepted, rejected, probe.count, probe.rejection, inconclusive_at=timeout.size)


Task = tuple[Adapter, tuple[Variant, ...], str]
"""One search: an adapter, the variants one search stands for (the first is searched), a payload kind."""


def probe_all(
    backend: Backend,
    store: RunStore,
    meta: RunMeta,
    adapters: list[Adapter],
    *,
    jobs: int,
    max_bytes: int = DEFAULT_MAX_BYTES,
    kinds: tuple[str, ...] = KINDS,
    on_result: Callable[[Boundary], None] = lambda _: None,
    fresh: bool = False,
    ready: Callable[[list[Adapter]], dict[str, str]] = lambda _: {},
) -> list[Boundary]:
    """Search every stdio column x kind for its limit, ``jobs`` probes working at a time; write ``boundary.json``.

    A search whose inputs (:func:`search_inputs`) match an entry of this run's or an earlier
    finished run's ``boundary.json`` takes that entry and its probes' evidence instead of running
    (:func:`reusable`); ``fresh``: every search runs. ``ready`` prepares the adapters whose searches
    run and returns those that cannot (name -> why): their searches are left out.
    """
    probe_store = RunStore(store.directory / "boundary")
    digests = inputs.Digests(backend.layout, backend.name, backend.inputs)
    earlier = {} if fresh else reusable(store)
    tasks: list[Task] = [
        (adapter, group, kind)
        for adapter in adapters
        if adapter.families is None or "size" in adapter.families
        for group in adapter.probe_groups()
        for kind in kinds
    ]
    found: dict[int, Boundary] = {}
    todo: list[tuple[int, Task, CellInputs]] = []
    for position, (adapter, (variant, *same), kind) in enumerate(tasks):
        searched = search_inputs(digests, adapter, variant, same, kind, max_bytes)
        taken = take(earlier.get(searched["digest"]), probe_store, adapter, variant, kind)
        if taken is None:
            todo.append((position, tasks[position], searched))
        else:
            found[position] = taken
            on_result(taken)
    broken = ready(list({task[0].name: task[0] for _, task, _ in todo}.values()))
    todo = [(position, task, searched) for position, task, searched in todo if task[0].name not in broken]

    def run(task: Task, searched: CellInputs, stop: threading.Event) -> Boundary:
        adapter, (variant, *same), kind = task
        _clear(probe_store, adapter, variant, kind)

        def run_once(size: int, patient: bool) -> Verdict:
            with gate.slot():
                if not stop.is_set():
                    verdict = _accepts(backend, probe_store, meta, adapter, variant, kind, size, patient=patient)
            if stop.is_set():  # not run, or killed by the interruption: it says nothing
                raise Interrupted("probe interrupted; boundary.json not written")
            return verdict

        accepts = QuickThenPatient(run_once)
        bisection = search(accepts, MIN_BYTES, max_bytes)
        no_limit = max_bytes if bisection.largest_accepted == max_bytes else None
        result = Boundary(
            adapter.column(variant),
            adapter.name,
            variant.id,
            kind,
            bisection.largest_accepted,
            bisection.smallest_rejected,
            no_limit,
            accepts.runs,
            bisection.rejection,
            bisection.inconclusive_at,
            tuple(adapter.column(v) for v in same),
            searched,
        )
        on_result(result)
        return result

    gate = cpu_slots.Gate(jobs)
    searches = SEARCHES_PER_JOB * max(1, jobs)
    with process.interruptible(backend.kill_all) as stop, ThreadPoolExecutor(max_workers=searches) as pool:
        ran = list(pool.map(lambda item: run(item[1], item[2], stop), todo))
    found.update({position: result for (position, _, _), result in zip(todo, ran, strict=True)})
    results = [found[position] for position in sorted(found)]
    path = store.boundary_path
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps([asdict(r) for r in results], indent=2))
    os.replace(temporary, path)
    return results


def search_inputs(
    digests: inputs.Digests, adapter: Adapter, variant: Variant, same: Sequence[Variant], kind: str, max_bytes: int
) -> CellInputs:
    """What decides one search's entry: a probe cell's inputs (its size aside) and the search's own
    (this module, the kind, the sizes and budgets it tries, the columns it stands for)."""
    case = probe_case(kind, 0)
    cell = ProbeCell(adapter, variant, case, "none", "stdio", QUICK_BUDGET_SCALE, probe_kind=kind, probe_bytes=0)
    probe = digests.of(cell)
    assert probe is not None  # a probe is never live
    own = f"{kind}\0{MIN_BYTES}\0{max_bytes}\0{QUICK_BUDGET_SCALE}\0{PROBE_BUDGET_SCALE}\0{[v.id for v in same]}"
    search = inputs.hash_of(_own_source(), own.encode())
    return inputs.combine({**probe["parts"], "search": search})


@functools.cache
def _own_source() -> bytes:
    """This module's source, part of every search's inputs (read once, however many searches)."""
    return Path(__file__).read_bytes()


def _probe_prefix(adapter: Adapter, variant: Variant, kind: str) -> str:
    """How the cell directories of one search's probes begin (``Cell.key`` with ``probe_case``'s id)."""
    return f"{adapter.name}--{variant.id}--probe-{kind}-"


Earlier = tuple[RunStore, dict[str, Any]]
"""A ``boundary.json`` entry of a run, with the run."""


def reusable(store: RunStore) -> dict[str, Earlier]:
    """The entries a search may take, by their inputs' digest: this run's own (a probe run again
    into it), then every earlier finished run's, newest first; a ``boundary.json`` that does not
    parse is passed over."""
    found: dict[str, Earlier] = {}
    runs = [store, *(s.run for s in sources(store.directory.parent, store.run_id) if s.finished)]
    for run in runs:
        try:
            entries = load(run)
        except (OSError, ValueError):
            continue
        for entry in entries if isinstance(entries, list) else []:
            digest = (entry.get("inputs") or {}).get("digest") if isinstance(entry, dict) else None
            if digest:
                found.setdefault(digest, (run, entry))
    return found


def take(
    earlier: Earlier | None, probe_store: RunStore, adapter: Adapter, variant: Variant, kind: str
) -> Boundary | None:
    """An earlier search's entry, its probes' evidence linked into ``probe_store``; None when there is
    none or its evidence is not whole (one probe directory per probe run)."""
    if earlier is None:
        return None
    run, entry = earlier
    prefix = _probe_prefix(adapter, variant, kind)
    cells = run.directory / "boundary" / "cells"
    found = cells.glob(f"{prefix}*") if cells.is_dir() else iter(())
    probes = sorted(path for path in found if (path / "cell.json").is_file())
    if len(probes) != entry.get("probes"):
        return None
    here = run.directory == probe_store.directory.parent
    if not here:
        for path in probes:
            link_tree(path, probe_store.cell_dir(path.name))
    fields: dict[str, Any] = {name: entry[name] for name in Boundary.__dataclass_fields__ if name in entry}
    fields["same_for"] = tuple(entry.get("same_for") or ())
    fields["reused_from"] = entry.get("reused_from") or (None if here else run.run_id)
    return Boundary(**fields)


def _clear(probe_store: RunStore, adapter: Adapter, variant: Variant, kind: str) -> None:
    """Remove an earlier search's probes of this column and kind from the run (a search that runs
    again leaves only its own, one directory per probe)."""
    cells = probe_store.directory / "cells"
    for path in cells.glob(f"{_probe_prefix(adapter, variant, kind)}*") if cells.is_dir() else ():
        shutil.rmtree(path)


def wording(result: Mapping[str, Any]) -> tuple[str, str]:
    """What a search found (a ``boundary.json`` entry), in words: the finding and a note.

    The report's largest-frame table and the probe's progress line both say it this way: the
    largest accepted frame in bytes, "no limit up to N", "rejects every frame ≥ N", or
    "inconclusive: timed out at N" with what was accepted before.
    """
    accepted = result.get("largest_accepted")
    if result.get("inconclusive_at"):
        return f"inconclusive: timed out at {result['inconclusive_at']:,}", (
            f"(accepted {accepted:,})" if accepted else ""
        )
    if result.get("no_limit_up_to"):
        return f"no limit up to {result['no_limit_up_to']:,}", ""
    if accepted is None:
        return f"rejects every frame ≥ {result['smallest_rejected']:,}", ""
    return f"{accepted:,}", ""


def load(store: RunStore) -> list[dict[str, Any]]:
    """The boundary results of a run, or an empty list when it was not probed."""
    path = store.boundary_path
    return json.loads(path.read_text()) if path.exists() else []
