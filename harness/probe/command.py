"""``python -m harness probe``: the boundary search (:mod:`.boundary`) over a finished run's columns,
with their environments readied as a run readies them and each search's result printed as it ends."""

from __future__ import annotations

import sys
from contextlib import closing
from dataclasses import asdict

from harness.layout import Layout
from harness.matrix.manifest import Adapter
from harness.run import backends, runs, store
from harness.run.runner import Interrupted

from . import boundary


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
    fresh: bool = False,
) -> runs.Outcome:
    """Find the largest stdio frame each selected column accepts, into the run's ``boundary.json``;
    a search whose inputs are unchanged takes its earlier entry (none with ``fresh``)."""
    run = store.open_run(layout.results, run_id)
    run_meta = run.read_meta()
    adapters = runs.select_adapters(layout, names)
    with closing(backend_for(backend_name or run_meta.get("backend", "local"))) as backend:
        outcome = runs.Outcome(run, runs.ready(backend, [a for a in adapters if a.broken]))

        def ready(chosen: list[Adapter]) -> dict[str, str]:
            """Prepare the adapters whose searches run (none for a search that is reused)."""
            outcome.broken.update(runs.ready(backend, chosen))
            return outcome.broken

        def on_result(result: boundary.Boundary) -> None:
            text, note = boundary.wording(asdict(result))
            found = " ".join(part for part in (text, note, f"({result.probes} probes)") if part)
            same = f" (and {', '.join(result.same_for)})" if result.same_for else ""
            reused = f", reused from {result.reused_from}" if result.reused_from else ""
            print(f"probe {result.column}{same} {result.kind}: {found}{reused}", file=sys.stderr)

        try:
            boundary.probe_all(
                backend,
                run,
                run_meta,
                [a for a in adapters if not a.broken],
                jobs=jobs,
                max_bytes=max_bytes,
                kinds=kinds,
                on_result=on_result,
                fresh=fresh,
                ready=ready,
            )
        except Interrupted as exc:
            print(exc, file=sys.stderr)
            outcome.interrupted = True
            return outcome
        print(f"boundary: {run.boundary_path}", file=sys.stderr)
        return outcome
