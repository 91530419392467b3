"""The static report: ``reports/index.html`` (the SDK matrix), ``reports/model-view.html`` (what the
model sees, for agent frameworks), one evidence page per cell, data files.

Everything is rendered by jinja2 with autoescaping on, so text that came from a server or a
client (error messages carry payload text) is always escaped, and its control characters are shown
as visible markers (``harness/formatting.py`` decides how values look). Links are relative, so the pages
work from ``file://`` and from any static host. The report is rendered into a staging directory
and moved into place entry by entry: a failed render never leaves a half-written report.
"""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from harness.classify import model_input
from harness.classify.outcomes import OUTCOMES, cells_frame, sent_results, short_error
from harness.layout import MODEL_JOURNAL_FILE
from harness.matrix import catalog
from harness.matrix.manifest import MODEL_VIEW_KINDS
from harness.probe import boundary
from harness.recorded import case_files, live
from harness.records import RunMeta
from harness.run.store import RunStore

from . import formatting, overview, recorded_case, sweep

TEMPLATES = Path(__file__).parent / "templates"
ASSETS = ("style.css", "matrix.js")
TRANSPORT_ORDER = ("stdio", "http-json", "http-sse")
LOG_SHOWN = 16 * 1024

LEGEND = {
    "pass": "The call returned and the caller can read the result. Marked altered (†) when what "
    "the caller sees differs from what the server sent (a dropped structuredContent, "
    "defaulted content, a coerced value).",
    "error-result": "The call returned a result with isError: true, and the caller sees that flag.",
    "reject": "The client raised an error for this call, and the session still works: the "
    "follow-up call on the same session succeeded.",
    "disconnect": "The transport closed or the session is unusable afterwards: the follow-up call "
    "failed (or initialize itself failed).",
    "timeout": "No answer within the time allowed: either the client's own request timeout fired, "
    "or the harness killed the adapter at the cell's budget. The evidence says which.",
    "crash": "The adapter process died without writing an observation (for example an uncaught "
    "exception or the runtime running out of memory inside the client).",
    "harness-error": "Our fault, never the client's: the adapter's environment could not be built, "
    "the adapter wrote an invalid observation, or the harness itself failed.",
}


CHANNEL_LEGEND = {
    "text": "the server's text block(s), not the structured content",
    "structured": "the server's structuredContent (as JSON, or serialized into a string), not the text",
    "both": "the text and, separately, the structured content",
    "repr": "a language-level dump of the result object (e.g. TextContent(type='text', ...)) carrying the content",
    "error-text": "an error message instead of the server's content (the framework or SDK failed and told the model)",
    "other": "neither the server's content nor an error (a placeholder, a summary)",
    "empty": "nothing to read",
}
"""How the harness names the channel a model view came from (``harness/model_input.py`` derives it)."""


@dataclass
class Row:
    """One matrix row: a case under one protocol revision, in one schema mode, on one transport."""

    case: catalog.Case
    protocol: str
    schema: str
    transport: str
    first: bool
    """The first row of its case (it carries the description)."""
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)
    not_asked: dict[str, str] = field(default_factory=dict)
    """Columns that do not declare this row's revision (they run only :data:`catalog.ERA_CASES` under
    it), each with the link to its era cell on this transport: what it did with such a server."""

    @property
    def vector(self) -> str:
        return "|".join(f"{c['outcome']}{'+' if c['altered'] else ''}" for c in self.cells.values())

    @property
    def agree(self) -> bool:
        return len({(c["outcome"], bool(c["altered"])) for c in self.cells.values()}) <= 1


def environment() -> jinja2.Environment:
    """The pages' jinja2 environment: autoescaping on, undefined values an error, the report's filters."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=formatting.visible,
    )
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False, default=str)
    env.filters["known"] = formatting.known
    env.filters["counted"] = formatting.counted
    env.filters["node_releases"] = formatting.node_releases
    env.filters["toolchains"] = formatting.toolchain_versions
    return env


def _columns(frame: pd.DataFrame, meta: RunMeta) -> list[dict[str, Any]]:
    """Matrix columns: SDK-less reference adapters first, then by adapter name and variant order."""
    adapters = meta.get("adapters", {})
    present = set(frame["client"])
    columns = []
    for name in sorted(adapters, key=lambda n: (adapters[n].get("package") is not None, n)):
        info = adapters[name]
        for variant_id, variant in info.get("variants", {}).items():
            if variant["column"] in present:
                columns.append(
                    {
                        "client": variant["column"],
                        "adapter": name,
                        "variant": variant_id,
                        "title": info.get("title", name),
                        "description": variant.get("description", ""),
                        "package": info.get("package"),
                        "version": info.get("package_version"),
                        "runtime": info.get("runtime"),
                        "runtime_version": info.get("runtime_version"),
                        "image": info.get("image"),
                        "image_id": info.get("image_id"),
                        "image_short": (info.get("image_id") or "").split(":")[-1][:12],
                        "kind": info.get("kind", "sdk"),
                        "protocols": info.get("protocols", [catalog.LEGACY_PROTOCOL]),
                    }
                )
    return columns


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A classified row with what the pages show of it: the short error, why no model view, the link."""
    return {
        **row,
        "short": short_error(row),
        "no_model_view": formatting.no_model_view(row),
        "spoke_other": formatting.other_revision(row),
        "href": f"cells/{row['key']}.html",
    }


