"""How values look on the report's pages, decided in Python so the templates print plain strings.

- Control characters in any printed text (a client's log, an error message, a journal line) are
  shown as visible markers (:func:`visible`, the jinja ``finalize`` hook): autoescaping escapes
  markup, not a NUL byte.
- A missing value is ``None``, never a pandas NaN (:func:`plain_records`); the pages print "n/a"
  or "—" with the reason for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from harness.prepare import toolchains
from harness.probe import boundary

VISIBLE_CONTROLS: dict[int, str] = {
    code: f"\\u{code:04x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if chr(code) not in "\t\n\r"
}
"""Control character → its JSON escape as plain text (NUL as ``\\u0000``): the same notation the
JSON views use, readable in any font. Tab, newline and carriage return stay: they lay out logs."""

NO_MODEL_VIEW = {
    "pass": "not captured",
    "error-result": "not captured",
    "reject": "rejected",
    "disconnect": "disconnected",
    "timeout": "timed out",
    "crash": "crashed",
    "harness-error": "harness error",
}
"""Why a framework cell has no model view, by outcome (a returned call whose adapter captured no
view is ``not captured``)."""


def visible(value: Any) -> Any:
    """Jinja ``finalize``: a string with every control character replaced by its visible marker."""
    return value.translate(VISIBLE_CONTROLS) if isinstance(value, str) else value


def known(value: Any, template: str = "{}") -> str:
    """``value`` formatted with ``template``, or "n/a" when it is missing."""
    return "n/a" if value is None else template.format(value)


def counted(number: int, noun: str) -> str:
    """``1 client column``, ``2 client columns``: ``noun`` is singular and takes an ``s``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def node_releases(meta: Mapping[str, Any]) -> list[str]:
    """The Node releases the run's node adapters ran on (``v24.22.3``), sorted, each once."""
    adapters = meta.get("adapters") or {}
    return sorted(
        {
            str(info["runtime_version"])
            for info in adapters.values()
            if info.get("runtime") == "node" and info.get("runtime_version")
        }
    )


TOOLCHAIN_NAMES = {"go": "Go", "rustc": "rustc", "cargo": "Cargo", "java": "Java", "mvn": "Maven"}
"""How the report names the tools of :data:`harness.records.RunMeta` ``toolchains``."""


def toolchain_versions(meta: Mapping[str, Any]) -> list[str]:
    """The compiled adapters' toolchains the run built with (``Go 1.26.8``), for the header; only
    those of runtimes the run had an adapter of."""
    runtimes = {info.get("runtime") for info in (meta.get("adapters") or {}).values()}
    found = meta.get("toolchains") or {}
    return [
        f"{TOOLCHAIN_NAMES[tool]} {found[tool]}"
        for runtime in toolchains.COMPILED
        if runtime in runtimes
        for tool, _command, _pattern in toolchains.TOOLCHAINS[runtime].versions
        if tool in found
    ]


def run_header(meta: Mapping[str, Any], conformance: Mapping[str, Any] | None) -> dict[str, Any]:
    """What every run page's header says, as plain strings: the run, where and on what it ran, the
    reference server's conformance result, and on the docker backend each adapter's image."""
    settings = meta.get("settings") or {}
    isolation = settings.get("isolation")
    nodes = node_releases(meta)
    platform = [
        f"{meta.get('backend')} backend" + (f" ({isolation} isolation)" if isolation else ""),
        str(meta.get("os")),
        f"Python {meta.get('python')}",
        "Node " + (", ".join(nodes) if nodes else str(meta.get("node") or "n/a")),
        *toolchain_versions(meta),
    ]
    incomplete = "" if meta.get("finished") else " (incomplete: interrupted or still running)"
    commit = str(meta.get("harness_commit"))
    header: dict[str, Any] = {
        "run": f"run {meta.get('run_id')}{incomplete} · {meta.get('started')} · harness {commit[:12]}",
        "platform": " · ".join(platform),
        "conformance": None,
        "images": None,
    }
    if conformance:
        counts = conformance["counts"]
        by_revision = counts.get("by_revision") or {}
        passed = [
            f"{c['passed']}/{c['scenarios']} server scenarios passed at {revision}"
            for revision, c in by_revision.items()
        ]
        header["conformance"] = {
            "suite": f"{conformance['conformance']['package']}@{conformance['conformance']['version']}",
            "passed": ", ".join(passed) or f"{counts['passed']}/{counts['scenarios']} server scenarios passed",
            "date": conformance.get("date"),
        }
    if meta.get("backend") == "docker":
        header["images"] = " · ".join(
            f"{info.get('image') or name + ' (none)'} = {(info.get('image_id') or '')[:19]}"
            for name, info in (meta.get("adapters") or {}).items()
        )
    return header


