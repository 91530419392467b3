"""The byte-exact boundary probe: the largest result frame each column accepts, by bisection.

For every column (stdio) and payload kind (ASCII text, 3-byte CJK text, base64 image data), the
reference server answers one call with a frame of exactly N bytes (newline included,
``servers/reference/stdio_faults.py:probe_frame``) and the cell's outcome says whether the client
accepted it (``pass``). The probe first tries ``max_bytes``: accepted means "no limit up to
max_bytes". Otherwise it bisects between a small accepted frame and the first rejected one until
they are one byte apart. Every probe is a real cell run (``runner.run_cell``) kept in the run's
``boundary/`` directory as evidence; the summary goes to ``boundary.json``.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from . import catalog
from .cells import Cell
from .classify import cells_frame
from .environments import Layout
from .manifest import Adapter
from .runner import run_cell
from .store import RunStore

KINDS = ("text", "cjk", "blob")
MIN_BYTES = 4096
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
PROBE_BUDGET_SCALE = 0.5


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


def probe_case(kind: str, frame_bytes: int) -> catalog.Case:
    return catalog.Case(f"probe-{kind}-{frame_bytes}", "size", f"{frame_bytes}-byte {kind} frame",
                        catalog.NO_LIMIT, "unspecified", ("none",), transports=("stdio",))


@dataclass(frozen=True, kw_only=True)
class ProbeCell(Cell):
    """A cell whose server answers with a frame of exactly ``probe_bytes`` bytes."""

    probe_kind: str
    probe_bytes: int

    def server_args(self, server_dir: Path, journal: Path) -> list[str]:
        return [str(server_dir), "--case", "probe", "--schema", "none", "--journal", str(journal),
                "--probe-kind", self.probe_kind, "--probe-bytes", str(self.probe_bytes)]


def _accepts(layout: Layout, store: RunStore, meta: dict[str, Any], adapter: Adapter, variant_id: str,
             kind: str, size: int) -> tuple[bool, str]:
    variant = next(v for v in adapter.variants if v.id == variant_id)
    cell = ProbeCell(adapter, variant, probe_case(kind, size), "none", "stdio", PROBE_BUDGET_SCALE,
                     probe_kind=kind, probe_bytes=size)
    record = run_cell(layout, store, cell)
    row = cells_frame([record], meta).iloc[0]
    detail = f"{row['outcome']}: {row['error_type'] or ''} {row['error_message'] or ''}".strip()
    return row["outcome"] == "pass", detail[:300]


def bisect(accepts: Callable[[int], tuple[bool, str]], low: int, high: int) -> tuple[int | None, int | None, int, str | None]:
    """(largest accepted, smallest rejected, probes, rejection) for sizes in [low, high]."""
    probes = 1
    ok, detail = accepts(high)
    if ok:
        return high, None, probes, None
    rejection = detail
    probes += 1
    ok, detail = accepts(low)
    if not ok:
        return None, low, probes, detail
    while high - low > 1:
        middle = (low + high) // 2
        probes += 1
        ok, detail = accepts(middle)
        if ok:
            low = middle
        else:
            high, rejection = middle, detail
    return low, high, probes, rejection


def probe_all(layout: Layout, store: RunStore, meta: dict[str, Any], adapters: list[Adapter], *, jobs: int,
              max_bytes: int = DEFAULT_MAX_BYTES, kinds: tuple[str, ...] = KINDS,
              on_result: Callable[[Boundary], None] = lambda _: None) -> list[Boundary]:
    """Bisect every stdio column x kind, ``jobs`` bisections at a time; write ``boundary.json``."""
    probe_store = RunStore(store.directory / "boundary")
    tasks = [(adapter, variant.id, kind) for adapter in adapters for variant in adapter.variants
             if "stdio" in (variant.transports or adapter.transports) for kind in kinds]

    def run(task: tuple[Adapter, str, str]) -> Boundary:
        adapter, variant_id, kind = task
        largest, smallest, probes, rejection = bisect(
            lambda size: _accepts(layout, probe_store, meta, adapter, variant_id, kind, size), MIN_BYTES, max_bytes)
        variant = next(v for v in adapter.variants if v.id == variant_id)
        result = Boundary(adapter.column(variant), adapter.name, variant_id, kind, largest, smallest,
                          max_bytes if smallest is None else None, probes, rejection)
        on_result(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(run, tasks))
    path = store.directory / "boundary.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps([asdict(r) for r in results], indent=2))
    os.replace(temporary, path)
    return results


def load(store: RunStore) -> list[dict[str, Any]]:
    """The boundary results of a run, or an empty list when it was not probed."""
    path = store.directory / "boundary.json"
    return json.loads(path.read_text()) if path.exists() else []