CellIndex = dict[tuple[str, str, str, str, str], dict[str, Any]]
"""Cells by (case, protocol, schema, transport, client)."""


def _era_href(by_cell: CellIndex, protocol: str, transport: str, client: str) -> str | None:
    """The link to a column's first era cell (:data:`catalog.ERA_CASES`) under ``protocol`` on ``transport``."""
    for case_id in catalog.ERA_CASES:
        for schema in catalog.get(case_id).schema_modes:
            cell = by_cell.get((case_id, protocol, schema, transport, client))
            if cell is not None:
                return str(cell["href"])
    return None


def _rows(cells: list[dict[str, Any]], columns: list[dict[str, Any]], cases: tuple[catalog.Case, ...]) -> list[Row]:
    """Rows in the order of ``cases``; a case's revisions, schema modes and transports are adjacent rows."""
    by_cell: CellIndex = {(r["case"], r["protocol"], r["schema"], r["transport"], r["client"]): r for r in cells}
    transports = [t for t in TRANSPORT_ORDER if any(r["transport"] == t for r in cells)]
    rows = []
    for case in cases:
        first = True
        for protocol, schema, transport in itertools.product(catalog.PROTOCOLS, case.schema_modes, transports):
            row = Row(case, protocol, schema, transport, first)
            for column in columns:
                data = by_cell.get((case.id, protocol, schema, transport, column["client"]))
                if data is not None:
                    row.cells[column["client"]] = data
                elif protocol not in column["protocols"]:
                    href = _era_href(by_cell, protocol, transport, column["client"])
                    if href is not None:
                        row.not_asked[column["client"]] = href
            if row.cells:
                rows.append(row)
                first = False
    return rows


def _read_log(path: Path) -> str:
    if not path.exists():
        return ""
    return path.read_bytes()[-LOG_SHOWN:].decode("utf-8", "replace")


