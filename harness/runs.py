"""Run orchestration: choose the adapters and cells, create or resume a run, run it, probe it.

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
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from . import (
    backends,
    boundary,
    case_files,
    catalog,
    cells,
    environments,
    live,
    manifest,
    meta,
    runner,
    store,
    versions,
)
from .errors import UsageError
from .layout import Layout
from .live import LiveServer
from .manifest import Adapter
from .outcome_feed import OutcomeFeed
from .progress import Progress
from .records import RunMeta, RunSettings

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
    (:mod:`harness.live`)."""

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
    ``ADAPTER@VERSION`` is that adapter at another version of its package (:mod:`harness.versions`).
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


def plan(layout: Layout, request: Request) -> tuple[list[Adapter], list[cells.Cell]]:
    """The adapters and cells of ``request``; :class:`UsageError` when nothing is selected."""
    adapters = select_adapters(layout, request.selection.adapters, request.kind)
    if request.backend != "local" and any(versions.is_versioned(layout, a) for a in adapters):
        raise UsageError("an adapter at another version (ADAPTER@VERSION) runs on the local backend only")
    selected = cells.build(adapters, request.selection, request.budget_scale, request.cases)
    if not selected:
        raise UsageError(
            f"the selection has no cells ({_describe(request)}); `python -m harness list` shows what a selection covers"
        )
    return adapters, selected


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
            raise backends.PrepareError(f"invalid adapter directory: {adapter.broken}")
        if build:
            built = backend.prepare(adapter)
            print(f"prepare {adapter.name}: {'built' if built else 'cached'}", file=sys.stderr)
        else:
            backend.check(adapter)
    except (backends.PrepareError, OSError) as exc:
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


def _ready(backend: backends.Backend, adapters: list[Adapter]) -> dict[str, str]:
    """Before cells run: local environments are built on demand, docker images must have been built."""
    return prepare(backend, adapters, build=backend.name == "local", jobs=meta.cpu_count())


def _settings(request: Request, backend: str, count: int) -> RunSettings:
    selection = request.selection
    return {
        "jobs": request.jobs,
        "wait_jobs": wait_jobs(request),
        "shard": list(selection.shard),
        "adapters": list(selection.adapters),
        "backend": backend,
        "cases": list(selection.cases),
        "case_files": [f.name for f in request.case_files],
        "live": request.live.described() if request.live is not None else None,
        "families": list(selection.families),
        "transports": list(selection.transports),
        "protocols": list(selection.protocols),
        "kind": request.kind,
        "cells": count,
        "budget_scale": request.budget_scale,
        "isolation": request.isolation if backend == "local" else "container",
    }


def start(layout: Layout, request: Request, backend_for: backends.Factory) -> Outcome:
    """Run ``request`` into a new run directory (created only once the selection and backend are known good)."""
    adapters, selected = plan(layout, request)
    run = store.RunStore(layout.results / store.check_run_id(request.run_id or store.new_run_id()))
    if run.meta_path.exists() or run.records_path.exists():
        raise UsageError(f"{run.directory}: run exists; use --resume {run.run_id}")
    with closing(backend_for(request.backend)) as backend:  # before the run directory: no engine, no run
        run.create()
        case_files.store(run.case_files_dir, list(request.case_files))
        return _execute(backend, request, run, None, adapters, selected, set())


def request_of(run: store.RunStore, run_meta: RunMeta, jobs: int) -> Request:
    """The request a run was started with (a resumed run keeps its own selection, backend and case files)."""
    settings = run_meta["settings"]
    selection = cells.Selection(
        tuple(settings["adapters"]),
        tuple(settings["cases"]),
        tuple(settings["families"]),
        (settings["shard"][0], settings["shard"][1]),
        tuple(settings.get("transports", [])),
        tuple(settings.get("protocols", [])),
    )
    return Request(
        selection,
        settings.get("kind"),
        run_meta.get("backend", "local"),
        jobs,
        settings["budget_scale"],
        case_files=tuple(case_files.of_run(run.case_files_dir)),
        live=live.from_settings(described) if (described := settings.get("live")) else None,
    )


