"""Run orchestration: choose the adapters and cells, create or resume a run, and run it (the probe
of a finished run is :mod:`harness.probe.command`'s).

The command line (:mod:`harness.cli`) parses flags into a :class:`Request` and calls these; they
raise :class:`~harness.errors.UsageError` for bad input before anything is written (an unknown
name, an empty selection, an existing run id), so a run directory exists only for a run that
starts. A run's outcome says which columns could not run (a broken manifest, an environment that
did not build) and whether it was interrupted; the CLI turns that into its exit code.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from harness.errors import PrepareError, UsageError
from harness.layout import Layout
from harness.matrix import catalog, cells, manifest, versions
from harness.matrix.cells import LiveServer
from harness.matrix.manifest import Adapter
from harness.prepare import environments
from harness.recorded import case_files, live
from harness.records import RunMeta, RunSettings

from . import backends, inputs, meta, reuse, runner, shards, store
from .outcome_feed import OutcomeFeed
from .progress import Progress

WAIT_JOBS_PER_JOB = 4
"""Waiting cells run beside the CPU-bound ones, by default four per ``--jobs`` slot."""
JOBS_OVER_CORES = 1
"""A run's cells working at once by default: one more than the cores. Within a cell the client and
the reference server take turns (each waits while the other answers) and a cell's start and record
leave a gap, so as many cells as cores left an eighth of two cores idle; one more fills most of it
(docs/benchmarks.md, 2026-12-03). Two more were slower again."""


def default_jobs() -> int:
    """``run --jobs`` when it is not given: the cores available and :data:`JOBS_OVER_CORES` more."""
    return meta.cpu_count() + JOBS_OVER_CORES


def wait_jobs(request: Request) -> int:
    """How many cells that mostly wait (``runner.waits``) run beside the CPU-bound ones:
    ``--wait-jobs``, else 4 x ``--jobs``."""
    return WAIT_JOBS_PER_JOB * request.jobs if request.wait_jobs is None else request.wait_jobs


@dataclass(frozen=True)
class Request:
    """What to run: a selection, and how."""

    selection: cells.Selection = field(default_factory=cells.Selection)
    kind: str | None = None
    backend: str = "local"
    jobs: int = 1
    budget_scale: float = 1.0
    run_id: str | None = None
    isolation: str = "worker"
    wait_jobs: int | None = None
    """Cells that mostly wait run at most this many at once beside the ``jobs`` others (0: in the
    ``jobs`` slots like any cell); None: :func:`wait_jobs`."""
    case_files: tuple[case_files.CaseFile, ...] = ()
    """Recorded cases to run instead of the catalog (``--case-file``)."""
    live: LiveServer | None = None
    """Live mode (``--server-cmd``, ``--server-url``): the recorded cases against the user's server
    (:mod:`harness.recorded.live`)."""
    fresh: bool = False
    """``--fresh``: run every cell, reuse none from earlier runs (:mod:`harness.run.reuse`)."""
    shard_costs: str | None = None
    """The run whose wall times split ``--shard`` (``count``: by count); None: the newest that has them."""

    @property
    def cases(self) -> tuple[catalog.Case, ...]:
        """The cases the selection picks from: the recorded ones (live, or replayed), else the catalog."""
        if self.live is not None:
            if not self.case_files:
                raise UsageError("--server-cmd (live mode) needs --case-file: the recorded tool and arguments to call")
            if self.backend != "local":
                raise UsageError("live mode (--server-cmd, --server-url) runs on the local backend only")
            return tuple(live.live_case(f.case(), self.live) for f in self.case_files)
        return tuple(f.case() for f in self.case_files) if self.case_files else catalog.CASES

    @property
    def sources(self) -> dict[str, cells.CaseSource]:
        """Each recorded case's source by its id: the user's server (live) or its case file replayed."""
        if self.live is not None:
            return {f.case_id: cells.Live(self.live, f.tool_call()) for f in self.case_files}
        return {f.case_id: f.source() for f in self.case_files}


@dataclass
class Outcome:
    """How a run or a probe ended."""

    run: store.RunStore
    broken: dict[str, str] = field(default_factory=dict)
    """Adapters that could not run (name -> why); their cells are harness errors."""
    interrupted: bool = False


def check_kind(kind: str | None, source: str = "--kind") -> str | None:
    """``kind`` when it is one of :data:`manifest.KINDS` (or None); :class:`UsageError` naming ``source``."""
    if kind is not None and kind not in manifest.KINDS:
        raise UsageError(f"{source}={kind!r}: expected one of {', '.join(manifest.KINDS)}")
    return kind


def select_adapters(layout: Layout, names: tuple[str, ...] | list[str], kind: str | None = None) -> list[Adapter]:
    """The adapters named (adapter or adapter/variant; all when none), of ``kind`` when given.

    With neither names nor ``kind``, the adapters of a kind that runs on request only
    (:data:`manifest.ON_REQUEST`: the agent hosts) are left out.

    Broken adapter directories are included (as broken adapters) when selected, so that they show
    as harness-error columns; a name that exists but is excluded by ``kind`` says so. A name
    ``ADAPTER@VERSION`` is that adapter at another version of its package (:mod:`harness.matrix.versions`).
    """
    found = manifest.discover(layout.clients)
    wanted = {name.split("/")[0] for name in names}
    by_name = {adapter.name: adapter for adapter in found}
    pinned: list[Adapter] = []
    for name in sorted(wanted):
        pin = versions.parse(name, "--adapter")[0] if versions.is_pinned_name(name) else None
        adapter = by_name.get(pin.adapter if pin else name)
        if adapter is None:
            raise cells.unknown(
                "adapter", pin.adapter if pin else name, by_name, "`python -m harness list` shows the adapters"
            )
        if kind is not None and adapter.kind != kind:
            raise UsageError(f"adapter {name!r} is of kind {adapter.kind}, excluded by --kind {kind}")
        if pin is not None:
            env = environments.process_env(layout, adapter)
            pinned.append(versions.derive(layout, adapter, pin.version, env))
    if wanted:
        chosen = [a for a in found if a.name in wanted]
    elif kind is not None:
        chosen = [a for a in found if a.kind == kind]
    else:
        chosen = [a for a in found if a.kind not in manifest.ON_REQUEST]
    return chosen + pinned


@dataclass(frozen=True)
class Planned:
    """A request's adapters and cells, and how its shard was split (``settings.shard_costs``)."""

    adapters: list[Adapter]
    cells: list[cells.Cell]
    shard_costs: str


