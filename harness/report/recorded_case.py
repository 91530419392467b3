"""The "your server" page of a recorded case: its checks, then what every column did with it.

:func:`page` gathers, for one case file of a run, the client-free checks
(:mod:`harness.classify.result_checks`, with the frame limits of the latest probe) and one
:class:`Reading` per column: its outcomes over the case's cells, and one line that quotes the
client's own error (SDK columns) or what the model read (framework columns), linked to the evidence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.classify import result_checks
from harness.matrix.manifest import MODEL_VIEW_KINDS
from harness.probe import boundary
from harness.recorded.case_files import CaseFile
from harness.run import store

EXCERPT = 160


@dataclass
class Reading:
    """One column's cells of a recorded case, and the line that reads them."""

    client: str
    kind: str
    cells: list[dict[str, Any]] = field(default_factory=list)

    @property
    def counts(self) -> str:
        counted = Counter(str(cell["outcome"]) for cell in self.cells)
        if len(counted) == 1:
            outcome = next(iter(counted))
            return f"{outcome} in all {len(self.cells)} cells" if len(self.cells) > 1 else outcome
        return ", ".join(f"{outcome} {n}" for outcome, n in counted.most_common())

    @property
    def line(self) -> str:
        """The client's own error of its first cell that did not pass, else what it (or the model) got."""
        for cell in self.cells:
            if cell["outcome"] != "pass" and cell.get("short"):
                return f"{_where(cell)}: {cell['short']}"
        for cell in self.cells:
            if cell.get("model_excerpt"):
                return f"{_where(cell)}: the model read {cell['model_channel']}: {_cut(str(cell['model_excerpt']))}"
        for cell in self.cells:
            if cell.get("altered"):
                return f"{_where(cell)}: the caller's result differs from what was sent in {cell['altered_fields']}"
        passed = all(cell["outcome"] == "pass" for cell in self.cells)
        return "the caller got the result as sent" if passed and self.kind not in MODEL_VIEW_KINDS else ""


def _where(cell: dict[str, Any]) -> str:
    return f"{cell['schema']}, {cell['transport']}"


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1] + "…"


def probe_boundaries(run: store.RunStore) -> tuple[str | None, list[dict[str, Any]]]:
    """The boundary results to compare a frame with: this run's, else the newest probed run's in
    the same results directory (its id, and the results)."""
    own = boundary.load(run)
    if own:
        return run.run_id, own
    runs = [store.RunStore(path) for path in Path(run.directory.parent).iterdir() if path.is_dir()]
    probed = [r for r in runs if r.boundary_path.is_file()]
    if not probed:
        return None, []
    newest = max(probed, key=lambda r: r.boundary_path.stat().st_mtime)
    return newest.run_id, boundary.load(newest)


def readings(cells: Iterable[dict[str, Any]], columns: list[dict[str, Any]]) -> list[Reading]:
    """One reading per column that has cells of the case, in the report's column order."""
    by_client = {column["client"]: Reading(column["client"], column["kind"]) for column in columns}
    for cell in cells:
        by_client[cell["client"]].cells.append(cell)
    return [reading for reading in by_client.values() if reading.cells]


def href(case_file: CaseFile) -> str:
    return f"{case_file.case_id}.html"


def page(
    case_file: CaseFile,
    cells: list[dict[str, Any]],
    columns: list[dict[str, Any]],
    probed: tuple[str | None, list[dict[str, Any]]],
) -> dict[str, Any]:
    """What ``recorded.html.j2`` renders for one case file (``probed``: :func:`probe_boundaries`)."""
    probed_run, boundaries = probed
    return {
        "case_file": case_file,
        "data": case_file.data,
        "checks": result_checks.check(case_file, boundaries),
        "probed_run": probed_run,
        "sdk": readings((c for c in cells if c["kind"] not in MODEL_VIEW_KINDS), columns),
        "frameworks": readings((c for c in cells if c["kind"] in MODEL_VIEW_KINDS), columns),
    }