def resume(layout: Layout, run_id: str, jobs: int, backend_for: backends.Factory) -> Outcome:
    """Finish the interrupted run ``run_id`` (``latest``: the newest) with its original selection."""
    run = store.open_run(layout.results, run_id)
    run_meta = run.read_meta()
    request = request_of(run, run_meta, jobs)
    adapters, selected = plan(layout, request)
    done = run.compact()
    run_meta.setdefault("resumed", []).append(datetime.now(UTC).isoformat(timespec="seconds"))
    with closing(backend_for(request.backend)) as backend:
        return _execute(backend, request, run, run_meta, adapters, selected, done)


def _execute(
    backend: backends.Backend,
    request: Request,
    run: store.RunStore,
    run_meta: RunMeta | None,
    adapters: list[Adapter],
    selected: list[cells.Cell],
    done: set[str],
) -> Outcome:
    todo = [cell for cell in selected if cell.key not in done]
    if done:
        print(f"resuming {run.run_id}: {len(done)} cells recorded, {len(todo)} to run", file=sys.stderr)
    broken = _ready(backend, [a for a in adapters if a.name in {c.adapter.name for c in todo}])
    if run_meta is None:
        run_meta = meta.collect(backend, adapters, run.run_id, _settings(request, backend.name, len(selected)))
        run_meta["prepare_failures"] = broken
    run.write_meta(run_meta)
    progress = Progress(total=len(done) + len(todo), done=len(done))
    feed = OutcomeFeed(progress, run_meta)
    outcome = Outcome(run, broken)
    try:
        runner.run_all(
            backend,
            run,
            todo,
            jobs=request.jobs,
            wait_jobs=wait_jobs(request),
            broken=broken,
            on_record=feed.put,
        )
    except runner.Interrupted as exc:
        feed.close()
        progress.close()
        print(f"{exc}; finish with: python -m harness run --resume {run.run_id}", file=sys.stderr)
        outcome.interrupted = True
        return outcome
    feed.close()
    progress.close()
    for adapter in adapters:  # a worker that refused to start is known only now
        if adapter.name in run_meta["adapters"] and not adapter.broken:
            run_meta["adapters"][adapter.name]["isolation"] = backend.isolation_of(adapter)
    run_meta["reference_server"] = backend.server_start()
    run_meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    run.write_meta(run_meta)
    for name, why in sorted(broken.items()):
        print(f"column(s) of {name} could not run (harness-error cells): {why}", file=sys.stderr)
    print(f"results: {run.directory}", file=sys.stderr)
    return outcome


def probe(
    layout: Layout,
    run_id: str,
    names: list[str],
    kinds: tuple[str, ...],
    *,
    max_bytes: int,
    jobs: int,
    backend_for: backends.Factory,
    backend_name: str | None = None,
) -> Outcome:
    """Find the largest stdio frame each selected column accepts, into the run's ``boundary.json``."""
    run = store.open_run(layout.results, run_id)
    run_meta = run.read_meta()
    adapters = select_adapters(layout, names)
    with closing(backend_for(backend_name or run_meta.get("backend", "local"))) as backend:
        broken = _ready(backend, adapters)
        outcome = Outcome(run, broken)

        def on_result(result: boundary.Boundary) -> None:
            text, note = boundary.wording(asdict(result))
            found = " ".join(part for part in (text, note, f"({result.probes} probes)") if part)
            same = f" (and {', '.join(result.same_for)})" if result.same_for else ""
            print(f"probe {result.column}{same} {result.kind}: {found}", file=sys.stderr)

        try:
            boundary.probe_all(
                backend,
                run,
                run_meta,
                [a for a in adapters if a.name not in broken],
                jobs=jobs,
                max_bytes=max_bytes,
                kinds=kinds,
                on_result=on_result,
            )
        except runner.Interrupted as exc:
            print(exc, file=sys.stderr)
            outcome.interrupted = True
            return outcome
        print(f"boundary: {run.boundary_path}", file=sys.stderr)
        return outcome
