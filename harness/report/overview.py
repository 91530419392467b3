"""What the matrix page shows first, for people who would rather look than read.

- :func:`overview`: one line per case, and per column a strip of compact marks, one per row of the
  case (revision, schema mode, transport): the outcome as a colour and a letter, each a link to
  its evidence;
- :func:`error_index`: every column's distinct error messages, listed once, which the detailed
  cells refer to by number instead of repeating them;
- :func:`bar`: a column's outcome counts as the segments of a stacked bar (inline SVG);
- :func:`boundary_chart`: the largest accepted stdio frames on a linear scale with the 10 MiB line.

Everything here is data for the templates, coordinates included: the templates print it as SVG, from
no network.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from harness.classify.outcomes import OUTCOMES

LETTERS = {
    "pass": "P",
    "error-result": "E",
    "reject": "R",
    "disconnect": "D",
    "timeout": "T",
    "crash": "C",
    "harness-error": "H",
}
BAR_WIDTH = 160
CHART_WIDTH = 320
LABEL_WIDTH = 220
"""Where the boundary chart's bars start: the column names are left of it."""
ROW_HEIGHT = 40
BAR_STEP = 12
BAR_HEIGHT = 10
CHART_MAX = 64 * 1024 * 1024
"""The chart's scale: the probe's largest frame (``--max-bytes``'s default)."""
TEN_MIB = 10 * 1024 * 1024


def overview(rows: list[Any], columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per case: its id, family, description and per column the marks of its rows."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        case = row.case
        entry = found.setdefault(
            case.id,
            {
                "id": case.id,
                "family": case.family,
                "description": case.description,
                "marks": {c["client"]: [] for c in columns},
                "outcomes": set(),
            },
        )
        for column in columns:
            cell = row.cells.get(column["client"])
            if cell is None:
                continue
            entry["outcomes"].add(cell["outcome"])
            where = f"{row.protocol} {row.schema} {row.transport}"
            error = f": {cell['short']}" if cell.get("short") else ""
            entry["marks"][column["client"]].append(
                {
                    "letter": LETTERS.get(cell["outcome"], "?") + ("†" if cell.get("altered") else ""),
                    "outcome": cell["outcome"],
                    "href": cell["href"],
                    "title": f"{column['client']} · {where}: {cell['outcome']}{error}",
                }
            )
    for entry in found.values():
        entry["outcomes"] = " ".join(sorted(entry["outcomes"]))
    return list(found.values())


def error_index(
    cells: list[dict[str, Any]], columns: list[dict[str, Any]]
) -> tuple[dict[tuple[str, str], int], list[dict[str, Any]]]:
    """Per column, its distinct short errors numbered by how many cells show them (most first):
    ``(client, message) -> number`` for the cells, and the listing (column, its messages, counts)."""
    counted: dict[str, Counter[str]] = {c["client"]: Counter() for c in columns}
    for cell in cells:
        if cell.get("short") and cell["client"] in counted:
            counted[cell["client"]][cell["short"]] += 1
    index: dict[tuple[str, str], int] = {}
    listing = []
    for position, column in enumerate(columns):
        messages = []
        for number, (message, count) in enumerate(counted[column["client"]].most_common(), start=1):
            index[(column["client"], message)] = number
            messages.append(
                {"number": number, "message": message, "count": count, "anchor": f"err-{position}-{number}"}
            )
        if messages:
            listing.append({"client": column["client"], "position": position, "messages": messages})
    return index, listing


def bar(counts: dict[str, int], width: int = BAR_WIDTH) -> list[dict[str, Any]]:
    """The segments of a stacked bar of ``counts`` (outcome -> cells), in outcome order."""
    total = sum(counts.values())
    segments, x = [], 0.0
    for outcome in OUTCOMES:
        count = counts.get(outcome, 0)
        if not count or not total:
            continue
        share = width * count / total
        segments.append({"outcome": outcome, "x": round(x, 2), "width": round(share, 2), "count": count})
        x += share
    return segments


def boundary_chart(results: list[dict[str, Any]], kinds: tuple[str, ...]) -> dict[str, Any]:
    """Bars of the largest accepted frame per column and payload kind, and where 10 MiB is, with
    every coordinate the SVG needs: a row of ``ROW_HEIGHT`` per column, its label left, a bar of
    ``BAR_HEIGHT`` per payload kind from ``LABEL_WIDTH`` on, its value after it."""
    by_column: dict[str, dict[str, dict[str, Any]]] = {}
    for result in results:
        accepted = result.get("largest_accepted") or result.get("no_limit_up_to") or 0
        open_ended = bool(result.get("no_limit_up_to"))
        by_column.setdefault(result["column"], {})[result["kind"]] = {
            "width": round(CHART_WIDTH * min(accepted, CHART_MAX) / CHART_MAX, 2),
            "label": f"{accepted:,}{'+' if open_ended else ''}" if accepted else "none",
            "open": open_ended,
        }
    rows = []
    for index, (client, found) in enumerate(by_column.items()):
        top = index * ROW_HEIGHT + 4
        bars = []
        for slot, kind in enumerate(kinds):
            bar = found.get(kind)
            if bar:
                y = top + slot * BAR_STEP
                bars.append(
                    {"kind": kind, **bar, "y": y, "value_x": round(LABEL_WIDTH + 4 + bar["width"], 2), "value_y": y + 9}
                )
        rows.append({"client": client, "label_y": top + 20, "bars": bars})
    ten_mib = round(CHART_WIDTH * TEN_MIB / CHART_MAX, 2)
    bottom = len(rows) * ROW_HEIGHT
    return {
        "rows": rows,
        "width": CHART_WIDTH + 330,
        "height": bottom + 24,
        "bar_x": LABEL_WIDTH,
        "bar_height": BAR_HEIGHT,
        "limit_x": round(LABEL_WIDTH + ten_mib, 2),
        "limit_bottom": bottom + 4,
        "limit_label_x": round(LABEL_WIDTH + 4 + ten_mib, 2),
        "limit_label_y": bottom + 18,
    }