def plan(layout: Layout, request: Request, run_id: str = "") -> Planned:
    """The adapters and cells of ``request``; :class:`UsageError` when nothing is selected.

    A shard (``--shard K/N``) is split by the cells' wall times in the newest finished run other
    than ``run_id`` that has them, or by the run ``request.shard_costs`` names (a resumed shard), else
    by count (:mod:`harness.run.shards`).
    """
    adapters = select_adapters(layout, request.selection.adapters, request.kind)
    if request.backend != "local" and any(versions.is_versioned(layout, a) for a in adapters):
        raise UsageError("an adapter at another version (ADAPTER@VERSION) runs on the local backend only")
    whole = replace(request.selection, shard=(1, 1))
    selected = cells.build(adapters, whole, request.budget_scale, request.cases, request.sources)
    index, count = request.selection.shard
    source = None
    if count > 1:
        named = request.shard_costs
        if named is None:
            source = shards.cost_source(layout.results, run_id)
        else:
            source = shards.named_source(layout.results, named)
        selected = shards.split(selected, index, count, source)
    if not selected:
        raise UsageError(
            f"the selection has no cells ({_describe(request)}); `python -m harness list` shows what a selection covers"
        )
    return Planned(adapters, selected, shards.COUNT if source is None else source.run.run_id)


def _describe(request: Request) -> str:
    selection = request.selection
    parts = [
        f"--{flag} {value}"
        for flag, values in (
            ("adapter", selection.adapters),
            ("case", selection.cases),
            ("case-file", tuple(str(f.path) for f in request.case_files)),
            ("family", selection.families),
            ("transport", selection.transports),
            ("protocol", selection.protocols),
        )
        for value in values
    ]
    if request.kind:
        parts.append(f"--kind {request.kind}")
    if selection.shard != (1, 1):
        parts.append(f"--shard {selection.shard[0]}/{selection.shard[1]}")
    return " ".join(parts) or "everything"


