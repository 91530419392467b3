"""The byte-exact boundary probe: the largest result frame each column accepts, by bisection.

For every column (stdio) and payload kind (ASCII text, 3-byte CJK text, base64 image data), the
reference server answers one call with a frame of exactly N bytes (newline included,
``servers/reference/stdio_faults.py:probe_frame``) and the cell's outcome says whether the client
accepted it (``pass``). The probe first tries ``max_bytes``: accepted means "no limit up to
max_bytes". Otherwise it bisects between a small accepted frame and the first rejected one until
they are one byte apart. A probe that ends in ``timeout`` says nothing about size (a slow client
is not a size limit), so it stops the bisection as inconclusive at that size; probe cells get a
generous budget (``PROBE_BUDGET_SCALE``) so that only a client that really hangs times out.
Every probe is a real cell run (``runner.run_cell``) kept in the run's ``boundary/`` directory as
evidence; the summary goes to ``boundary.json``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import catalog, process
from .backends import Backend
from .cells import Cell
from .classify import cells_frame
from .manifest import Adapter
from .records import RunMeta
from .runner import Interrupted, run_cell
from .store import RunStore

KINDS = ("text", "cjk", "blob")
MIN_BYTES = 4096
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
PROBE_BUDGET_SCALE = 1.5


@dataclass(frozen=True)
class Boundary:
    """The result of one bisection."""

    column: str
    adapter: str
    variant: str
    kind: str
    largest_accepted: int | None
    smallest_rejected: int | None
    no_limit_up_to: int | None
    probes: int
    rejection: str | None
    """Outcome and error of the smallest rejected frame."""
    inconclusive_at: int | None = None
    """The size whose probe timed out, when that stopped the bisection."""


def probe_case(kind: str, frame_bytes: int) -> catalog.Case:
    return catalog.Case(
        f"probe-{kind}-{frame_bytes}",
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

    def server_args(self, server_dir: Path, journal: Path) -> list[str]:
        return [
            str(server_dir),
            "--case",
            "probe",
            "--schema",
            "none",
            "--journal",
            str(journal),
            "--probe-kind",
            self.probe_kind,
            "--probe-bytes",
            str(self.probe_bytes),
        ]


Verdict = tuple[bool | None, str]
"""(True: accepted, False: rejected, None: timed out, inconclusive) and the outcome in words."""


def _accepts(
    backend: Backend, store: RunStore, meta: RunMeta, adapter: Adapter, variant_id: str, kind: str, size: int
) -> Verdict:
    variant = next(v for v in adapter.variants if v.id == variant_id)
    cell = ProbeCell(
        adapter, variant, probe_case(kind, size), "none", "stdio", PROBE_BUDGET_SCALE, probe_kind=kind, probe_bytes=size
    )
    record = run_cell(backend, store, cell)
    row = cells_frame([record], meta).iloc[0]
    detail = f"{row['outcome']}: {row['error_type'] or ''} {row['error_message'] or ''}".strip()[:300]
    if row["outcome"] == "timeout":
        return None, detail
    return row["outcome"] == "pass", detail


@dataclass(frozen=True)
class Bisection:
    largest_accepted: int | None
    smallest_rejected: int | None
    probes: int
    rejection: str | None
    inconclusive_at: int | None = None


def bisect(accepts: Callable[[int], Verdict], low: int, high: int) -> Bisection:
    """Bisect sizes in [low, high] for the largest accepted one; a timeout stops it as inconclusive."""
    probes = 1
    ok, detail = accepts(high)
    if ok:
        return Bisection(high, None, probes, None)
    if ok is None:
        return Bisection(None, None, probes, detail, inconclusive_at=high)
    rejection = detail
    probes += 1
    ok, detail = accepts(low)
    if not ok:
        return Bisection(None, low if ok is False else None, probes, detail, None if ok is False else low)
    while high - low > 1:
        middle = (low + high) // 2
        probes += 1
        ok, detail = accepts(middle)
        if ok is None:
            return Bisection(low, high, probes, rejection, inconclusive_at=middle)
        if ok:
            low = middle
        else:
            high, rejection = middle, detail
    return Bisection(low, high, probes, rejection)


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
) -> list[Boundary]:
    """Bisect every stdio column x kind, ``jobs`` bisections at a time; write ``boundary.json``."""
    probe_store = RunStore(store.directory / "boundary")
    tasks = [
        (adapter, variant.id, kind)
        for adapter in adapters
        for variant in adapter.variants
        if "stdio" in (variant.transports or adapter.transports)
        and (adapter.families is None or "size" in adapter.families)
        for kind in kinds
    ]

    def run(task: tuple[Adapter, str, str], stop: threading.Event) -> Boundary:
        adapter, variant_id, kind = task

        def accepts(size: int) -> Verdict:
            verdict = _accepts(backend, probe_store, meta, adapter, variant_id, kind, size)
            if stop.is_set():  # this probe was killed by the interruption: it says nothing
                raise Interrupted("probe interrupted; boundary.json not written")
            return verdict

        found = bisect(accepts, MIN_BYTES, max_bytes)
        variant = next(v for v in adapter.variants if v.id == variant_id)
        no_limit = max_bytes if found.largest_accepted == max_bytes else None
        result = Boundary(
            adapter.column(variant),
            adapter.name,
            variant_id,
            kind,
            found.largest_accepted,
            found.smallest_rejected,
            no_limit,
            found.probes,
            found.rejection,
            found.inconclusive_at,
        )
        on_result(result)
        return result

    with process.interruptible(backend.kill_all) as stop, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(lambda task: run(task, stop), tasks))
    path = store.boundary_path
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps([asdict(r) for r in results], indent=2))
    os.replace(temporary, path)
    return results


def wording(result: Mapping[str, Any]) -> tuple[str, str]:
    """What a bisection found (a ``boundary.json`` entry), in words: the finding and a note.

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