def _summary(frame: pd.DataFrame, columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-column outcome counts, and how many returned results were altered."""
    counts = frame.groupby(["client", "outcome"]).size()
    altered = frame[frame["altered"].fillna(False).astype(bool)].groupby("client").size()
    return [
        {
            **column,
            "counts": {outcome: int(counts.get((column["client"], outcome), 0)) for outcome in OUTCOMES},
            "altered": int(altered.get(column["client"], 0)),
        }
        for column in columns
    ]


def _boundaries(results: list[dict[str, Any]], columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per column that was probed (``results``: the run's ``boundary.json``): its boundary per payload kind."""
    found: dict[str, dict[str, Any]] = {}
    for result in results:
        found.setdefault(result["column"], {})[result["kind"]] = result
    same_for = {result["column"]: result.get("same_for") or [] for result in results}
    order = [c["client"] for c in columns] + sorted(set(found) - {c["client"] for c in columns})
    return [
        {
            "client": client,
            "same_for": same_for[client],
            "kinds": {kind: formatting.boundary_cell(found[client].get(kind)) for kind in boundary.KINDS},
        }
        for client in order
        if client in found
    ]


def _channel_summary(frame: pd.DataFrame, columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per framework column: how many cells reached the model through each channel."""
    counts = frame.groupby(["client", "model_channel"]).size()
    seen = frame[frame["model_error_seen"].eq(True)].groupby("client").size()
    silent = frame[frame["model_channel"].isna()].groupby("client").size()
    judged = frame[frame["model_schema_shown"].isin([True, False])]
    shown = judged[judged["model_schema_shown"].eq(True)].groupby("client").size()
    judged_count = judged.groupby("client").size()
    return [
        {
            **column,
            "counts": {channel: int(counts.get((column["client"], channel), 0)) for channel in model_input.CHANNELS},
            "error_seen": int(seen.get(column["client"], 0)),
            "schema_shown": int(shown.get(column["client"], 0)),
            "schema_judged": int(judged_count.get(column["client"], 0)),
            "no_output": int(silent.get(column["client"], 0)),
        }
        for column in columns
    ]


def render(run: RunStore, out: Path, conformance: dict[str, Any] | None = None) -> int:
    """Render the report of ``run`` into ``out``; returns the number of cells.

    ``conformance`` is the reference server's latest conformance result (``nox -s conformance``),
    named in the header of every page. The pages are written into a staging directory beside
    ``out`` and moved into place only once all of them are written; a failure removes the staging
    directory and leaves ``out`` as it was.
    """
    staging = out.parent / f".{out.name}.staging"
    if staging.exists():
        shutil.rmtree(staging)
    try:
        count = _render(run, staging, conformance)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    out.mkdir(parents=True, exist_ok=True)
    for entry in sorted(staging.iterdir()):
        target = out / entry.name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        entry.rename(target)
    staging.rmdir()
    return count


def _render(run: RunStore, staging: Path, conformance: dict[str, Any] | None) -> int:
    meta = run.read_meta()
    recorded = case_files.of_run(run.case_files_dir)
    described = meta["settings"].get("live") if "settings" in meta else None
    server = live.shown(described) if described else None
    cases = catalog.CASES + tuple(f.case() if server is None else live.live_case(f.case(), server) for f in recorded)
    by_id = {case.id: case for case in cases}
    records = {record["key"]: record for record in run.records()}
    frame = cells_frame(list(records.values()), meta)
    every_column = _columns(frame, meta)
    columns = [column for column in every_column if column["kind"] not in MODEL_VIEW_KINDS]
    framework_columns = [column for column in every_column if column["kind"] in MODEL_VIEW_KINDS]
    sdk_frame = frame[~frame["kind"].isin(MODEL_VIEW_KINDS)]
    plain = formatting.plain_records(frame)  # cells.json, and every page's values
    shown = [_shown(row) for row in plain]
    sdk_cells = [cell for cell in shown if cell["kind"] not in MODEL_VIEW_KINDS]
    error_refs, errors = overview.error_index(sdk_cells, columns)
    for cell in sdk_cells:
        cell["err_ref"] = error_refs.get((cell["client"], cell["short"])) if cell["short"] else None
    rows = _rows(sdk_cells, columns, cases)
    env = environment()
    env.globals["provenance"] = formatting.provenance(frame)
    (staging / "cells").mkdir(parents=True)
    (staging / "data").mkdir()
    (staging / "assets").mkdir()
    for asset in ASSETS:
        shutil.copy(TEMPLATES / asset, staging / "assets" / asset)
    families = [f for f in catalog.FAMILIES if f in set(sdk_frame["family"])]
    swept_families = sweep.families(frame, meta)
    boundary_results = boundary.load(run)
    (staging / "index.html").write_text(
        env.get_template("index.html.j2").render(
            meta=meta,
            conformance=conformance,
            columns=columns,
            rows=rows,
            families=families,
            outcomes=OUTCOMES,
            legend=LEGEND,
            summary=[{**entry, "bar": overview.bar(entry["counts"])} for entry in _summary(sdk_frame, columns)],
            total=len(sdk_frame),
            boundaries=_boundaries(boundary_results, columns),
            chart=overview.boundary_chart(boundary_results, boundary.KINDS),
            overview=overview.overview(rows, columns),
            errors=errors,
            bar_width=overview.BAR_WIDTH,
            letters=overview.LETTERS,
            kinds=boundary.KINDS,
            frameworks=len(framework_columns),
            recorded=[(recorded_case.href(f), f) for f in recorded],
            sweep=swept_families,
        ),
        encoding="utf-8",
    )
    if swept_families:
        swept = env.get_template("versions.html.j2").render(meta=meta, conformance=conformance, families=swept_families)
        (staging / sweep.PAGE).write_text(swept, encoding="utf-8")
    probed = recorded_case.probe_boundaries(run) if recorded else (None, [])
    for case_file in recorded:
        (staging / recorded_case.href(case_file)).write_text(
            env.get_template("recorded.html.j2").render(
                meta=meta,
                conformance=conformance,
                live=described,
                **recorded_case.page(
                    case_file, [row for row in shown if row["case"] == case_file.case_id], every_column, probed
                ),
            ),
            encoding="utf-8",
        )
    framework_frame = frame[frame["kind"].isin(MODEL_VIEW_KINDS)]
    (staging / "model-view.html").write_text(
        env.get_template("model-view.html.j2").render(
            meta=meta,
            conformance=conformance,
            columns=framework_columns,
            rows=_rows([cell for cell in shown if cell["kind"] in MODEL_VIEW_KINDS], framework_columns, cases),
            total=len(framework_frame),
            channels=model_input.CHANNELS,
            channel_legend=CHANNEL_LEGEND,
            legend=LEGEND,
            summary=_channel_summary(framework_frame, framework_columns),
        ),
        encoding="utf-8",
    )
    page = env.get_template("cell.html.j2")
    for row in shown:
        record = records[row["key"]]
        files = run.cell_files(row["key"])
        (staging / "cells" / f"{row['key']}.html").write_text(
            page.render(
                meta=meta,
                conformance=conformance,
                row=row,
                case=by_id[row["case"]],
                record=record,
                legend=LEGEND,
                sent=sent_results(record["journal"]),
                views=[call for call in (record["observation"] or {}).get("calls") or [] if call.get("model_view")],
                short=row["short"],
                no_model_view=row["no_model_view"],
                stdout=_read_log(files.stdout),
                stderr=_read_log(files.stderr),
                model_events=formatting.model_journal(files.directory / MODEL_JOURNAL_FILE),
            ),
            encoding="utf-8",
        )
    frame.to_csv(staging / "data" / "cells.csv", index=False)
    (staging / "data" / "cells.json").write_text(
        json.dumps(plain, indent=1, ensure_ascii=False, allow_nan=False), encoding="utf-8"
    )
    (staging / "data" / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    return len(frame)
