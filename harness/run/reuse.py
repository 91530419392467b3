"""Reuse: a cell whose inputs match a cell of an earlier finished run takes that run's record and
evidence instead of running again.

A cell's inputs are :mod:`harness.run.inputs`' digest. The sources are the finished runs in
``results/`` (``meta.json`` says ``finished``), newest first, each with an index of its cells'
inputs (:data:`INDEX_FILE`, written when the run finished). A source's cell is taken when its
digest is the cell's, it ran without a harness error, and its evidence is whole: the cell
directory with its cell file, and its observation where the record has one, parsing. The record
is copied, marked ``reused_from`` (the run it actually ran in: a cell reused twice still names
it) with the time it ran; its files are hard-linked into the new run's cell directory (copied
where a link cannot be made), so every run's directory holds all of its own evidence.

What is passed over is said, never guessed around: a run that is unfinished, or whose metadata,
index or ``cells.jsonl`` does not parse, is not a source at all; a cell whose evidence is missing
or damaged runs again. Each is named, with why, in the run's metadata (``reuse``) and on stderr.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from harness.layout import CellFiles
from harness.matrix.cells import Cell
from harness.records import CellInputs, CellRecord, ReuseMeta

from .inputs import changed
from .store import LATEST, RunStore, link_tree

INDEX_FILE = "inputs.json"
"""A finished run's index: each cell's inputs by its key, the cells that can be reused from it
(``cells``) apart from those the harness failed for (``failed``), which are no measurement, and
each cell's wall time (``wall_ms``: what ``--shard`` splits by, :mod:`harness.run.shards`)."""
KEY_PREFIX = '{"key": "'
"""How every line of ``cells.jsonl`` starts (the store writes the key first), so a source's lines
are parsed only for the cells taken from it."""


class Damaged(Exception):
    """A source run cannot be read whole; the message says which file and how."""


def write_index(run: RunStore) -> None:
    """Write the run's index of its cells' inputs (atomically), from its records."""
    index: dict[str, dict[str, Any]] = {"cells": {}, "failed": {}, "wall_ms": {}}
    for record in run.records():
        if record.get("inputs"):
            index["failed" if record["harness_error"] else "cells"][record["key"]] = record["inputs"]
        if record["process"] is not None:
            index["wall_ms"][record["key"]] = record["process"]["wall_ms"]
    path = run.directory / INDEX_FILE
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(index, separators=(",", ":")), encoding="utf-8")
    os.replace(temporary, path)


@dataclass(frozen=True)
class Index:
    """A source run and its index."""

    run: RunStore
    cells: dict[str, CellInputs]
    failed: dict[str, CellInputs]
    wall_ms: dict[str, float]


@dataclass(frozen=True)
class Source:
    """An earlier run, its ``meta.json`` read once (None: it does not parse)."""

    run: RunStore
    meta: dict[str, Any] | None

    @property
    def finished(self) -> bool:
        return bool(self.meta and self.meta.get("finished"))


