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
from harness.matrix import catalog, cells
from harness.matrix.manifest import MODEL_VIEW_KINDS
from harness.probe import boundary
from harness.recorded import case_files, live
from harness.records import CellRecord, RunMeta
from harness.run.store import RunStore

from . import formatting, overview, recorded_case, sweep

TEMPLATES = Path(__file__).parent / "templates"
ASSETS = ("style.css", "matrix.js")
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
    protocol: catalog.Protocol
    schema: catalog.SchemaMode
    transport: catalog.Transport
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


def _rows(cell_rows: list[dict[str, Any]], columns: list[dict[str, Any]], cases: tuple[catalog.Case, ...]) -> list[Row]:
    """Rows in the order of ``cases``; a case's revisions, schema modes and transports are adjacent rows."""
    by_cell: CellIndex = {(r["case"], r["protocol"], r["schema"], r["transport"], r["client"]): r for r in cell_rows}
    transports = [t for t in catalog.TRANSPORTS if any(r["transport"] == t for r in cell_rows)]
    rows = []
    for case in cases:
        first = True
        for protocol, schema, transport in itertools.product(catalog.PROTOCOLS, case.schema_modes, transports):
            row = Row(case, protocol, schema, transport, first)
            for column in columns:
                data = by_cell.get((case.id, protocol, schema, transport, column["client"]))
                if data is not None:
                    row.cells[column["client"]] = data
                elif cells.not_asked(column["protocols"], case, protocol):
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


@dataclass
class RunView:
    """What every page of one run's report is drawn from, computed once: the run's metadata, its
    cases (the catalog's and the recorded ones), the classified frame and its rows as the pages show
    them, the columns by kind, and the template environment."""

    run: RunStore
    meta: RunMeta
    conformance: dict[str, Any] | None
    env: jinja2.Environment
    recorded: list[case_files.CaseFile]
    live: dict[str, Any] | None
    """The live server the run's settings name (live mode), as its metadata keeps it."""
    cases: tuple[catalog.Case, ...]
    records: dict[str, CellRecord]
    frame: pd.DataFrame
    plain: list[dict[str, Any]]
    """The frame as JSON-ready rows (``cells.json``, and every page's values)."""
    shown: list[dict[str, Any]]
    every_column: list[dict[str, Any]]
    columns: list[dict[str, Any]]
    """The SDK columns (the matrix page)."""
    framework_columns: list[dict[str, Any]]
    """The framework and agent host columns (the model-view page)."""
    sdk_cells: list[dict[str, Any]]
    """The SDK columns' cells of :attr:`shown`, each with ``err_ref`` into :attr:`errors`."""
    errors: list[dict[str, Any]]
    """The SDK cells' distinct errors (:func:`overview.error_index`)."""
    changed_in: list[sweep.Family]
    """A version sweep's changes by family (:func:`sweep.families`; empty when the run is no sweep)."""


def _view(run: RunStore, conformance: dict[str, Any] | None) -> RunView:
    meta = run.read_meta()
    recorded = case_files.of_run(run.case_files_dir)
    described = meta["settings"].get("live") if "settings" in meta else None
    server = live.shown(described) if described else None
    cases = catalog.CASES + tuple(f.case() if server is None else live.live_case(f.case(), server) for f in recorded)
    records = {record["key"]: record for record in run.records()}
    frame = cells_frame(list(records.values()), meta)
    every_column = _columns(frame, meta)
    plain = formatting.plain_records(frame)
    env = environment()
    # what every page's header shows, computed once for the run's pages
    env.globals.update(
        meta=meta,
        conformance=conformance,
        header=formatting.run_header(meta, conformance),
        provenance=formatting.provenance(frame),
    )
    shown = [_shown(row) for row in plain]
    columns = [column for column in every_column if column["kind"] not in MODEL_VIEW_KINDS]
    sdk_cells = [cell for cell in shown if cell["kind"] not in MODEL_VIEW_KINDS]
    error_refs, errors = overview.error_index(sdk_cells, columns)
    for cell in sdk_cells:
        cell["err_ref"] = error_refs.get((cell["client"], cell["short"])) if cell["short"] else None
    return RunView(
        run=run,
        meta=meta,
        conformance=conformance,
        env=env,
        recorded=recorded,
        live=described,
        cases=cases,
        records=records,
        frame=frame,
        plain=plain,
        shown=shown,
        every_column=every_column,
        columns=columns,
        framework_columns=[column for column in every_column if column["kind"] in MODEL_VIEW_KINDS],
        sdk_cells=sdk_cells,
        errors=errors,
        changed_in=sweep.families(frame, meta),
    )