def plain_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as dicts of plain Python values; a missing value (NaN, NA) is ``None``."""
    records: list[dict[str, Any]] = frame.astype(object).where(frame.notna(), None).to_dict("records")
    return records


def other_revision(cell: Mapping[str, Any]) -> str | None:
    """The revision the client spoke (journal) when it is not the one the cell asked for, else None."""
    spoken = cell.get("wire_protocol")
    if not isinstance(spoken, str) or spoken == cell.get("protocol"):
        return None
    return spoken


def no_model_view(cell: dict[str, Any]) -> str | None:
    """Why no tool output reached the model in a framework cell, or ``None`` when some did."""
    return None if cell["model_channel"] else NO_MODEL_VIEW[cell["outcome"]]


def boundary_cell(result: dict[str, Any] | None) -> dict[str, str]:
    """The largest-frame table's cell for one payload kind: its lines and its tooltip (the rejection)."""
    if result is None:
        return {"text": "—", "note": "", "probes": "", "title": ""}
    text, note = boundary.wording(result)
    return {
        "text": text,
        "note": note,
        "probes": counted(result["probes"], "probe"),
        "title": result.get("rejection") or "",
    }


MODEL_SHOWN = 2000
"""Characters of a tool result's content shown per scripted-model turn on a host cell's page."""


def model_journal(path: Path) -> list[dict[str, Any]]:
    """An agent host cell's scripted-model journal, for its evidence page: every connection (its
    peer) and request, each model turn with the tools offered, the model's move and the tool results
    the request carried (content cut to ``MODEL_SHOWN`` characters); not the request bodies, which
    stay in the cell's ``model.jsonl``. Empty for any other cell."""
    if not path.exists():
        return []
    shown = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            shown.append({"t": "", "event": "unparsed", "detail": line[:MODEL_SHOWN]})
            continue
        detail: Any = {k: entry.get(k) for k in ("peer", "url", "method", "path") if entry.get(k) is not None}
        if entry.get("event") == "turn":
            detail = {
                "turn": entry.get("number"),
                "dialect": entry.get("dialect"),
                "path": entry.get("path"),
                "offered": entry.get("offered"),
                "model": entry.get("action"),
                "results": [
                    {**{k: r.get(k) for k in ("call_id", "tool", "is_error")}, "content": _cut(r.get("content"))}
                    for r in entry.get("results") or []
                ],
            }
        shown.append({"t": entry.get("t", ""), "event": entry.get("event", ""), "detail": detail})
    return shown


def _cut(value: Any) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MODEL_SHOWN else f"{text[:MODEL_SHOWN]}… ({len(text):,} characters)"


def provenance(frame: pd.DataFrame) -> str:
    """How many of a run's cells ran in it and how many it reused from which earlier runs:
    "8,836 cells: 120 ran, 8,716 reused from RUN" (:mod:`harness.run.reuse`)."""
    total = len(frame)
    sources = frame["reused_from"].dropna().value_counts() if "reused_from" in frame else pd.Series(dtype=int)
    reused = int(sources.sum())
    line = f"{total:,} cells: {total - reused:,} ran"
    if reused:
        named = ", ".join(f"{run} ({int(count):,})" for run, count in sources.items())
        if len(sources) == 1:
            named = str(sources.index[0])
        line += f", {reused:,} reused from {named}"
    return line