def source(directory: Path) -> Source:
    """The run in ``directory`` as a source, its metadata read."""
    run = RunStore(directory)
    try:
        meta = json.loads(run.meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = None
    return Source(run, meta if isinstance(meta, dict) else None)


def read_index(earlier: Source) -> Index:
    """A source's index; :class:`Damaged` when the run is unfinished or a file does not parse."""
    run = earlier.run
    if earlier.meta is None:
        raise Damaged(f"{run.meta_path.name} does not parse")
    if not earlier.finished:
        raise Damaged("unfinished (interrupted or still running)")
    path = run.directory / INDEX_FILE
    if not path.is_file():
        raise Damaged(f"no {INDEX_FILE} (a run from before reuse)")
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
        cells, failed, wall = dict(index["cells"]), dict(index["failed"]), dict(index["wall_ms"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise Damaged(f"{INDEX_FILE} does not parse ({exc})") from exc
    return Index(run, cast(dict[str, CellInputs], cells), cast(dict[str, CellInputs], failed), wall)


def _records(run: RunStore, keys: set[str]) -> dict[str, CellRecord]:
    """The source's records of ``keys``; :class:`Damaged` when a line does not parse (a half-written file)."""
    found: dict[str, CellRecord] = {}
    try:
        with open(run.records_path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                end = line.find('"', len(KEY_PREFIX))
                if not line.startswith(KEY_PREFIX) or end < 0:
                    raise Damaged(f"cells.jsonl line {number} is not a record")
                if line[len(KEY_PREFIX) : end] not in keys:
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise Damaged(f"cells.jsonl line {number} does not parse ({exc})") from exc
                found.setdefault(record["key"], record)
    except (OSError, UnicodeDecodeError) as exc:
        raise Damaged(f"cells.jsonl cannot be read ({exc})") from exc
    return found


def evidence_problem(files: CellFiles, record: CellRecord) -> str | None:
    """Why a source cell's evidence cannot be taken, or None when it is whole."""
    if not files.directory.is_dir():
        return "its cell directory is missing"
    if not files.cell.is_file():
        return f"{files.cell.name} is missing"
    if record.get("observation") is not None:
        try:
            json.loads(files.observation.read_bytes())
        except OSError:
            return f"{files.observation.name} is missing"
        except ValueError as exc:
            return f"{files.observation.name} does not parse ({exc})"
    return None


@dataclass(frozen=True)
class Taken:
    """A cell taken from a source: its record (as the new run stores it) and its evidence's directory."""

    cell: Cell
    record: CellRecord
    evidence: Path


@dataclass
class Plan:
    """Which cells are reused from where, which run, and why each of those runs."""

    taken: list[Taken] = field(default_factory=list)
    to_run: list[Cell] = field(default_factory=list)
    why_run: dict[str, int] = field(default_factory=dict)
    """Why cells run, in words, with how many: new, or the inputs that changed since the newest run
    that had the cell."""
    skipped: ReuseMeta = field(default_factory=lambda: ReuseMeta(skipped_runs={}, skipped_cells={}))


def sources(results: Path, exclude: str) -> list[Source]:
    """The runs in ``results`` other than ``exclude``, newest first (by start time, then id)."""
    if not results.is_dir():
        return []
    found = [
        source(entry)
        for entry in results.iterdir()
        if entry.name not in (exclude, LATEST) and entry.is_dir() and (entry / "meta.json").is_file()
    ]
    return sorted(found, key=lambda s: (str((s.meta or {}).get("started") or ""), s.run.run_id), reverse=True)


def plan(results: Path, run_id: str, cells: list[Cell], inputs: dict[str, CellInputs | None]) -> Plan:
    """Which of ``cells`` (their ``inputs`` by key) can be taken from earlier finished runs of
    ``results`` (not ``run_id``, the run being made), newest source first."""
    found = Plan()
    indexes: list[Index] = []
    for earlier in sources(results, run_id):
        try:
            indexes.append(read_index(earlier))
        except Damaged as exc:
            found.skipped["skipped_runs"][earlier.run.run_id] = str(exc)
    wanted = {cell.key: cell for cell in cells}
    tried: dict[str, set[str]] = {key: set() for key in wanted}  # the sources each cell cannot come from
    while True:
        by_source: dict[str, list[str]] = {}
        for key in wanted:
            now = inputs.get(key)
            for index in indexes:
                before = index.cells.get(key)
                if now and before and index.run.run_id not in tried[key] and before["digest"] == now["digest"]:
                    by_source.setdefault(index.run.run_id, []).append(key)
                    break
        if not by_source:
            break
        for run in [index.run for index in indexes if index.run.run_id in by_source]:
            keys = by_source[run.run_id]
            try:
                records = _records(run, set(keys))
            except Damaged as exc:
                found.skipped["skipped_runs"][run.run_id] = str(exc)
                indexes = [index for index in indexes if index.run.run_id != run.run_id]
                continue
            for key in keys:
                record = records.get(key)
                if record is None:
                    problem: str | None = "its record is missing from cells.jsonl"
                else:
                    problem = evidence_problem(run.cell_files(key), record)
                if record is None or problem is not None:
                    found.skipped["skipped_cells"][f"{run.run_id}/{key}"] = str(problem)
                    tried[key].add(run.run_id)
                    continue
                taken = cast(CellRecord, {**record, "reused_from": record.get("reused_from") or run.run_id})
                found.taken.append(Taken(wanted.pop(key), taken, run.cell_dir(key)))
    for key, cell in wanted.items():
        found.to_run.append(cell)
        reason = _why(key, inputs.get(key), indexes)
        found.why_run[reason] = found.why_run.get(reason, 0) + 1
    return found


def _why(key: str, now: CellInputs | None, indexes: list[Index]) -> str:
    """Why a cell runs, in words: what changed since the newest source that had it."""
    if now is None:
        return "live (never reused)"
    for index in indexes:
        if key in index.failed:
            return f"a harness error in {index.run.run_id}"
        before = index.cells.get(key)
        if before is not None:
            parts = changed(before, now)
            if not parts:
                return f"evidence damaged in {index.run.run_id}"
            return f"changed since {index.run.run_id}: {', '.join(parts)}"
    return "new (no earlier run has it)"


def take(taken: Taken, run: RunStore) -> CellRecord:
    """Link the taken cell's evidence into ``run`` and return its record, to append."""
    link_tree(taken.evidence, run.cell_dir(taken.cell.key))
    return taken.record


def described(counts: dict[str, int]) -> str:
    """``{run: n}`` as "RUN (n), OTHER (m)", the most first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{run} ({count:,})" for run, count in ordered)