def _matrix_page(view: RunView, staging: Path) -> None:
    """``index.html``: the SDK columns' matrix, with the overview, the outcome counts, the boundary table."""
    sdk_frame = view.frame[~view.frame["kind"].isin(MODEL_VIEW_KINDS)]
    rows = _rows(view.sdk_cells, view.columns, view.cases)
    boundary_results = boundary.load(view.run)
    (staging / "index.html").write_text(
        view.env.get_template("index.html.j2").render(
            columns=view.columns,
            rows=rows,
            families=[f for f in catalog.FAMILIES if f in set(sdk_frame["family"])],
            outcomes=OUTCOMES,
            legend=LEGEND,
            summary=[{**entry, "bar": overview.bar(entry["counts"])} for entry in _summary(sdk_frame, view.columns)],
            total=len(sdk_frame),
            boundaries=_boundaries(boundary_results, view.columns),
            chart=overview.boundary_chart(boundary_results, boundary.KINDS),
            overview=overview.overview(rows, view.columns),
            errors=view.errors,
            bar_width=overview.BAR_WIDTH,
            letters=overview.LETTERS,
            kinds=boundary.KINDS,
            frameworks=len(view.framework_columns),
            recorded=[(recorded_case.href(f), f) for f in view.recorded],
            sweep=view.changed_in,
        ),
        encoding="utf-8",
    )


def _versions_page(view: RunView, staging: Path) -> None:
    """``versions.html``, for a version sweep: the release at which a column's behaviour changed."""
    if view.changed_in:
        page = view.env.get_template("versions.html.j2").render(families=view.changed_in)
        (staging / sweep.PAGE).write_text(page, encoding="utf-8")


def _recorded_pages(view: RunView, staging: Path) -> None:
    """The "your server" page of each recorded case."""
    probed = recorded_case.probe_boundaries(view.run) if view.recorded else (None, [])
    template = view.env.get_template("recorded.html.j2")
    for case_file in view.recorded:
        rows = [row for row in view.shown if row["case"] == case_file.case_id]
        (staging / recorded_case.href(case_file)).write_text(
            template.render(live=view.live, **recorded_case.page(case_file, rows, view.every_column, probed)),
            encoding="utf-8",
        )


def _model_view_page(view: RunView, staging: Path) -> None:
    """``model-view.html``: what the framework and agent host columns' models read."""
    framework_frame = view.frame[view.frame["kind"].isin(MODEL_VIEW_KINDS)]
    framework_cells = [cell for cell in view.shown if cell["kind"] in MODEL_VIEW_KINDS]
    (staging / "model-view.html").write_text(
        view.env.get_template("model-view.html.j2").render(
            columns=view.framework_columns,
            rows=_rows(framework_cells, view.framework_columns, view.cases),
            total=len(framework_frame),
            channels=model_input.CHANNELS,
            channel_legend=CHANNEL_LEGEND,
            legend=LEGEND,
            summary=_channel_summary(framework_frame, view.framework_columns),
        ),
        encoding="utf-8",
    )


def _cell_pages(view: RunView, staging: Path) -> None:
    """``cells/<key>.html``: every cell's evidence."""
    by_id = {case.id: case for case in view.cases}
    template = view.env.get_template("cell.html.j2")
    for row in view.shown:
        record = view.records[row["key"]]
        files = view.run.cell_files(row["key"])
        (staging / "cells" / f"{row['key']}.html").write_text(
            template.render(
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


def _data_files(view: RunView, staging: Path) -> None:
    """``data/``: the classified cells as CSV and JSON, and the run's metadata."""
    view.frame.to_csv(staging / "data" / "cells.csv", index=False)
    (staging / "data" / "cells.json").write_text(
        json.dumps(view.plain, indent=1, ensure_ascii=False, allow_nan=False), encoding="utf-8"
    )
    (staging / "data" / "meta.json").write_text(json.dumps(view.meta, indent=2, ensure_ascii=False), encoding="utf-8")


PAGES = (_matrix_page, _versions_page, _recorded_pages, _model_view_page, _cell_pages, _data_files)
"""Every page of a run's report (and its data files), each drawn from the run's :class:`RunView`
alone: none depends on another having been written."""


def _render(run: RunStore, staging: Path, conformance: dict[str, Any] | None) -> int:
    view = _view(run, conformance)
    for directory in ("cells", "data", "assets"):
        (staging / directory).mkdir(parents=True)
    for asset in ASSETS:
        shutil.copy(TEMPLATES / asset, staging / "assets" / asset)
    for page in PAGES:
        page(view, staging)
    return len(view.frame)