def _prepare_one(backend: backends.Backend, adapter: Adapter, build: bool) -> str | None:
    """Build or check one adapter; None when it can run, else why not (printed either way)."""
    try:
        if adapter.broken:
            raise PrepareError(f"invalid adapter directory: {adapter.broken}")
        if build:
            built = backend.prepare(adapter)
            print(f"prepare {adapter.name}: {'built' if built else 'cached'}", file=sys.stderr)
        else:
            backend.check(adapter)
    except (PrepareError, OSError) as exc:
        print(f"prepare {adapter.name}: FAILED: {exc}", file=sys.stderr)
        return str(exc)
    return None


def prepare(backend: backends.Backend, adapters: list[Adapter], *, build: bool, jobs: int = 1) -> dict[str, str]:
    """Build (``build``) or check each adapter's environment; returns those that cannot run (name -> why).

    Local environments are independent of each other and are built ``jobs`` at a time (a docker
    backend builds one image after another). A broken adapter directory is reported as it is,
    without building anything.
    """
    workers = max(1, jobs if build and backend.name == "local" else 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        reasons = list(pool.map(lambda adapter: _prepare_one(backend, adapter, build), adapters))
    return {adapter.name: why for adapter, why in zip(adapters, reasons, strict=True) if why is not None}


def ready(backend: backends.Backend, adapters: list[Adapter]) -> dict[str, str]:
    """Before cells run: local environments are built on demand, docker images must have been built."""
    return prepare(backend, adapters, build=backend.name == "local", jobs=meta.cpu_count())


def _settings(request: Request, backend: str, count: int, shard_costs: str) -> RunSettings:
    settings: RunSettings = {
        **request.selection.settings(),
        "jobs": request.jobs,
        "wait_jobs": wait_jobs(request),
        "backend": backend,
        "case_files": [f.name for f in request.case_files],
        "live": request.live.described() if request.live is not None else None,
        "kind": request.kind,
        "cells": count,
        "budget_scale": request.budget_scale,
        "isolation": request.isolation if backend == "local" else "container",
        "fresh": request.fresh,
        "shard_costs": shard_costs,
    }
    return settings


def start(layout: Layout, request: Request, backend_for: backends.Factory) -> Outcome:
    """Run ``request`` into a new run directory (created only once the selection and backend are known good)."""
    run = store.RunStore(layout.results / store.check_run_id(request.run_id or store.new_run_id()))
    planned = plan(layout, request, run.run_id)
    if run.meta_path.exists() or run.records_path.exists():
        raise UsageError(f"{run.directory}: run exists; use --resume {run.run_id}")
    with closing(backend_for(request.backend)) as backend:  # before the run directory: no engine, no run
        run.create()
        case_files.store(run.case_files_dir, list(request.case_files))
        return _execute(backend, request, run, None, planned, set())


def request_of(run: store.RunStore, run_meta: RunMeta, jobs: int) -> Request:
    """The request a run was started with (a resumed run keeps its own selection, backend and case files)."""
    settings = run_meta["settings"]
    return Request(
        cells.Selection.from_settings(settings),
        settings.get("kind"),
        run_meta.get("backend", "local"),
        jobs,
        settings["budget_scale"],
        case_files=tuple(case_files.of_run(run.case_files_dir)),
        live=live.from_settings(described) if (described := settings.get("live")) else None,
        fresh=settings.get("fresh", False),
        shard_costs=settings.get("shard_costs") or shards.COUNT,
    )


def resume(layout: Layout, run_id: str, jobs: int, backend_for: backends.Factory) -> Outcome:
    """Finish the interrupted run ``run_id`` (``latest``: the newest) with its original selection."""
    run = store.open_run(layout.results, run_id)
    run_meta = run.read_meta()
    request = request_of(run, run_meta, jobs)
    planned = plan(layout, request, run.run_id)
    done = run.compact()
    run_meta.setdefault("resumed", []).append(datetime.now(UTC).isoformat(timespec="seconds"))
    with closing(backend_for(request.backend)) as backend:
        return _execute(backend, request, run, run_meta, planned, done)


def _execute(
    backend: backends.Backend,
    request: Request,
    run: store.RunStore,
    run_meta: RunMeta | None,
    planned: Planned,
    done: set[str],
) -> Outcome:
    todo = [cell for cell in planned.cells if cell.key not in done]
    if done:
        print(f"resuming {run.run_id}: {len(done)} cells recorded, {len(todo)} to run", file=sys.stderr)
    layout = backend.layout
    found = _reuse(layout, backend, run, todo, request.fresh)
    broken = ready(backend, [a for a in planned.adapters if a.name in {c.adapter.name for c in found.to_run}])
    if run_meta is None:
        settings = _settings(request, backend.name, len(planned.cells), planned.shard_costs)
        run_meta = meta.collect(backend, planned.adapters, run.run_id, settings)
        run_meta["prepare_failures"] = broken
    _note_skipped(run_meta, found)
    run.write_meta(run_meta)
    for taken in found.taken:
        run.append(reuse.take(taken, run))
    after_prepare = inputs.Digests(layout, backend.name, backend.inputs)  # a lockfile prepare made counts
    ran_inputs = {cell.key: after_prepare.of(cell) for cell in found.to_run}
    progress = Progress(total=len(planned.cells), done=len(done) + len(found.taken), reused=_sources(found))
    feed = OutcomeFeed(progress, run_meta)
    outcome = Outcome(run, broken)
    try:
        runner.run_all(
            backend,
            run,
            found.to_run,
            jobs=request.jobs,
            wait_jobs=wait_jobs(request),
            broken=broken,
            on_record=feed.put,
            inputs=ran_inputs,
        )
    except runner.Interrupted as exc:
        feed.close()
        progress.close()
        print(f"{exc}; finish with: python -m harness run --resume {run.run_id}", file=sys.stderr)
        outcome.interrupted = True
        return outcome
    feed.close()
    progress.close()
    for adapter in planned.adapters:  # a worker that refused to start is known only now
        if adapter.name in run_meta["adapters"] and not adapter.broken:
            run_meta["adapters"][adapter.name]["isolation"] = backend.isolation_of(adapter)
    run_meta["reference_server"] = backend.server_start()
    run_meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    reuse.write_index(run)
    run.write_meta(run_meta)
    for name, why in sorted(broken.items()):
        print(f"column(s) of {name} could not run (harness-error cells): {why}", file=sys.stderr)
    print(f"results: {run.directory}", file=sys.stderr)
    return outcome


SHOWN_SKIPS = 5
"""Cells not taken from an earlier run that the run names one by one on stderr (all are in meta.json)."""


def _reuse(
    layout: Layout, backend: backends.Backend, run: store.RunStore, todo: list[cells.Cell], fresh: bool
) -> reuse.Plan:
    """Which cells of ``todo`` are taken from earlier runs (none with ``fresh``), said on stderr."""
    if fresh:
        return reuse.Plan(to_run=todo, why_run={"--fresh": len(todo)} if todo else {})
    digests = inputs.Digests(layout, backend.name, backend.inputs)
    found = reuse.plan(layout.results, run.run_id, todo, {cell.key: digests.of(cell) for cell in todo})
    for source, why in found.skipped["skipped_runs"].items():
        print(f"reuse: not from run {source}: {why}", file=sys.stderr)
    skipped = list(found.skipped["skipped_cells"].items())
    for where, why in skipped[:SHOWN_SKIPS]:
        print(f"reuse: {where} runs again: {why}", file=sys.stderr)
    if len(skipped) > SHOWN_SKIPS:
        print(f"reuse: and {len(skipped) - SHOWN_SKIPS} more cells run again (meta.json: reuse)", file=sys.stderr)
    if found.taken:
        print(f"reuse: {len(found.taken):,} cells from {reuse.described(_sources(found))}", file=sys.stderr)
    if found.why_run:
        why = "; ".join(f"{reason} ({count:,})" for reason, count in found.why_run.items())
        print(f"reuse: {len(found.to_run):,} cells to run: {why}", file=sys.stderr)
    return found


def _sources(found: reuse.Plan) -> dict[str, int]:
    """How many of the taken cells ran in which earlier run."""
    counts: dict[str, int] = {}
    for taken in found.taken:
        source = taken.record.get("reused_from") or ""
        counts[source] = counts.get(source, 0) + 1
    return counts


def _note_skipped(run_meta: RunMeta, found: reuse.Plan) -> None:
    """Add what reuse passed over to the run's metadata (a resumed run keeps what it passed over before)."""
    noted = run_meta.setdefault("reuse", {"skipped_runs": {}, "skipped_cells": {}})
    noted["skipped_runs"].update(found.skipped["skipped_runs"])
    noted["skipped_cells"].update(found.skipped["skipped_cells"])
